import HLS
import Schedule

/// `GET /channels/{channel}/refusals`: one page of a channel's refused commands (who tried what, from which door,
/// and why not), in the order they were recorded.
public struct RefusalPage: Codable, Sendable, Hashable {
    public var channel: ChannelID
    /// The break the page is limited to (`?break=`), absent when it holds every refusal of the channel.
    public var breakId: BreakID?
    public var refusals: [RefusalView]
    /// The cursor of the last refusal in the page, the `after` of the next page; absent when the page is empty.
    public var next: Int64?

    public init(channel: ChannelID, breakId: BreakID?, refusals: [RefusalView], next: Int64?) {
        self.channel = channel
        self.breakId = breakId
        self.refusals = refusals
        self.next = next
    }
}

/// One refused command as the API shows it.
public struct RefusalView: Codable, Sendable, Hashable {
    /// The command's name (`cancel-break`…).
    public var command: String
    public var commandId: String
    /// The break the command named, absent when it named none (`cancel-current-event`): text read from the stored
    /// request, not an `Identifier`, because the audit keeps what was asked for even when it was no id (records of
    /// builds that refused such ids in `decide` rather than where they entered).
    public var breakId: String?
    /// The canonical request, JSON, as stored.
    public var request: String
    public var actor: String
    /// The door it came through: cli, http, scte35, hook.
    public var source: String
    /// Why it was refused.
    public var reason: String
    public var decidedAt: Timestamp

    public init(
        command: String, commandId: String, breakId: String?, request: String, actor: String, source: String,
        reason: String,
        decidedAt: Timestamp
    ) {
        self.command = command
        self.commandId = commandId
        self.breakId = breakId
        self.request = request
        self.actor = actor
        self.source = source
        self.reason = reason
        self.decidedAt = decidedAt
    }
}
