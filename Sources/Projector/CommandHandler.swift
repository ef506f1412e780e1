import Dispatch
import EventStore
import HLS
import Logging
import Metrics
import Schedule
import Synchronization

/// Who sends a command, and the id that makes a retry safe.
public struct CommandContext: Sendable, Hashable {
    public var commandID: String
    public var actor: String
    public var source: String
    public var reason: String?

    public init(commandID: String, actor: String, source: String, reason: String? = nil) {
        self.commandID = commandID
        self.actor = actor
        self.source = source
        self.reason = reason
    }
}

/// What a command did.
public struct CommandOutcome: Sendable {
    public var result: AppendResult
    public var events: [ScheduleEvent]
    /// What the operator should know although the command was applied (an asset that could not be read…).
    public var warnings: [String] = []
    /// The events as this attempt encoded them for its append; empty when the answer is the log's (a retry).
    public var encoded: [NewEvent] = []

    /// How the command was applied, when the events alone do not say it (`ScheduleCommand.note`), and any warnings.
    public func note(for command: ScheduleCommand) -> String? {
        let applied = result.events.first.flatMap { command.note(for: events, decidedAt: $0.decidedAt) }
        let parts = (applied.map { [$0] } ?? []) + warnings.map { "warning: \($0)" }
        return parts.isEmpty ? nil : parts.joined(separator: "; ")
    }
}

/// Why a command failed: refused by the schedule, or the store could not take it.
public enum CommandError: Error, Sendable, CustomStringConvertible {
    case refused(ScheduleError)
    case store(StoreError)

