import Dispatch
import EventStore
import HLS
import Logging
import Metrics
import Schedule
import Synchronization

/// The one path every command takes, from the CLI or from HTTP: load the channel, decide at the time the command
/// arrived, append with the version it was decided against. A lost race is decided again on the new state, so
/// the loser gets the schedule's own answer ("already limited"), never a silent double.
public struct CommandHandler: Sendable {
    public let store: any EventStore
    /// Where refused commands are recorded for the audit trail (nil: not recorded).
    public let refusals: (any RefusalStore)?
    let clock: @Sendable () -> Timestamp
    let logger: Logger
    /// A known state of a channel to start from (the follower's), so a command reads only newer events.
    let knownState: @Sendable (ChannelID) -> ChannelState?
    /// Reads breaks' asset playlists before a placement is decided (nil: media is not read).
    public let assets: AssetPlaylists?
    /// Runs on each outcome before the channel's next command is decided (the server folds it into its follower,
    /// so that command decides on it instead of losing a version race against it).
    let applied: @Sendable (CommandOutcome) async -> Void
    /// A channel's commands are decided one after another on this instance (their assets measured before, side by
    /// side): 60 placements sent at once to one channel each decided on the state the previous one left, instead of
    /// all on one state and 59 of them losing the version race (up to 20 times each, then a 409 naming a version the
    /// client never sent). Other instances' commands still meet the version check.
    private let turns = ChannelTurns()

    public init(
        store: any EventStore, refusals: (any RefusalStore)? = nil, clock: @escaping @Sendable () -> Timestamp,
        logger: Logger = Logger(label: "cueline.commands"),
        knownState: @escaping @Sendable (ChannelID) -> ChannelState? = { _ in nil }, assets: AssetPlaylists? = nil,
        applied: @escaping @Sendable (CommandOutcome) async -> Void = { _ in }
    ) {
        self.store = store
        self.refusals = refusals
        self.clock = clock
        self.logger = logger
        self.knownState = knownState
        self.assets = assets
        self.applied = applied
    }

    /// Reads what a placement's assets really hold (once, before deciding; the request's text stays what was asked).
    private func measuring(_ command: ScheduleCommand, channel: ChannelID) async -> (ScheduleCommand, [String]) {
        guard let assets else { return (command, []) }
        switch command {
        case .placeBreak(var place) where place.measured == nil:
            let uris: [String]
            switch place.asset {
            case .uri(let uri): uris = [uri]
            case .pod(let pod): uris = pod.map(\.uri)
            case .list(let url): return (command, await Self.listWarnings(url, place: place, assets: assets))
            }
            guard uris.count <= Limits.maximumPodAssets else { return (command, []) }
            var (measured, warnings) = await measure(uris, channel: channel, assets: assets)
            if place.wholeAssets {
                warnings.append(
                    "its assets are served whole, as asked: hls.js 1.6 does not honour a playout limit set once the "
                        + "break has begun, so an early return reaches its viewers only at the end of the asset")
            }
            place.measured = measured
            return (.placeBreak(place), warnings)
        case .ingestSCTE35(var ingest) where ingest.measured == nil:
            // A section that places a break measures its asset as a placement does (an end or an ignored section sent
            // with one costs the reads, within their 3 s).
            guard case .uri(let uri)? = ingest.asset else { return (command, []) }
            let (measured, warnings) = await measure([uri], channel: channel, assets: assets)
            ingest.measured = measured
            return (.ingestSCTE35(ingest), warnings)
        case .setAdSettings(var change):
            // A new slate's length, read once, so that it fills a break by repeating.
            guard case .some(.some(var slate)) = change.slate, slate.durationMilliseconds == nil else {
                return (command, [])
            }
            let (measured, warnings) = await measure([slate.uri], channel: channel, assets: assets)
            slate.durationMilliseconds = measured.first??.durationMilliseconds
            change.slate = .some(slate)
            return (.setAdSettings(change), warnings)
        case .createChannel(var config):
            guard var ads = config.ads, var slate = ads.slate, slate.durationMilliseconds == nil else {
                return (command, [])
            }
            let (measured, warnings) = await measure([slate.uri], channel: channel, assets: assets)
            slate.durationMilliseconds = measured.first??.durationMilliseconds
            ads.slate = slate
            config.ads = ads
            return (.createChannel(config), warnings)
        default:
            return (command, [])
        }
    }

