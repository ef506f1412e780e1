import Ads
import Foundation
import HLS
import Logging
import Metrics
import NIOCore
import Schedule
import Synchronization

/// Asks a break's ad server what a viewer's asset list holds, within the channel's deadline, and falls back when it
/// cannot: the break's own assets, else the channel's slate, else an empty list (players resume the programme).
///
/// Requests to one ad server host for one channel are at most the channel's `concurrency` at once; a request beyond
/// it waits for a slot until its deadline (at most 8 times the concurrency wait; more get the fallback at once), so
/// a thousand viewers joining in the same second cost the ad server what it was told it can take, and every viewer
/// is answered within the deadline.
public final class AdDecisions: Sendable {
    /// What a viewer's asset-list request brings.
    public struct Request: Sendable {
        /// `_HLS_primary_id`.
        public var primaryID: String?
        /// Every query parameter of the request (only allow-listed ones reach the ad server).
        public var parameters: [String: String]

        public init(primaryID: String?, parameters: [String: String]) {
            self.primaryID = primaryID
            self.parameters = parameters
        }
    }

    /// The list answered and how it was decided.
    public struct Answer: Sendable {
        public var body: String
        /// `decided`, or the fallback's reason: `timeout`, `busy`, `error`, `empty`, `no-fit`.
        public var outcome: String
        /// What was dropped, corrected or failed, for the log.
        public var notes: [String]
    }

    /// The largest ad server answer read (a VAST pod of a hundred ads with their tracking is well under it).
    public static let answerLimit = 256 << 10
    /// The bytes of ad server answers all decisions of the process may hold at once (each request reserves
    /// `answerLimit` of it while it runs): 256 requests at once. A request that finds none left fails at once, its
    /// viewer gets the fallback: a thousand slow ad servers cannot make the server hold gigabytes.
    public static let answerBudget = 64 << 20

    let fetchAnswer: @Sendable (String, Duration) async throws(AdResolutionFailure) -> Data
    let assets: AssetPlaylists?
    let limiter = ConcurrencyLimiter()
    let beacons: BeaconSender
    let logger = Logger(label: "cueline.ads")

    /// - Parameters:
    ///   - fetch: GETs an ad server's URL within a time (a seam for tests); by default over `UpstreamGet.adServers`.
    ///   - assets: where the creatives' media lengths are looked up (the asset playlists Cueline already read) and
    ///     read in the background for the next viewer.
    public init(
        assets: AssetPlaylists? = nil,
        fetch: (@Sendable (String, Duration) async throws(AdResolutionFailure) -> Data)? = nil,
        beacons: BeaconSender = BeaconSender()
    ) {
        self.assets = assets
        if let fetch {
            self.fetchAnswer = fetch
        } else {
            self.fetchAnswer = Self.budgeted(ByteBudget(AdDecisions.answerBudget))
        }
        self.beacons = beacons
    }

    private let logTimes = Mutex<[String: (at: ContinuousClock.Instant, suppressed: Int)]>([:])
    /// The hosts counted by name in `cueline_ad_fetches_total` (the first 64; later ones as `other`).
    let fetchHosts = Mutex<Set<String>>([])

    func hostLabel(_ url: String) -> String {
        let host = URL(string: url)?.host ?? "unknown"
        return fetchHosts.withLock { hosts in
            if hosts.contains(host) { return host }
            guard hosts.count < 64 else { return "other" }
            hosts.insert(host)
            return host
        }
    }

    /// `cueline_ad_fetches_total{channel, host, outcome}`: each request to an ad server, wrappers' included.
    static func countFetch(channel: String, host: String, outcome: String) {
        Counter(
            label: "cueline_ad_fetches_total", dimensions: [("channel", channel), ("host", host), ("outcome", outcome)]
        )
        .increment()
    }

    /// How long each channel's ad server takes to answer, smoothed (`key`: channel and host): to know when a slot
    /// that comes late is worth using.
    let typical = Mutex<[String: Double]>([:])

    func typicalMilliseconds(_ key: String) -> Int64? {
        typical.withLock { $0[key].map { Int64($0.rounded()) } }
    }