    public var description: String {
        switch self {
        case .refused(let error): return error.description
        case .store(let error): return error.description
        }
    }
}

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
        guard let assets, case .placeBreak(var place) = command, place.measured == nil else { return (command, []) }
        let uris: [String]
        switch place.asset {
        case .uri(let uri): uris = [uri]
        case .pod(let pod): uris = pod.map(\.uri)
        case .list(let url): return (command, await Self.listWarnings(url, place: place, assets: assets))
        }
        guard uris.count <= Limits.maximumPodAssets else { return (command, []) }
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
        if place.wholeAssets {
            warnings.append(
                "its assets are served whole, as asked: hls.js 1.6 does not honour a playout limit set once the break "
                    + "has begun, so an early return reaches its viewers only at the end of the asset")
        }
        place.measured = measured
        return (.placeBreak(place), warnings)
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
        guard await turns.take(channel, within: .seconds(10)) else {
            logger.warning(
                "the channel's previous command has been writing for 10 s; not decided",
                metadata: ["channel": "\(channel)", "command": "\(command.name)"])
            Counter(label: "cueline_commands_total", dimensions: [("command", command.name), ("outcome", "error")])
                .increment()
            throw .store(.unavailable("channel \(channel)'s previous command has been writing to the log for 10 s"))
        }
        defer { turns.pass(channel) }
        let outcome = try await deciding(
            command, request: request, warnings: warnings, channel: channel, context: context,
            expectedVersion: expectedVersion)
        await applied(outcome)
        return outcome
    }

    private func deciding(
        _ command: ScheduleCommand, request: String, warnings: [String], channel: ChannelID, context: CommandContext,
        expectedVersion: Int64?
    ) async throws(CommandError) -> CommandOutcome {
        var attempts = 0
        // After a late decision: the database clock it reported, and a longer effect delay for the next try.
        var notBefore = Timestamp(milliseconds: .min)
        var effectDelay = EffectiveTime.effectDelayMilliseconds
        while true {
            attempts += 1
            do {
                // A retry is recognised by the append itself (one round trip); only when the command would now be
                // refused or conflict is the idempotency record read first, so a retry of an applied command gets
                // its original answer, not "already placed" or a version conflict.
                let probe = AppendRequest(
                    channel: channel, expectedVersion: .any, events: [],
                    command: CommandMetadata(
                        commandID: context.commandID, request: request, actor: context.actor, source: context.source,
                        decidedAt: Timestamp(milliseconds: 0)))
                func replayed() async throws -> CommandOutcome? {
                    guard let previous = try await store.previousResult(of: probe) else { return nil }
                    Counter(
                        label: "cueline_commands_total",
                        dimensions: [("command", command.name), ("outcome", "replayed")]
                    ).increment()
                    let events = try previous.events.map {
                        try EventCodec.decode(type: $0.type, schemaVersion: $0.schemaVersion, payload: $0.payload)
                    }
                    return CommandOutcome(result: previous, events: events)
                }
                // The first try decides on this instance's state without reading the stream (the append's version
                // check refuses it if the log has moved on: then the stream is read and the command decided again).
                // Only an answer the append confirms, or one decided on the stream as read, is final: a refusal or
                // an If-Match mismatch on the unread state is decided again on the stream first.
                let unverified = attempts == 1 ? knownState(channel) : nil
                let state: ChannelState
                if let unverified {
                    state = unverified
                } else {
                    state = try await ChannelLoader.load(channel, from: store, startingFrom: knownState(channel))
                }
                if unverified != nil, let expectedVersion, expectedVersion != state.version { continue }
                if let expectedVersion, expectedVersion != state.version {
                    if let outcome = try await replayed() { return outcome }
                    throw StoreError.versionConflict(
                        channel: channel, expected: .exactly(expectedVersion), actual: state.version)
                }
                let now = max(clock(), notBefore).adding(milliseconds: effectDelay)
                let events: [ScheduleEvent]
                do {
                    events = try decide(command, state: state, now: now)
                } catch {
                    if unverified != nil { continue }
                    if let outcome = try await replayed() { return outcome }
                    logger.info(
                        "command refused",
                        metadata: ["channel": "\(channel)", "command": "\(command.name)", "reason": "\(error)"])
                    // The audit trail keeps who tried what and why it was refused; failing to record it must not
                    // change the answer to the operator.
                    do {
                        try await refusals?.recordRefusal(
                            Refusal(
                                channel: channel, commandID: context.commandID, command: command.name, request: request,
                                actor: context.actor, source: context.source, reason: error.description, decidedAt: now)
                        )
                    } catch {
                        logger.warning(
                            "could not record a refused command",
                            metadata: ["channel": "\(channel)", "error": "\(error)"])
                    }
                    Counter(
                        label: "cueline_commands_total",
                        dimensions: [("command", command.name), ("outcome", "refused")]
                    ).increment()
                    throw CommandError.refused(error)
                }
                let append = AppendRequest(
                    channel: channel, expectedVersion: state.version == 0 ? .noStream : .exactly(state.version),
                    events: events.map { event in
                        let encoded = EventCodec.encode(event)
                        return NewEvent(
                            type: encoded.type, schemaVersion: encoded.schemaVersion, payload: encoded.payload)
                    },
                    command: CommandMetadata(
                        commandID: context.commandID, request: request, actor: context.actor, source: context.source,
                        reason: context.reason, decidedAt: now))
                let result = try await store.append(append)
                Counter(
                    label: "cueline_commands_total",
                    dimensions: [("command", command.name), ("outcome", result.replayed ? "replayed" : "applied")]
                ).increment()
                logger.info(
                    "command applied",
                    metadata: ["channel": "\(channel)", "command": "\(command.name)", "version": "\(result.version)"])
                if result.replayed {
                    // A retry: the log's events are the first attempt's decision, not this one's (a relative start or
                    // a playout limit decided now would differ).
                    let original = try result.events.map {
                        try EventCodec.decode(type: $0.type, schemaVersion: $0.schemaVersion, payload: $0.payload)
                    }
                    return CommandOutcome(result: result, events: original, warnings: warnings)
                }
                return CommandOutcome(result: result, events: events, warnings: warnings, encoded: append.events)
            } catch let error as CommandError {
                throw error
            } catch let StoreError.versionConflict(c, e, a) where expectedVersion == nil && attempts < 20 {
                logger.debug(
                    "lost a race, deciding again", metadata: ["channel": "\(c)", "expected": "\(e)", "actual": "\(a)"])
                continue
            } catch let StoreError.lateDecision(decidedAt, databaseClock) where attempts < 8 {
                // The commit would have come after the instant the events take effect, so a follower could already
                // have served that instant without them. Nothing was written: decide again, later, with more room.
                Counter(label: "cueline_late_decisions_total").increment()
                logger.notice(
                    "decision time passed before the append; deciding again",
                    metadata: [
                        "channel": "\(channel)", "decided_at": "\(decidedAt)", "database_clock": "\(databaseClock)",
                        "attempt": "\(attempts)",
                    ])
                notBefore = databaseClock
                effectDelay = min(effectDelay * 2, 5_000)
                continue
            } catch let error as StoreError {
                let outcome: String
                switch error {
                case .versionConflict, .commandIDReused: outcome = "conflict"
                case .invalidValue: outcome = "invalid"
                case .unavailable, .database, .schemaOutdated, .lateDecision, .unknownOutcome, .logHeadBusy,
                    .streamLocked:
                    outcome = "error"
                    Counter(label: "cueline_database_errors_total").increment()
                }
                Counter(label: "cueline_commands_total", dimensions: [("command", command.name), ("outcome", outcome)])
                    .increment()
                throw .store(error)
            } catch {
                throw .store(.database("\(error)"))
            }
        }
    }
}

