import EventStore
import HLS
import Schedule

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
