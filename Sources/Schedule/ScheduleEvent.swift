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
    /// The channel's SCTE-35 ingest policy from this event on.
    case scte35PolicySet(SCTE35Policy)
    /// A splice_info_section as received and what it did; the events it led to follow it.
    case scte35Received(SCTE35Received)
    /// The channel's ad settings from this event on (all of them, as changed).
    case adSettingsSet(AdSettings)

    /// The `type` column.
    public var typeName: String {
        switch self {
        case .channelCreated: return "ChannelCreated"
        case .renditionsUpdated: return "RenditionsUpdated"
        case .breakPlaced: return "BreakPlaced"
        case .playoutLimitSet: return "PlayoutLimitSet"
        case .breakCancelled: return "BreakCancelled"
        case .scte35PolicySet: return "SCTE35PolicySet"
        case .scte35Received: return "SCTE35Received"
        case .adSettingsSet: return "AdSettingsSet"
        }
    }

    /// Every `typeName`, in the order of the cases: the event `type` enum of the OpenAPI document.
    public static let typeNames = [
        "ChannelCreated", "RenditionsUpdated", "BreakPlaced", "PlayoutLimitSet", "BreakCancelled", "SCTE35PolicySet",
        "SCTE35Received", "AdSettingsSet",
    ]

    /// The newest schema version this build reads.
    public static let schemaVersion = 3

    /// The schema version an event is written with: 1, except what a build from before a rendering change must not
    /// read (it would drop the setting and render without it, so during a rolling upgrade instances would disagree
    /// on the bytes): it refuses the event instead. 2: a `ChannelCreated` with signalling. 3: one with ad settings,
    /// `AdSettingsSet`, and a `BreakPlaced` with an ad server or skip control.
    public var writtenSchemaVersion: Int {
        switch self {
        case .channelCreated(let config) where config.ads != nil: return 3
        case .adSettingsSet: return 3
        case .breakPlaced(let spec)
        where spec.adServer != nil || spec.options.skipControl != nil || spec.preloadMilliseconds != nil:
            return 3
        case .channelCreated(let config) where config.signalling != nil: return 2
        default: return 1
        }
    }
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