    /// Each asset's media read (each distinct URL once, all at once, each within its 3 s), with a warning for each
    /// kind of failure.
    private func measure(_ uris: [String], channel: ChannelID, assets: AssetPlaylists) async -> (
        [MeasuredAsset?], [String]
    ) {
        // All assets at once (each within its 3 s), each distinct URL once.
        let results = await withTaskGroup(of: (String, Result<MeasuredAsset, AssetPlaylists.Failure>).self) { group in
            for uri in Set(uris) {
                // Not a `do throws(Failure)` in the child task: Swift 6.3's release build returned a corrupt tuple from
                // that form here (the server crashed on the first asset that could be read; the debug build did not).
                group.addTask { (uri, await assets.measureResult(uri)) }
            }
            var results: [String: Result<MeasuredAsset, AssetPlaylists.Failure>] = [:]
            for await (uri, result) in group { results[uri] = result }
            return results
        }
        var measured: [MeasuredAsset?] = []
        var warnings: [String] = []
        for uri in uris {
            switch results[uri] {
            case .success(let media)?:
                measured.append(media)
            case .failure(let error)?:
                measured.append(nil)
                if !warnings.contains(where: { $0.hasPrefix(error.description) }) {
                    warnings.append("\(error.description); its duration was not checked and it is served whole")
                }
                logger.warning(
                    "could not read an asset",
                    metadata: ["channel": "\(channel)", "asset": "\(uri)", "error": "\(error)"])
            case nil:
                measured.append(nil)
            }
        }
        return (measured, warnings)
    }

    /// An external asset list is the player's to read, not served by Cueline: it is read once here so that a list
    /// whose assets do not fill the break (or overrun it) is said, not placed silently.
    private static func listWarnings(_ url: String, place: PlaceBreak, assets: AssetPlaylists) async -> [String] {
        let planned = place.plannedDurationMilliseconds
        switch await assets.listDuration(url) {
        case .success(let total?) where abs(total - planned) > 500:
            let (listed, breakLength) = (DecimalNumber(milliseconds: total), DecimalNumber(milliseconds: planned))
            return [
                "the asset list \(url) holds \(listed) s of assets for a \(breakLength) s break: viewers "
                    + (total < planned
                        ? "return to the live stream after \(listed) s" : "see its assets cut at \(breakLength) s")
            ]
        case .success(.some):
            return []
        case .success(nil):
            return [
                "the asset list \(url) gives no DURATION for every asset; its length was not checked against the break's"
            ]
        case .failure(let failure):
            return ["\(failure.description); the asset list's length was not checked against the break's"]
        }
    }

    /// - Parameter expectedVersion: when given (HTTP `If-Match`), a changed channel is a conflict, not re-decided.
    public func handle(
        _ command: ScheduleCommand, channel: ChannelID, context: CommandContext, expectedVersion: Int64? = nil
    ) async throws(CommandError) -> CommandOutcome {
        let request = EventCodec.canonicalRequest(command)
        let (command, warnings) = await measuring(command, channel: channel)
        let observer = CommandObserver(refusals: refusals, logger: logger)
        guard await turns.take(channel, within: .seconds(10)) else {
            observer.notDecided(command, channel: channel)
            throw .store(.unavailable("channel \(channel)'s previous command has been writing to the log for 10 s"))
        }
        defer { turns.pass(channel) }
        let outcome = try await Transact(store: store, clock: clock, knownState: knownState).run(
            Transact.Command(
                command: command, request: request, channel: channel, context: context,
                expectedVersion: expectedVersion, warnings: warnings),
            observer: observer)
        await applied(outcome)
        return outcome
    }
}