    func recordTypical(_ key: String, _ took: Duration) {
        let milliseconds = Double(took.nanosecondsClamped) / 1_000_000
        typical.withLock { values in
            if values.count > 4096 { values.removeAll() }
            values[key] = values[key].map { $0 * 0.8 + milliseconds * 0.2 } ?? milliseconds
        }
    }

    /// When each channel's ad server was last asked although its usual answer time said it would be too late: one such
    /// probe a second, so that an ad server that stopped answering in time is asked again once it can.
    let probes = Mutex<[String: ContinuousClock.Instant]>([:])

    /// Whether a late request may go as the probe of `key` now (at most one a second).
    func mayProbe(_ key: String) -> Bool {
        let now = ContinuousClock.now
        return probes.withLock { probes in
            if let last = probes[key], now - last < .seconds(1) { return false }
            if probes.count > 4096 { probes.removeAll() }
            probes[key] = now
            return true
        }
    }

    /// How long before the timeout a decision stops, to answer the viewer by the timeout.
    static func answerMargin(_ settings: AdSettings) -> Int64 { min(50, settings.timeoutMilliseconds / 10) }

    /// Creatives being read in the background, at most `prefetchLimit`.
    let prefetching = Mutex<Set<String>>([])
    static let prefetchLimit = 8

    /// Whether a log line about `key` (a channel and outcome) may be written now: one every 10 s, so that an ad
    /// server down for a thousand viewers is one line, not a thousand. Returns how many were held back since the last.
    public func admitLog(_ key: String) -> Int? {
        let now = ContinuousClock.now
        return logTimes.withLock { times -> Int? in
            if let last = times[key], now - last.at < .seconds(10) {
                times[key]?.suppressed += 1
                return nil
            }
            if times.count > 4096 { times.removeAll() }
            let suppressed = times[key]?.suppressed ?? 0
            times[key] = (now, 0)
            return suppressed
        }
    }

    /// What an ad server is asked to fill for a viewer: a break, or a channel's preroll.
    struct Slot: Sendable {
        /// `{break_id}` and the key of server-fired impressions: the break's id, or the preroll range's.
        var id: String
        var template: AdServerTemplate
        var start: Timestamp
        var durationMilliseconds: Int64
        var skip: SkipControl?
        /// The list when the ad server gives nothing usable.
        var fallback: @Sendable () -> String
    }

