import HLS
import Schedule

/// The answer to a schedule command (`201` of `POST /channels/{channel}/commands`, and `--json` of the CLI's
/// commands, from the database or through the API alike).
public struct CommandResponse: Codable, Sendable, Hashable {
    public var channel: ChannelID
    public var version: Int64
    /// True when this answers a retry of a command already applied: the original result.
    public var replayed: Bool
    public var events: [EventView]
    /// How the command was applied, when the events alone do not say it (`ScheduleCommand.note`).
    public var note: String?

    public init(channel: ChannelID, version: Int64, replayed: Bool, events: [EventView], note: String?) {
        self.channel = channel
        self.version = version
        self.replayed = replayed
        self.events = events
        self.note = note
    }

    /// The events as schedule events (their payloads decoded), for people.
    public func scheduleEvents() throws -> [ScheduleEvent] {
        try events.map { try EventCodec.decode(type: $0.type, schemaVersion: $0.schemaVersion, payload: $0.payload) }
    }
}

/// One event of a channel's log as the API shows it.
public struct EventView: Codable, Sendable, Hashable {
    /// Global, gap-free, visible in order.
    public var position: Int64
    public var channel: ChannelID
    /// Per channel, gap-free, starting at 1.
    public var version: Int64
    public var type: String
    public var schemaVersion: Int
    /// The event's JSON, as stored.
    public var payload: String
    public var decidedAt: Timestamp
    public var actor: String
    /// cli, http, scte35, hook.
    public var source: String
    public var commandId: String
    public var reason: String?
    public var hash: String?

    public init(
        position: Int64, channel: ChannelID, version: Int64, type: String, schemaVersion: Int, payload: String,
        decidedAt: Timestamp, actor: String, source: String, commandId: String, reason: String?, hash: String?
    ) {
        self.position = position
        self.channel = channel
        self.version = version
        self.type = type
        self.schemaVersion = schemaVersion
        self.payload = payload
        self.decidedAt = decidedAt
        self.actor = actor
        self.source = source
        self.commandId = commandId
        self.reason = reason
        self.hash = hash
    }
}
