import Foundation
import HLS
import Logging
import Schedule
import ServiceLifecycle
import Synchronization

/// Follows the upstream playlists of relay channels (HTTP or file) and hands them to the follower.
///
/// One task per channel rendition. An upstream without blocking reload is read every `interval`. An LL-HLS upstream
/// (parts and `CAN-BLOCK-RELOAD=YES`, over HTTP) is asked for its next part with `_HLS_msn`/`_HLS_part`, as a player
/// does: each answer comes when the part exists, so a relayed part is served a round trip after the packager made it.
public final class RelayPoller: Service, Sendable {
    let follower: ChannelFollower
    let interval: Duration
    let logger: Logger
    /// The upstreams a task follows now.
    private let running = Mutex<Set<Upstream>>([])

    public init(
        follower: ChannelFollower, interval: Duration = .milliseconds(500),
        logger: Logger = Logger(label: "cueline.relay")
    ) {
        self.follower = follower
        self.interval = interval
        self.logger = logger
    }

    /// One followed upstream: a channel's rendition and the URL its source gives it.
    struct Upstream: Hashable, Sendable {
        var channel: ChannelID
        var rendition: Identifier
        var url: String
    }

    /// The upstreams the channels name now.
    func upstreams() -> Set<Upstream> {
        var all: Set<Upstream> = []
        for state in follower.channels() {
            guard let config = state.config, case .relay(let template) = config.source else { continue }
            for rendition in config.renditions {
                all.insert(
                    Upstream(
                        channel: config.id, rendition: rendition.name,
                        url: RelayDecorator.upstreamURL(template: template, rendition: rendition.name)))
            }
        }
        return all
    }

    /// Whether its channel still names this upstream.
    func isNamed(_ upstream: Upstream) -> Bool {
        guard let config = follower.state(of: upstream.channel)?.config, case .relay(let template) = config.source,
            config.renditions.contains(where: { $0.name == upstream.rendition })
        else { return false }
        return RelayDecorator.upstreamURL(template: template, rendition: upstream.rendition) == upstream.url
    }

    public func run() async throws {
        await withDiscardingTaskGroup { group in
            while !Task.isCancelled && !Task.isShuttingDownGracefully {
                for upstream in upstreams() where self.running.withLock({ $0.insert(upstream).inserted }) {
                    group.addTask {
                        await self.follow(upstream)
                        self.running.withLock { _ = $0.remove(upstream) }
                    }
                }
                try? await Task.sleep(for: interval)
            }
            group.cancelAll()
        }
    }

    /// Reads one upstream until its channel no longer names it (a rendition removed, the source changed) or shutdown.
    func follow(_ upstream: Upstream) async {
        let metadata: Logger.Metadata = [
            "channel": "\(upstream.channel)", "rendition": "\(upstream.rendition)", "upstream": "\(upstream.url)",
        ]
        var failing = false
        var next: (msn: Int64, part: Int64)?
        var timeoutSeconds = 5.0
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            // Checked every round: a blocking read ends within 3 target durations, so a removed upstream stops soon.
            guard isNamed(upstream) else { return }
            let url = next.map { Self.blockingURL(upstream.url, msn: $0.msn, part: $0.part) } ?? upstream.url
            let asking = ContinuousClock.now
            do {
                let playlist = try Self.upstreamPlaylist(try await Self.fetch(url, timeoutSeconds: timeoutSeconds))
                follower.updateUpstream(
                    upstream.channel, rendition: upstream.rendition, playlist: playlist, from: upstream.url)
                if failing {
                    failing = false
                    logger.notice("upstream playlist is back", metadata: metadata)
                }
                let position = upstream.url.hasPrefix("http") ? RelayDecorator.partsPosition(playlist) : nil
                let asked = next
                next = position.map { ($0.lastSegment + 1, $0.partial) }
                timeoutSeconds = Double(3 * playlist.targetDuration + 2)
                if let asked, let next, (next.msn, next.part) <= (asked.msn, asked.part) {
                    // Answered before the part asked for (an upstream that does not hold): wait half a part, then ask again.
                    try? await Task.sleep(
                        for: min(interval, .milliseconds(max(50, position!.partTargetMilliseconds / 2))))
                } else if position == nil {
                    try? await Task.sleep(for: interval)
                } else {
                    // Never more often than a quarter part (at least 20 ms): an upstream that answers every request at
                    // once with a new position cannot drive a tight loop.
                    let gap =
                        Duration.milliseconds(max(20, position!.partTargetMilliseconds / 4))
                        - (ContinuousClock.now - asking)
                    if gap > .zero { try? await Task.sleep(for: gap) }
                }
            } catch {
                if !failing {
                    failing = true
                    var details = metadata
                    details["error"] = "\(error)"
                    logger.error("cannot read the upstream playlist; serving the last one", metadata: details)
                }
                next = nil
                timeoutSeconds = 5
                try? await Task.sleep(for: interval)
            }
        }
    }

    /// An upstream playlist's text, taken only if it can be relayed: it parses, holds no control character (a CR in a
    /// URI would parse, then fail every render of the channel, all renditions) and its numbers are in bounds
    /// (`RelayDecorator.check`). Else the last good one stays served.
    static func upstreamPlaylist(_ text: String) throws -> MediaPlaylist {
        if let finding = Lint.controlCharacters(text).first {
            throw FetchError(
                description: "line \(finding.line.map(String.init) ?? "?"): \(finding.message); not relayed")
        }
        let playlist = try PlaylistParser.parseMedia(text).playlist
        try RelayDecorator.check(playlist)
        return playlist
    }

    /// The upstream URL with the delivery directives of a blocking reload for part `part` of segment `msn`.
    static func blockingURL(_ url: String, msn: Int64, part: Int64) -> String {
        url + (url.contains("?") ? "&" : "?") + "_HLS_msn=\(msn)&_HLS_part=\(part)"
    }

    public struct FetchError: Error, CustomStringConvertible {
        public var description: String
    }

    /// Reads a playlist from an http(s) URL or a file path: over http(s), 16 MiB at most and the whole answer within
    /// `timeoutSeconds` + 1 (the request's time-out is only an idle time-out: a byte now and then keeps it alive); an
    /// endless or dripping upstream is cut off, not buffered (`UpstreamGet`), and the last good playlist is served.
    public static func fetch(_ source: String, timeoutSeconds: Double = 5) async throws -> String {
        if source.hasPrefix("http://") || source.hasPrefix("https://") {
            let answer: UpstreamGet.Answer
            do {
                answer = try await UpstreamGet.relays.get(
                    source, limit: 16 << 20, deadline: .milliseconds(Int64(timeoutSeconds * 1000) + 1000))
            } catch UpstreamGet.Failure.tooLarge {
                throw FetchError(description: "GET \(source) answered over 16 MiB")
            } catch UpstreamGet.Failure.deadline {
                throw FetchError(description: "GET \(source) did not answer within \(Int(timeoutSeconds + 1)) s")
            } catch UpstreamGet.Failure.notHTTP {
                throw FetchError(description: "\(source) is not a valid URL")
            } catch let failure as UpstreamGet.Failure {
                throw FetchError(description: "GET \(source) failed: \(failure)")
            }
            if answer.status != 200 { throw FetchError(description: "GET \(source) answered \(answer.status)") }
            return answer.text
        }
        guard let data = FileManager.default.contents(atPath: source) else {
            throw FetchError(description: "cannot read \(source)")
        }
        return String(decoding: data, as: UTF8.self)
    }
}
