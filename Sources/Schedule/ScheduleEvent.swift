import HLS

/// What happened on a channel. Past tense; stored in the log as `type` + JSON payload.
public enum ScheduleEvent: Hashable, Sendable {
    case channelCreated(ChannelConfig)
    case renditionsUpdated([RenditionConfig])
    case breakPlaced(BreakSpec)
    /// `scte35In`: the splice_info_section (0x-prefixed hex) of an SCTE-35 return, carried as `SCTE35-IN`.
    case playoutLimitSet(id: String, limitMilliseconds: Int64, kind: EarlyReturnKind, scte35In: String? = nil)
    case breakCancelled(id: String)

    /// The `type` column.
    public var typeName: String {
        switch self {
        case .channelCreated: return "ChannelCreated"
        case .renditionsUpdated: return "RenditionsUpdated"
        case .breakPlaced: return "BreakPlaced"
        case .playoutLimitSet: return "PlayoutLimitSet"
        case .breakCancelled: return "BreakCancelled"
        }
    }

    public static let schemaVersion = 1
}

/// An event with what the log recorded about it, the input of `evolve`.
public struct RecordedScheduleEvent: Hashable, Sendable {
    public var event: ScheduleEvent
    public var version: Int64
    public var position: Int64
    public var attribution: Attribution

    public init(event: ScheduleEvent, version: Int64, position: Int64, attribution: Attribution) {
        self.event = event
        self.version = version
        self.position = position
        self.attribution = attribution
    }
}
