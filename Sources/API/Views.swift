// The request, response and view types live in `Wire`, shared with the CLI and the OpenAPI document; every file
// of this module sees them through this import.
@_exported import Wire

import EventStore
import Projector
import Schedule

extension EventView {
    /// The event as the API shows it.
    public init(_ event: RecordedEvent) {
        self.init(
            position: event.position, channel: event.channel, version: event.version, type: event.type,
            schemaVersion: event.schemaVersion, payload: event.payload, decidedAt: event.decidedAt, actor: event.actor,
            source: event.source, commandId: event.commandID, reason: event.reason, hash: event.hash)
    }
}

extension RefusalView {
    /// A refused command as the API shows it.
    public init(_ refusal: Refusal) {
        self.init(
            command: refusal.command, commandId: refusal.commandID, breakId: refusal.breakID, request: refusal.request,
            actor: refusal.actor, source: refusal.source, reason: refusal.reason, decidedAt: refusal.decidedAt)
    }
}

extension CommandResponse {
    /// The answer to `command` from what the command handler returned.
    public init(_ outcome: CommandOutcome, channel: ChannelID, command: ScheduleCommand) {
        self.init(
            channel: channel, version: outcome.result.version, replayed: outcome.result.replayed,
            events: outcome.result.events.map(EventView.init), note: outcome.note(for: command))
    }

    public init(channel: ChannelID, version: Int64, replayed: Bool, events: [RecordedEvent], note: String?) {
        self.init(
            channel: channel, version: version, replayed: replayed, events: events.map(EventView.init), note: note)
    }
}