    /// The asset list of `item` for one viewer.
    public func assetList(state: ChannelState, item: BreakState, request: Request) async -> Answer {
        let fallback = { @Sendable () -> String in
            PlaylistBuilder.assetList(state: state, breakID: item.id) ?? #"{"ASSETS":[]}"#
        }
        guard let template = item.spec.adServer, !item.isCancelled else {
            return Answer(body: fallback(), outcome: "static", notes: [])
        }
        // Asked only around the break (10 minutes ahead, a minute after its end): a request for a break long over or
        // far ahead is no viewer's, and costs the ad server nothing.
        let now = Timestamp(milliseconds: Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)))
        guard now >= item.start.adding(milliseconds: -600_000), now <= item.end.adding(milliseconds: 60_000) else {
            return Answer(body: fallback(), outcome: "outside", notes: [])
        }
        let slot = Slot(
            id: item.id.rawValue, template: template, start: item.start,
            durationMilliseconds: item.spec.plannedDurationMilliseconds, skip: item.spec.options.skipControl,
            fallback: fallback)
        return await decide(slot, state: state, request: request)
    }

    /// The preroll asset list of a viewer who joins (range `rangeID`, decided by `template`): what the ad server
    /// decides, fitted to the preroll's length; an empty list (no preroll) when it gives nothing usable.
    public func prerollAssetList(
        state: ChannelState, rangeID: String, template: AdServerTemplate, durationMilliseconds: Int64,
        request: Request
    ) async -> Answer {
        let now = Timestamp(milliseconds: Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)))
        let slot = Slot(
            id: rangeID, template: template, start: now, durationMilliseconds: durationMilliseconds, skip: nil,
            fallback: { #"{"ASSETS":[]}"# })
        return await decide(slot, state: state, request: request)
    }

    func decide(_ slot: Slot, state: ChannelState, request: Request) async -> Answer {
        let fallback = { (outcome: String, notes: [String]) -> Answer in
            Answer(body: slot.fallback(), outcome: outcome, notes: notes)
        }
        let settings = state.adSettings ?? .defaults
        let channel = state.channel.rawValue
        let url = slot.template.url(
            AdServerTemplate.Values(
                breakID: slot.id, channel: channel, durationMilliseconds: slot.durationMilliseconds, start: slot.start,
                primaryID: request.primaryID, parameters: request.parameters))
        let host = URL(string: url)?.host ?? "unknown"
        let started = ContinuousClock.now
        // The viewer's answer is due by the timeout: the decision stops a little before it (50 ms, a tenth of a
        // short timeout), the time to write the fallback and send it on a loaded machine.
        let deadline = started + .milliseconds(settings.timeoutMilliseconds - Self.answerMargin(settings))
        let metrics = AdMetrics(channel: channel, adServer: host)
        defer { metrics.seconds.recordNanoseconds((ContinuousClock.now - started).nanosecondsClamped) }

        let key = channel + " " + host
        guard
            await limiter.acquire(
                key, limit: settings.concurrency, waiting: settings.concurrency * 8, until: deadline)
        else {
            metrics.count("busy")
            return fallback(
                "busy",
                [
                    "ad server \(host) has \(settings.concurrency) requests in flight for channel \(channel) (ad_concurrency) and none freed within \(DecimalNumber(milliseconds: settings.timeoutMilliseconds)) s"
                ])
        }
        defer { limiter.release(key) }
        // A slot that came late is not used to ask a question whose answer cannot come in time: an abandoned request
        // still costs the ad server its work (it answers a connection already closed). An ad server whose answers stop
        // coming in time (each timeout counts as the whole timeout) is asked by one probe a second until they do.
        let typical = typicalMilliseconds(key)
        if let typical, ContinuousClock.now + .milliseconds(typical) > deadline, !mayProbe(key) {
            metrics.count("busy")
            return fallback(
                "busy",
                [
                    "ad server \(host) answers in about \(typical) ms, and a slot freed too late for that within \(DecimalNumber(milliseconds: settings.timeoutMilliseconds)) s"
                ])
        }

        let asked = ContinuousClock.now
        let outcome = await resolve(url, until: deadline, channel: channel)
        switch outcome {
        case .resolved: recordTypical(key, ContinuousClock.now - asked)
        case .timedOut:
            // It counts as the whole timeout, and as the last probe: the next one goes a second later.
            recordTypical(key, .milliseconds(settings.timeoutMilliseconds))
            probes.withLock { $0[key] = ContinuousClock.now }
        case .failed: break
        }
        let resolution: AdResolver.Resolution
        switch outcome {
        case .timedOut:
            metrics.count("timeout")
            return fallback(
                "timeout",
                [
                    "ad server \(host) gave no whole answer within \(DecimalNumber(milliseconds: settings.timeoutMilliseconds)) s (ad_timeout)"
                ])
        case .failed(let failure):
            let outcome = ["empty", "busy", "refused"].contains(failure.kind) ? failure.kind : "error"
            metrics.count(outcome)
            return fallback(outcome, [failure.reason])
        case .resolved(let resolved):
            resolution = resolved
        }
        var measured: [String: Int64] = [:]
        if let assets {
            for ad in resolution.ads { measured[ad.uri] = await assets.cachedDuration(ad.uri) }
            // What is not known yet is read in the background for the next viewer: at most `prefetchLimit` reads
            // at once in the whole server, each URL once (an ad server that names new creatives every time cannot
            // make it read without bound), none at a private address unless the ad server is there too.
            let mayGoPrivate = HostPolicy.isPrivate(url: url)
            let unknown = Set(resolution.ads.map(\.uri)).filter {
                measured[$0] == nil && (mayGoPrivate || !HostPolicy.isPrivate(url: $0))
            }
            for uri in unknown.sorted()
            where prefetching.withLock({ $0.count < Self.prefetchLimit && $0.insert(uri).inserted }) {
                Task {
                    await assets.prefetch(uri)
                    _ = self.prefetching.withLock { $0.remove(uri) }
                }
            }
        }
        let (fitted, notes) = AdAssetList.fit(
            resolution.ads, breakMilliseconds: slot.durationMilliseconds, measured: { measured[$0] })
        guard !fitted.isEmpty else {
            metrics.count(resolution.ads.isEmpty ? "empty" : "no-fit")
            return fallback(resolution.ads.isEmpty ? "empty" : "no-fit", resolution.notes + notes)
        }
        metrics.count("decided")
        // Impressions from the server: once per viewer (`_HLS_primary_id`) and break, never for a request without
        // one, and not to private addresses unless the ad server is there too.
        if settings.beacons == .server, let viewer = request.primaryID, !viewer.isEmpty,
            beacons.firstTime(channel: channel, breakID: slot.id, viewer: viewer)
        {
            let mayGoPrivate = HostPolicy.isPrivate(url: url)
            for item in fitted {
                beacons.fire(
                    item.ad.impressions.filter { mayGoPrivate || !HostPolicy.isPrivate(url: $0) }, channel: channel)
            }
        }
        let body = AdAssetList.json(
            fitted, skip: AdAssetList.skipControl(fitted, breakSkip: slot.skip),
            tracking: settings.beacons == .client)
        return Answer(body: body, outcome: "decided", notes: resolution.notes + notes)
    }

    enum Outcome: Sendable {
        case resolved(AdResolver.Resolution)
        case failed(AdResolutionFailure)
        case timedOut
    }

    /// Resolves `url` (wrappers and all) unless `deadline` comes first; then the requests still open are cancelled
    /// (their connections closed).
    func resolve(_ url: String, until deadline: ContinuousClock.Instant, channel: String = "") async -> Outcome {
        let fetchAnswer = self.fetchAnswer
        // Hops the ad server chose may reach the plant's own network only when the ad server itself is in it.
        let mayGoPrivate = HostPolicy.isPrivate(url: url)
        let resolver = AdResolver { next throws(AdResolutionFailure) in
            if !mayGoPrivate && HostPolicy.isPrivate(url: next) {
                throw AdResolutionFailure(
                    kind: "refused", reason: "\(AdResolver.shown(next)) is a private address: not asked")
            }
            let left = deadline - ContinuousClock.now
            guard left > .zero else { throw AdResolutionFailure(kind: "timeout", reason: "no time left") }
            // Each request counted by the host asked (wrappers' too): which partner in a chain fails or is slow.
            let host = self.hostLabel(next)
            do throws(AdResolutionFailure) {
                let body = try await fetchAnswer(next, left)
                Self.countFetch(channel: channel, host: host, outcome: "ok")
                return body
            } catch {
                Self.countFetch(channel: channel, host: host, outcome: error.kind)
                throw error
            }
        }
        return await withTaskGroup(of: Outcome?.self) { group in
            group.addTask {
                do throws(AdResolutionFailure) {
                    return .resolved(try await resolver.resolve(url))
                } catch {
                    return error.kind == "timeout" ? .timedOut : .failed(error)
                }
            }
            group.addTask {
                try? await Task.sleep(until: deadline, clock: .continuous)
                return nil
            }
            defer { group.cancelAll() }
            let first = await group.next() ?? nil
            return first ?? .timedOut
        }
    }

    /// `get` within `budget`: a request that finds no `answerLimit` left in it is not made.
    static func budgeted(_ budget: ByteBudget) -> @Sendable (String, Duration) async throws(AdResolutionFailure) -> Data
    {
        { url, deadline throws(AdResolutionFailure) in
            guard budget.reserve(answerLimit) else {
                throw AdResolutionFailure(
                    kind: "busy",
                    reason:
                        "\(answerBudget >> 20) MiB of ad server answers are being read already: \(AdResolver.shown(url)) not asked"
                )
            }
            defer { budget.release(answerLimit) }
            return try await get(url, deadline)
        }
    }

    /// GETs an ad server's answer over `UpstreamGet.adServers`: 200 with a body, at most `answerLimit` bytes, at
    /// most 5 redirects (followed here: each hop's host is checked like a wrapper's, `HostPolicy`).
    static func get(_ url: String, _ deadline: Duration) async throws(AdResolutionFailure) -> Data {
        let started = ContinuousClock.now
        var current = url
        for _ in 0...5 {
            let answer = try await getOnce(current, deadline - (ContinuousClock.now - started))
            guard (300..<400).contains(answer.status), let location = answer.location else {
                return try body(of: answer, current)
            }
            guard let next = URL(string: location, relativeTo: URL(string: current))?.absoluteString,
                next.hasPrefix("http://") || next.hasPrefix("https://")
            else {
                throw AdResolutionFailure(
                    kind: "transport",
                    reason: "\(AdResolver.shown(current)) redirected to \(AdResolver.shown(location))")
            }
            if HostPolicy.isPrivate(url: next) && !HostPolicy.isPrivate(url: url) {
                throw AdResolutionFailure(
                    kind: "refused",
                    reason:
                        "\(AdResolver.shown(current)) redirected to \(AdResolver.shown(next)), a private address: not followed"
                )
            }
            current = next
        }
        throw AdResolutionFailure(kind: "transport", reason: "\(AdResolver.shown(url)): more than 5 redirects")
    }

    static func getOnce(_ url: String, _ deadline: Duration) async throws(AdResolutionFailure) -> UpstreamGet.Answer {
        let shown = AdResolver.shown(url)
        guard deadline > .zero else { throw AdResolutionFailure(kind: "timeout", reason: "\(shown): no time left") }
        do {
            return try await UpstreamGet.adServers.get(
                url, limit: answerLimit, deadline: .nanoseconds(deadline.nanosecondsClamped))
        } catch let failure as UpstreamGet.Failure {
            switch failure {
            case .deadline: throw AdResolutionFailure(kind: "timeout", reason: "\(shown): \(failure)")
            case .tooLarge: throw AdResolutionFailure(kind: "too-large", reason: "\(shown): \(failure)")
            default: throw AdResolutionFailure(kind: "transport", reason: "\(shown): \(failure)")
            }
        } catch {
            throw AdResolutionFailure(kind: "timeout", reason: "\(shown): cancelled")
        }
    }

    static func body(of answer: UpstreamGet.Answer, _ url: String) throws(AdResolutionFailure) -> Data {
        let shown = AdResolver.shown(url)
        if answer.status == 204 { throw AdResolutionFailure(kind: "empty", reason: "\(shown) answered 204 (no ad)") }
        guard answer.status == 200 else {
            throw AdResolutionFailure(kind: "status", reason: "\(shown) answered \(answer.status)")
        }
        guard answer.body.readableBytes > 0 else {
            throw AdResolutionFailure(kind: "empty", reason: "\(shown) answered an empty body")
        }
        return Data(answer.body.readableBytesView)
    }
}

