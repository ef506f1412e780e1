import HLS

/// What an operator or automation asks for. Imperative; validated by `decide`.
public enum ScheduleCommand: Hashable, Sendable, Codable {
    case createChannel(ChannelConfig)
    case updateRenditions([RenditionConfig])
    case placeBreak(PlaceBreak)
    case setPlayoutLimit(id: String, limitMilliseconds: Int64)
    case cancelCurrentEvent
    case cancelBreak(id: String)
    /// An SCTE-35 return (splice_insert in, segmentation end): end this break at the live edge if it is on air.
    /// `scte35In` is the section as 0x-prefixed hex, published as `SCTE35-IN`.
    case returnFromBreak(id: String, scte35In: String?)

    /// A short name for logs and metrics labels.
    public var name: String {
        switch self {
        case .createChannel: return "create-channel"
        case .updateRenditions: return "update-renditions"
        case .placeBreak: return "place-break"
        case .setPlayoutLimit: return "set-playout-limit"
        case .cancelCurrentEvent: return "cancel-current-event"
        case .cancelBreak: return "cancel-break"
        case .returnFromBreak: return "return-from-break"
        }
    }
}

/// `place break`: the start is absolute or relative to the moment the command is decided.
public struct PlaceBreak: Hashable, Sendable, Codable {
    public enum Start: Hashable, Sendable, Codable {
        case at(Timestamp)
        case inMilliseconds(Int64)
    }

    /// Caller-chosen id, or nil for one generated from the channel's version.
    public var id: String?
    public var start: Start
    public var plannedDurationMilliseconds: Int64
    public var asset: BreakAsset
    public var options: InterstitialOptions

    public init(id: String? = nil, start: Start, plannedDurationMilliseconds: Int64, asset: BreakAsset, options: InterstitialOptions = InterstitialOptions()) {
        self.id = id
        self.start = start
        self.plannedDurationMilliseconds = plannedDurationMilliseconds
        self.asset = asset
        self.options = options
    }
}
