import HLS

/// What happened on a channel. Past tense; stored in the log as `type` + JSON payload.
public enum ScheduleEvent: Hashable, Sendable {
    case channelCreated(ChannelConfig)
    case renditionsUpdated([RenditionConfig])
    case breakPlaced(BreakSpec)
    /// `scte35In`: the splice_info_section (0x-prefixed hex) of an SCTE-35 return, carried as `SCTE35-IN`.
    case playoutLimitSet(id: BreakID, limitMilliseconds: Int64, kind: EarlyReturnKind, scte35In: String? = nil)
    /// `kind`: which command removed it; an event without one (every event before `kind` existed) is `.cancelBreak`.
    case breakCancelled(id: BreakID, kind: BreakCancelKind = .cancelBreak)

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

    /// Every `typeName`, in the order of the cases: the event `type` enum of the OpenAPI document.
    public static let typeNames = [
        "ChannelCreated", "RenditionsUpdated", "BreakPlaced", "PlayoutLimitSet", "BreakCancelled",
    ]

    public static let schemaVersion = 1
}

/// How a break that never aired was removed.
public enum BreakCancelKind: String, Hashable, Sendable, Codable, CaseIterable {
    /// `cueline break cancel` (or an SCTE-35 cancel or return before the break's start): a future break withdrawn.
    case cancelBreak = "cancel-break"
    /// `cueline event cancel-current` after the break's start on the clock but before the live edge reached it: no
    /// published segment held it yet, so ending it was a removal.
    case cancelCurrent = "cancel-current"

    /// For the as-run's `cancelled_how`.
    public var asRunDescription: String {
        switch self {
        case .cancelBreak: return "cancel-break"
        case .cancelCurrent: return "cancel-current (before its first segment was served)"
        }
    }
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