/// Bytes reserved and released by concurrent readers, never more than the total at once.
final class ByteBudget: Sendable {
    private let left: Mutex<Int>

    init(_ total: Int) {
        left = Mutex(total)
    }

    func reserve(_ bytes: Int) -> Bool {
        left.withLock {
            guard $0 >= bytes else { return false }
            $0 -= bytes
            return true
        }
    }

    func release(_ bytes: Int) {
        left.withLock { $0 += bytes }
    }
}

/// The ad decision metrics of one channel and ad server host.
struct AdMetrics {
    let channel: String
    let adServer: String
    let seconds: Timer

    init(channel: String, adServer: String) {
        self.channel = channel
        self.adServer = adServer
        seconds = Timer(
            label: "cueline_ad_decision_seconds", dimensions: [("channel", channel), ("ad_server", adServer)])
    }

    /// `cueline_ad_requests_total{channel, ad_server, outcome}`.
    func count(_ outcome: String) {
        Counter(
            label: "cueline_ad_requests_total",
            dimensions: [("channel", channel), ("ad_server", adServer), ("outcome", outcome)]
        ).increment()
    }
}

extension Duration {
    /// Whole nanoseconds, clamped to Int64.
    var nanosecondsClamped: Int64 {
        let (seconds, attoseconds) = components
        guard seconds < Int64.max / 1_000_000_000 else { return .max }
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
