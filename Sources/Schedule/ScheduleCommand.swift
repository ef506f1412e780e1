import HLS

/// What an operator or automation asks for. Imperative; validated by `decide`.
public enum ScheduleCommand: Hashable, Sendable, Codable {
    case createChannel(ChannelConfig)
    case updateRenditions([RenditionConfig])
    case placeBreak(PlaceBreak)
    case setPlayoutLimit(id: BreakID, limitMilliseconds: Int64)
    case cancelCurrentEvent
    case cancelBreak(id: BreakID)
    /// An SCTE-35 return (splice_insert in, segmentation end): end this break at the live edge if it is on air.
    /// `scte35In` is the section as 0x-prefixed hex, published as `SCTE35-IN`.
    case returnFromBreak(id: BreakID, scte35In: String?)
    /// The channel's SCTE-35 ingest policy from now on.
    case setSCTE35Policy(SCTE35Policy)
    /// A received splice_info_section, decided by the channel's policy (`decideIngest`).
    case ingestSCTE35(SCTE35Ingest)
    /// A change to the channel's ad settings (`channel update`).
    case setAdSettings(AdSettingsChange)

    /// What kind of command this is: the one place its wire name is spelled.
    public var kind: Kind {
        switch self {
        case .createChannel: .createChannel
        case .updateRenditions: .updateRenditions
        case .placeBreak: .placeBreak
        case .setPlayoutLimit: .setPlayoutLimit
        case .cancelCurrentEvent: .cancelCurrentEvent
        case .cancelBreak: .cancelBreak
        case .returnFromBreak: .returnFromBreak
        case .setSCTE35Policy: .setSCTE35Policy
        case .ingestSCTE35: .ingestSCTE35
        case .setAdSettings: .setAdSettings
        }
    }

    /// A short name for logs, metrics labels and the audit's refusal records (`place-break`): the wire name in
    /// kebab-case, as those records have always spelled it.
    public var name: String { kind.label }

    /// A command's kind. The raw value is its wire name: the `command` of `POST /channels/{channel}/commands`, the
    /// command types a token or a hook rule is scoped to, and the OpenAPI document's enum.
    public enum Kind: String, Hashable, Sendable, Codable, CaseIterable {
        case createChannel = "create_channel"
        case updateRenditions = "update_renditions"
        case placeBreak = "place_break"
        case setPlayoutLimit = "set_playout_limit"
        case cancelCurrentEvent = "cancel_current_event"
        case cancelBreak = "cancel_break"
        case returnFromBreak = "return_from_break"
        case setSCTE35Policy = "set_scte35_policy"
        case ingestSCTE35 = "ingest_scte35"
        case setAdSettings = "set_ad_settings"

        /// The commands the HTTP API takes, in the order the documentation lists them; tokens and hook rules are
        /// scoped by these.
        public static let api: [Kind] = [.placeBreak, .setPlayoutLimit, .cancelCurrentEvent, .cancelBreak]

        /// The API command a token must be allowed to send for a command of this kind: an SCTE-35 return ends
        /// the break on air as `cancel_current_event` does; channel commands are not API commands (nil).
        public var scope: Kind? {
            switch self {
            case .placeBreak, .setPlayoutLimit, .cancelCurrentEvent, .cancelBreak: self
            case .returnFromBreak: .cancelCurrentEvent
            // A channel's configuration; an ingest is authorized for the command its cue becomes (SCTE35Controller).
            case .createChannel, .updateRenditions, .setSCTE35Policy, .ingestSCTE35, .setAdSettings: nil
            }
        }

        /// The wire name in kebab-case (`place-break`), for logs and metrics labels.
        public var label: String { String(rawValue.map { $0 == "_" ? "-" : $0 }) }
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
    public var id: BreakID?
    public var start: Start
    public var plannedDurationMilliseconds: Int64
    public var asset: BreakAsset
    public var options: InterstitialOptions
    /// Relay channels take their segments from upstream and always keep the requested start.
    public var alignment: StartAlignment
    /// Serve each asset whole (`X-ASSET-URI`) even when Cueline could serve it in chunks (`--no-chunks`).
    public var wholeAssets: Bool = false
    /// The ad server that fills the break for each viewer (`--ad-server`): nil takes the channel's, if it has one.
    public var adServer: AdServerTemplate? = nil
    /// What was read of each asset's media before deciding (one entry per asset, nil where it could not be read), or
    /// nil when nothing was read. Filled in by the command handler, never part of the request's text.
    public var measured: [MeasuredAsset?]? = nil

    public init(
        id: BreakID? = nil, start: Start, plannedDurationMilliseconds: Int64, asset: BreakAsset,
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
        case id, start, plannedDurationMilliseconds, asset, options, alignment, wholeAssets, adServer
    }

    // The encoding is the idempotency request text (`EventCodec.canonicalRequest`): the default alignment is left
    // out, so a request written before alignment existed hashes as it did, and an absent key reads as the default.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decodeIfPresent(BreakID.self, forKey: .id)
        start = try container.decode(Start.self, forKey: .start)
        plannedDurationMilliseconds = try container.decode(Int64.self, forKey: .plannedDurationMilliseconds)
        asset = try container.decode(BreakAsset.self, forKey: .asset)
        options = try container.decode(InterstitialOptions.self, forKey: .options)
        alignment = try container.decodeIfPresent(StartAlignment.self, forKey: .alignment) ?? .segment
        wholeAssets = try container.decodeIfPresent(Bool.self, forKey: .wholeAssets) ?? false
        adServer = try container.decodeIfPresent(AdServerTemplate.self, forKey: .adServer)
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
        try container.encodeIfPresent(adServer, forKey: .adServer)
    }

    /// The start asked for, before any alignment: `--in` counts from `decidedAt`, the moment the command was decided.
    public func requestedStart(decidedAt: Timestamp) -> Timestamp {
        switch start {
        case .at(let time): return time
        case .inMilliseconds(let delay): return decidedAt.adding(milliseconds: delay)
        }
    }
}
