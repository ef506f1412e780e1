import EventStore
import HLS
import Logging
import Metrics
import Schedule

/// What a command's transaction (``Transact``) tells the rest of the system on its way: the refusal audit trail,
/// the `cueline_commands_total` outcomes, the database error count and the logs.
struct CommandObserver: Sendable {
    /// Where refused commands are recorded (nil: not recorded).
    let refusals: (any RefusalStore)?
    let logger: Logger

    private func count(_ command: ScheduleCommand, _ outcome: String) {
        Counter(label: "cueline_commands_total", dimensions: [("command", command.name), ("outcome", outcome)])
            .increment()
    }

    /// Refused by the schedule, decided on the stream as read. The audit trail keeps who tried what and why; failing
    /// to record it must not change the answer to the operator.
    func refused(_ command: Transact.Command, _ error: ScheduleError, decidedAt: Timestamp) async {
        let (channel, context) = (command.channel, command.context)
        logger.info(
            "command refused",
            metadata: ["channel": "\(channel)", "command": "\(command.command.name)", "reason": "\(error)"])
        do {
            try await refusals?.recordRefusal(
                Refusal(
                    channel: channel, commandID: context.commandID, command: command.command.name,
                    request: command.request, actor: context.actor, source: context.source,
                    reason: error.description, decidedAt: decidedAt))
        } catch {
            logger.warning(
                "could not record a refused command", metadata: ["channel": "\(channel)", "error": "\(error)"])
        }
        count(command.command, "refused")
    }

    /// Written, or recognised by the append as a retry of one written before.
    func appended(_ command: Transact.Command, _ result: AppendResult) {
        count(command.command, result.replayed ? "replayed" : "applied")
        logger.info(
            "command applied",
            metadata: [
                "channel": "\(command.channel)", "command": "\(command.command.name)", "version": "\(result.version)",
            ])
    }

    /// Answered from the idempotency record (a retry of a command applied before, which would now be refused).
    func answeredFromRecord(_ command: Transact.Command) { count(command.command, "replayed") }

    func lostRace(channel: ChannelID, expected: ExpectedVersion, actual: Int64) {
        logger.debug(
            "lost a race, deciding again",
            metadata: ["channel": "\(channel)", "expected": "\(expected)", "actual": "\(actual)"])
    }

    func lateDecision(_ command: Transact.Command, decidedAt: Timestamp, databaseClock: Timestamp, attempt: Int) {
        Counter(label: "cueline_late_decisions_total").increment()
        logger.notice(
            "decision time passed before the append; deciding again",
            metadata: [
                "channel": "\(command.channel)", "decided_at": "\(decidedAt)", "database_clock": "\(databaseClock)",
                "attempt": "\(attempt)",
            ])
    }

    /// The store could not take it: a conflict, a value it refuses, or an error (counted as a database error).
    func failed(_ command: Transact.Command, _ error: StoreError) {
        let outcome: String
        switch error {
        case .versionConflict, .commandIDReused: outcome = "conflict"
        case .invalidValue: outcome = "invalid"
        case .unavailable, .database, .schemaOutdated, .lateDecision, .unknownOutcome, .logHeadBusy, .streamLocked:
            outcome = "error"
            Counter(label: "cueline_database_errors_total").increment()
        }
        count(command.command, outcome)
    }

    /// Not decided: the channel's previous command held its turn past the limit.
    func notDecided(_ command: ScheduleCommand, channel: ChannelID) {
        logger.warning(
            "the channel's previous command has been writing for 10 s; not decided",
            metadata: ["channel": "\(channel)", "command": "\(command.name)"])
        count(command, "error")
    }
}
