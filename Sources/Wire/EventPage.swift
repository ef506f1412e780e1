import Schedule
/// `GET /v1/channels/{channel}/events` as JSON: one page of the channel's log.
public struct EventPage: Codable, Sendable, Hashable {
    public var channel: ChannelID
    public var events: [EventView]
    /// The last version in the page, the `after` of the next page; absent when the page is empty.
    public var next: Int64?

    public init(channel: ChannelID, events: [EventView], next: Int64?) {
        self.channel = channel
        self.events = events
        self.next = next
    }
}
