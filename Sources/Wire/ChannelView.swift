import HLS
import Schedule

/// A channel as `GET /channels` lists it.
public struct ChannelView: Codable, Sendable, Hashable {
    public var id: ChannelID
    public var segmentDuration: DecimalNumber
    public var targetDuration: Int
    public var windowSegments: Int
    public var epoch: Timestamp
    public var renditions: [Identifier]
    /// `clock` (segments from the channel's clock) or `relay` (an upstream encoder's playlists decorated).
    public var source: String

    public init(_ config: ChannelConfig) {
        id = config.id  // as stored: a channel of the earlier rule is listed too
        segmentDuration = DecimalNumber(milliseconds: config.segmentDurationMilliseconds)
        targetDuration = config.targetDuration
        windowSegments = config.windowSegments
        epoch = config.epoch
        renditions = config.renditions.map(\.name)
        if case .relay = config.source { source = "relay" } else { source = "clock" }
    }
}
