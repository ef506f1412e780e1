import Foundation
import HLS
import Metrics
import Schedule
import Synchronization

/// Fires tracking URLs from the server (channels whose beacons are `server`): each a GET within 3 s, at most 256 in
/// flight (more are dropped and counted: a report is not worth unbounded memory), `[TIMESTAMP]` and
/// `[CACHEBUSTING]` filled as VAST 4.1 §6 defines them.
public final class BeaconSender: Sendable {
    let inFlight = Mutex(0)
    let limit: Int
    let get: @Sendable (String) async -> Bool

    public init(limit: Int = 256, get: (@Sendable (String) async -> Bool)? = nil) {
        self.limit = limit
        self.get =
            get ?? { url in
                guard let answer = try? await UpstreamGet.beacons.get(url, limit: 64 << 10, deadline: .seconds(3))
                else {
                    return false
                }
                return (200..<400).contains(answer.status)
            }
    }

    /// Viewers already counted, by channel, break and `_HLS_primary_id` (forgotten all at once past 100,000).
    private let counted = Mutex<Set<String>>([])

    /// Whether this is the first time this viewer's list for this break is served (and notes it).
    func firstTime(channel: String, breakID: String, viewer: String) -> Bool {
        let key = channel + "\u{0}" + breakID + "\u{0}" + String(viewer.prefix(256))
        return counted.withLock {
            if $0.count >= 100_000 { $0.removeAll() }
            return $0.insert(key).inserted
        }
    }

    func fire(_ urls: [String], channel: String) {
        for url in urls {
            let admitted = inFlight.withLock { count -> Bool in
                guard count < limit else { return false }
                count += 1
                return true
            }
            guard admitted else {
                Counter(label: "cueline_ad_beacons_total", dimensions: [("channel", channel), ("outcome", "dropped")])
                    .increment()
                continue
            }
            let filled = Self.filled(url, now: Date(), cachebuster: UInt32.random(in: 10_000_000...99_999_999))
            Task {
                let ok = await self.get(filled)
                self.inFlight.withLock { $0 -= 1 }
                Counter(
                    label: "cueline_ad_beacons_total",
                    dimensions: [("channel", channel), ("outcome", ok ? "sent" : "failed")]
                ).increment()
            }
        }
    }

    /// `[TIMESTAMP]` (ISO 8601, percent-encoded) and `[CACHEBUSTING]` (8 random digits) filled in.
    static func filled(_ url: String, now: Date, cachebuster: UInt32) -> String {
        let timestamp = AdServerTemplate.percentEncoded(
            Timestamp(milliseconds: Int64((now.timeIntervalSince1970 * 1000).rounded(.down))).iso8601)
        return url.replacingOccurrences(of: "[TIMESTAMP]", with: timestamp)
            .replacingOccurrences(of: "[CACHEBUSTING]", with: "\(cachebuster)")
    }
}
