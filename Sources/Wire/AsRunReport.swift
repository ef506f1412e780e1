import Schedule

/// `GET /channels/{channel}/as-run`: what aired.
public struct AsRunReport: Codable, Sendable, Hashable {
    public var channel: ChannelID
    public var entries: [AsRunEntry]
    public var totals: AsRunTotals

    public init(channel: ChannelID, entries: [AsRunEntry], totals: AsRunTotals) {
        self.channel = channel
        self.entries = entries
        self.totals = totals
    }
}
