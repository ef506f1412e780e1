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

    /// Where a break on a clock channel starts relative to the channel's segments.
    ///
    /// hls.js decides from where a break's start falls inside a segment whether the interstitial is appended in place
    /// or played in a media source of its own, and the two honour a late playout limit differently: starts at the
    /// arrival time make that vary from run to run; starts on a segment boundary make it the same every time.
    public enum StartAlignment: String, Hashable, Sendable, Codable, CaseIterable {
        /// Moved to the next segment boundary at or after the requested start (the default).
        case segment
        /// Exactly the requested start (`--in`: the moment the command is decided plus the delay).
        case exact
    }

    /// Caller-chosen id, or nil for one generated from the channel's version.
    public var id: String?
    public var start: Start
    public var plannedDurationMilliseconds: Int64
    public var asset: BreakAsset
    public var options: InterstitialOptions
    /// Relay channels take their segments from upstream and always keep the requested start.
    public var alignment: StartAlignment
    /// Serve each asset whole (`X-ASSET-URI`) even when Cueline could serve it in chunks (`--no-chunks`).
    public var wholeAssets: Bool = false
    /// What was read of each asset's media before deciding (one entry per asset, nil where it could not be read), or
    /// nil when nothing was read. Filled in by the command handler, never part of the request's text.
    public var measured: [MeasuredAsset?]? = nil

    public init(
        id: String? = nil, start: Start, plannedDurationMilliseconds: Int64, asset: BreakAsset,
        options: InterstitialOptions = InterstitialOptions(), alignment: StartAlignment = .segment
    ) {
        self.id = id
        self.start = start
        self.plannedDurationMilliseconds = plannedDurationMilliseconds
        self.asset = asset
        self.options = options
        self.alignment = alignment
    }

    private enum CodingKeys: String, CodingKey {
        case id, start, plannedDurationMilliseconds, asset, options, alignment, wholeAssets
    }

    // The encoding is the idempotency request text (`EventCodec.canonicalRequest`): the default alignment is left
    // out, so a request written before alignment existed hashes as it did, and an absent key reads as the default.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decodeIfPresent(String.self, forKey: .id)
        start = try container.decode(Start.self, forKey: .start)
        plannedDurationMilliseconds = try container.decode(Int64.self, forKey: .plannedDurationMilliseconds)
        asset = try container.decode(BreakAsset.self, forKey: .asset)
        options = try container.decode(InterstitialOptions.self, forKey: .options)
        alignment = try container.decodeIfPresent(StartAlignment.self, forKey: .alignment) ?? .segment
        wholeAssets = try container.decodeIfPresent(Bool.self, forKey: .wholeAssets) ?? false
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(id, forKey: .id)
        try container.encode(start, forKey: .start)
        try container.encode(plannedDurationMilliseconds, forKey: .plannedDurationMilliseconds)
        try container.encode(asset, forKey: .asset)
        try container.encode(options, forKey: .options)
        if alignment != .segment { try container.encode(alignment, forKey: .alignment) }
        if wholeAssets { try container.encode(wholeAssets, forKey: .wholeAssets) }
    }

    /// The start asked for, before any alignment: `--in` counts from `decidedAt`, the moment the command was decided.
    public func requestedStart(decidedAt: Timestamp) -> Timestamp {
        switch start {
        case .at(let time): return time
        case .inMilliseconds(let delay): return decidedAt.adding(milliseconds: delay)
        }
    }
}
