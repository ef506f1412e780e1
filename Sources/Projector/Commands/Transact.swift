import EventStore
import HLS
import Schedule

/// One command's transaction against the log: load the channel, decide at the time the command arrived, append with
/// the version it was decided against, and on a lost race read what was appended meanwhile and decide again (jet and
/// equinox's `Flow.run`). What happens on the way is told to a ``CommandObserver`` (the refusal audit trail, metrics,
/// logs): the loop itself holds only the decision and its retry policy.
struct Transact {
    /// How often a command is decided again.
    struct Policy {
        /// Lost version races, before the conflict is the answer (another writer wins each time).
        var races = 20
        /// Decisions whose commit would have come after their effect instant (nothing written), each decided again
        /// later with twice the effect delay, up to `maximumEffectDelayMilliseconds`.
        var lateDecisions = 8
        var maximumEffectDelayMilliseconds: Int64 = 5_000
    }

    let store: any EventStore
    let clock: @Sendable () -> Timestamp
    /// A known state of a channel to decide on first, without reading the stream (the follower's).
    let knownState: @Sendable (ChannelID) -> ChannelState?
    var policy = Policy()

    /// The command as received, and what comes with it.
    struct Command {
        var command: ScheduleCommand
        /// Its canonical text, for the idempotency record (`EventCodec.canonicalRequest`).
        var request: String
        var channel: ChannelID
        var context: CommandContext
        /// HTTP `If-Match`: a changed channel is a conflict, not decided again.
        var expectedVersion: Int64?
        var warnings: [String]
    }

    /// Where a try stands: its number, and after a late decision the database clock and a longer effect delay.
    private struct Attempt {
        var number = 0
        var notBefore = Timestamp(milliseconds: .min)
        var effectDelay = EffectiveTime.effectDelayMilliseconds
    }

    func run(_ command: Command, observer: CommandObserver) async throws(CommandError) -> CommandOutcome {
        var attempt = Attempt()
        while true {
            attempt.number += 1
            do {
                if let outcome = try await once(command, attempt, observer) { return outcome }
            } catch let error as CommandError {
                throw error
            } catch let StoreError.versionConflict(channel, expected, actual)
                where command.expectedVersion == nil && attempt.number < policy.races
            {
                observer.lostRace(channel: channel, expected: expected, actual: actual)
            } catch let StoreError.lateDecision(decidedAt, databaseClock) where attempt.number < policy.lateDecisions {
                // The commit would have come after the instant the events take effect, so a follower could already
                // have served that instant without them. Nothing was written: decide again, later, with more room.
                observer.lateDecision(
                    command, decidedAt: decidedAt, databaseClock: databaseClock, attempt: attempt.number)
                attempt.notBefore = databaseClock
                attempt.effectDelay = min(attempt.effectDelay * 2, policy.maximumEffectDelayMilliseconds)
            } catch let error as StoreError {
                observer.failed(command, error)
                throw .store(error)
            } catch {
                throw .store(.database("\(error)"))
            }
        }
    }

    /// One try: the outcome, or nil to decide again at once (a refusal or an `If-Match` mismatch decided on the
    /// instance's unread state is decided again on the stream first).
    private func once(_ command: Command, _ attempt: Attempt, _ observer: CommandObserver) async throws
        -> CommandOutcome?
    {
        let channel = command.channel
        // The first try decides on this instance's state without reading the stream (the append's version check
        // refuses it if the log has moved on: then the stream is read and the command decided again). Only an answer
        // the append confirms, or one decided on the stream as read, is final.
        let unverified = attempt.number == 1 ? knownState(channel) : nil
        let state: ChannelState
        if let unverified {
            state = unverified
        } else {
            state = try await ChannelLoader.load(channel, from: store, startingFrom: knownState(channel))
        }
        if let expected = command.expectedVersion, expected != state.version {
            if unverified != nil { return nil }
            if let outcome = try await replayed(command, observer) { return outcome }
            throw StoreError.versionConflict(channel: channel, expected: .exactly(expected), actual: state.version)
        }
        let now = max(clock(), attempt.notBefore).adding(milliseconds: attempt.effectDelay)
        let events: [ScheduleEvent]
        do {
            events = try decide(command.command, state: state, now: now)
        } catch {
            if unverified != nil { return nil }
            if let outcome = try await replayed(command, observer) { return outcome }
            await observer.refused(command, error, decidedAt: now)
            throw CommandError.refused(error)
        }
        let context = command.context
        let append = AppendRequest(
            channel: channel, expectedVersion: state.version == 0 ? .noStream : .exactly(state.version),
            events: events.map { event in
                let encoded = EventCodec.encode(event)
                return NewEvent(type: encoded.type, schemaVersion: encoded.schemaVersion, payload: encoded.payload)
            },
            command: CommandMetadata(
                commandID: context.commandID, request: command.request, actor: context.actor, source: context.source,
                reason: context.reason, decidedAt: now))
        let result = try await store.append(append)
        observer.appended(command, result)
        if result.replayed {
            // A retry: the log's events are the first attempt's decision, not this one's (a relative start or a
            // playout limit decided now would differ).
            return CommandOutcome(result: result, events: try Self.decoded(result), warnings: command.warnings)
        }
        return CommandOutcome(result: result, events: events, warnings: command.warnings, encoded: append.events)
    }

    /// The answer already given to this command id, when the log holds one: a retry of an applied command gets its
    /// original answer, not "already placed" or a version conflict. Read only when the command would now be refused
    /// or conflict (otherwise the append itself recognises a retry, in its one round trip).
    private func replayed(_ command: Command, _ observer: CommandObserver) async throws -> CommandOutcome? {
        let probe = AppendRequest(
            channel: command.channel, expectedVersion: .any, events: [],
            command: CommandMetadata(
                commandID: command.context.commandID, request: command.request, actor: command.context.actor,
                source: command.context.source, decidedAt: Timestamp(milliseconds: 0)))
        guard let previous = try await store.previousResult(of: probe) else { return nil }
        observer.answeredFromRecord(command)
        return CommandOutcome(result: previous, events: try Self.decoded(previous))
    }

    private static func decoded(_ result: AppendResult) throws -> [ScheduleEvent] {
        try result.events.map {
            try EventCodec.decode(type: $0.type, schemaVersion: $0.schemaVersion, payload: $0.payload)
        }
    }
}