/// Reads a channel's events and folds them.
public enum ChannelLoader {
    /// - Parameters:
    ///   - known: a state of this channel to continue from; only later events are read.
    ///   - retention: which breaks the state keeps (`.window`: what the follower serves from; `.all`: audit folds).
    public static func load(
        _ channel: ChannelID, from store: any EventStore, startingFrom known: ChannelState? = nil,
        retention: ChannelState.Retention = .all
    ) async throws -> ChannelState {
        var state = known ?? ChannelState(channel: channel, retention: retention)
        while true {
            let batch = try await store.readStream(channel, after: state.version, limit: 1000)
            for event in batch { fold(event, into: &state) }
            if batch.count < 1000 { return state }
        }
    }

    /// Folds a stored event. One this build cannot read (a newer type, or a payload that does not decode) only moves
    /// the version on, as the follower and replay do: one bad event cannot block a channel, and what is served
    /// stays what replay gives. `cueline verify` reports such events.
    public static func fold(_ event: RecordedEvent, into state: inout ChannelState) {
        if let decoded = try? decode(event) {
            state.apply(decoded)
        } else {
            state.version = event.version
            state.position = max(state.position, event.position)
        }
    }

    /// The events of a batch this build can read, in order, and those it cannot with the reason.
    public static func decodeReadable(_ events: [RecordedEvent]) -> (
        readable: [RecordedScheduleEvent], unreadable: [(RecordedEvent, String)]
    ) {
        var readable: [RecordedScheduleEvent] = []
        var unreadable: [(RecordedEvent, String)] = []
        for event in events {
            do {
                readable.append(try decode(event))
            } catch {
                unreadable.append((event, "\(error)"))
            }
        }
        return (readable, unreadable)
    }

    public static func decode(_ event: RecordedEvent) throws -> RecordedScheduleEvent {
        RecordedScheduleEvent(
            event: try EventCodec.decode(type: event.type, schemaVersion: event.schemaVersion, payload: event.payload),
            version: event.version, position: event.position,
            attribution: Attribution(at: event.decidedAt, actor: event.actor, source: event.source))
    }
}

/// One turn at a time per channel, in the order asked, without a task of its own. A wait for a turn is bounded: a
/// command stuck on the log (a database that does not answer, a row lock held open) answers the ones behind it
/// "unavailable, nothing written" at the limit instead of holding them all in line.
final class ChannelTurns: Sendable {
    private struct Lines {
        /// The channels whose turn is taken, with who waits for it next.
        var waiting: [ChannelID: [(id: UInt64, continuation: CheckedContinuation<Bool, Never>)]] = [:]
        var nextID: UInt64 = 0
    }

    private let lines = Mutex(Lines())

    /// Whether the turn was taken within `limit` (then `pass` must follow).
    func take(_ channel: ChannelID, within limit: Duration) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let id = lines.withLock { lines -> UInt64? in
                guard lines.waiting[channel] != nil else {
                    lines.waiting[channel] = []
                    return nil
                }
                lines.nextID += 1
                lines.waiting[channel]!.append((lines.nextID, continuation))
                return lines.nextID
            }
            guard let id else { return continuation.resume(returning: true) }
            let seconds = Double(limit.components.seconds) + Double(limit.components.attoseconds) / 1e18
            DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { [self] in
                let expired = lines.withLock { lines -> CheckedContinuation<Bool, Never>? in
                    guard let index = lines.waiting[channel]?.firstIndex(where: { $0.id == id }) else { return nil }
                    return lines.waiting[channel]!.remove(at: index).continuation
                }
                expired?.resume(returning: false)
            }
        }
    }

    func pass(_ channel: ChannelID) {
        let next = lines.withLock { lines -> CheckedContinuation<Bool, Never>? in
            guard var queue = lines.waiting[channel], !queue.isEmpty else {
                lines.waiting[channel] = nil
                return nil
            }
            let next = queue.removeFirst()
            lines.waiting[channel] = queue
            return next.continuation
        }
        next?.resume(returning: true)
    }
}
