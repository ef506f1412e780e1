import HLS

/// How an interstitial presents itself: what the placing tag publishes besides identity, timing and asset.
public struct InterstitialOptions: Hashable, Sendable, Codable {
    public var restrict: [DateRange.Restriction]?
    public var snap: [DateRange.Snap]?
    public var cue: [DateRange.Cue]?
    public var timelineOccupies: DateRange.TimelineOccupies?
    public var timelineStyle: DateRange.TimelineStyle?
    public var contentMayVary: Bool?
    public var clientAttributes: [ClientAttribute]
    /// The splice_info_section (0x-prefixed hex) that placed the break over SCTE-35, carried as `SCTE35-OUT`.
    public var scte35Out: String?
    /// `X-SKIP-CONTROL-OFFSET`, `-DURATION`, `-LABEL-ID`.
    public var skipControl: SkipControl?

    public init(
        restrict: [DateRange.Restriction]? = nil, snap: [DateRange.Snap]? = nil, cue: [DateRange.Cue]? = nil,
        timelineOccupies: DateRange.TimelineOccupies? = nil, timelineStyle: DateRange.TimelineStyle? = nil,
        contentMayVary: Bool? = nil, clientAttributes: [ClientAttribute] = [], scte35Out: String? = nil,
        skipControl: SkipControl? = nil
    ) {
        self.scte35Out = scte35Out
        self.skipControl = skipControl
        self.restrict = restrict
        self.snap = snap
        self.cue = cue
        self.timelineOccupies = timelineOccupies
        self.timelineStyle = timelineStyle
        self.contentMayVary = contentMayVary
        self.clientAttributes = clientAttributes
    }
}

extension InterstitialOptions {
    /// The `CUE` a break gets when its command names none: `ONCE`. A live break plays once for each viewer anyway;
    /// saying so keeps hls.js 1.6 from appending the break into the primary's own buffer ("in place", chosen for a
    /// start on a segment boundary or with `X-SNAP=OUT`: `interstitial-event.ts` `appendInPlace`), where the primary
    /// froze at the break's start in our player scenarios; played in a media source of its own, a late early return
    /// ends a chunked asset within one chunk. Commands ask for no `CUE` with an empty list (`--cue none`).
    public static let defaultCue: [DateRange.Cue] = [.once]

    /// A command's `cue`: absent is the default, an empty list is none.
    public static func cue(requested: [DateRange.Cue]?) -> [DateRange.Cue]? {
        guard let requested else { return defaultCue }
        return requested.isEmpty ? nil : requested
    }
}

/// A break as placed: everything the placing tag publishes.
public struct BreakSpec: Hashable, Sendable, Codable {
    public var id: BreakID
    public var start: Timestamp
    public var plannedDurationMilliseconds: Int64
    public var asset: BreakAsset
    public var options: InterstitialOptions
    /// What was read of the assets' media at placement (nil for breaks placed without reading it, and for every
    /// break placed before Cueline read media: those render as they always did).
    public var media: BreakMedia?
    /// The ad server that decides what each viewer's asset list holds (the break's own, else the channel's when it
    /// was placed); `asset` is then the fallback. Nil: the assets are the same for every viewer.
    public var adServer: AdServerTemplate?
    /// How long before its start its preload range starts: the channel's `--preload` when it was placed (a later
    /// change never moves a published range). Nil: none.
    public var preloadMilliseconds: Int64?

    public init(
        id: BreakID, start: Timestamp, plannedDurationMilliseconds: Int64, asset: BreakAsset,
        options: InterstitialOptions = InterstitialOptions(),
        media: BreakMedia? = nil, adServer: AdServerTemplate? = nil
    ) {
        self.adServer = adServer
        self.id = id
        self.start = start
        self.plannedDurationMilliseconds = plannedDurationMilliseconds
        self.asset = asset
        self.options = options
        self.media = media
    }

    public var plannedEnd: Timestamp { start.adding(milliseconds: plannedDurationMilliseconds) }
}

/// What plays in the break.
public enum BreakAsset: Hashable, Sendable, Codable {
    /// One VOD playlist: `X-ASSET-URI`.
    case uri(String)
    /// An external asset-list endpoint (an ad decision server): `X-ASSET-LIST`.
    case list(String)
    /// A pod of assets this service lists at its own asset-list endpoint: `X-ASSET-LIST` pointing here.
    case pod([PodAsset])
}

/// One asset of a pod: an absolute VOD playlist URI and its duration.
public struct PodAsset: Hashable, Sendable, Codable {
    public var uri: String
    public var durationMilliseconds: Int64

    public init(uri: String, durationMilliseconds: Int64) {
        self.uri = uri
        self.durationMilliseconds = durationMilliseconds
    }
}

/// How a break ended early.
public enum EarlyReturnKind: String, Hashable, Sendable, Codable, CaseIterable {
    /// `cueline break limit`: an explicit playout limit.
    case playoutLimit = "playout-limit"
    /// `cueline event cancel-current`: return at the live edge.
    case cancelCurrent = "cancel-current"
    /// An SCTE-35 return / splice-in.
    case scte35Return = "scte35-return"
}

/// Who did something and when, as recorded on the event.
public struct Attribution: Hashable, Sendable, Codable {
    public var at: Timestamp
    public var actor: String
    public var source: String

    public init(at: Timestamp, actor: String, source: String) {
        self.at = at
        self.actor = actor
        self.source = source
    }
}

/// A break and what happened to it so far.
public struct BreakState: Hashable, Sendable, Codable {
    public var spec: BreakSpec
    public var placed: Attribution
    public var playoutLimitMilliseconds: Int64?
    public var limited: Attribution?
    public var limitKind: EarlyReturnKind?
    public var cancelled: Attribution?
    /// How it was cancelled (nil while it is not).
    public var cancelKind: BreakCancelKind?
    /// The splice_info_section of the SCTE-35 return that ended it, carried as `SCTE35-IN`.
    public var scte35In: String?

    public var id: BreakID { spec.id }
    public var start: Timestamp { spec.start }
    /// How long it plays: the playout limit if one was set, else the planned duration.
    public var effectiveDurationMilliseconds: Int64 { playoutLimitMilliseconds ?? spec.plannedDurationMilliseconds }
    public var end: Timestamp { spec.start.adding(milliseconds: effectiveDurationMilliseconds) }
    public var isCancelled: Bool { cancelled != nil }

    /// Where the break stands when the live edge is at `liveEdge`.
    public func phase(liveEdge: Timestamp) -> Phase {
        if isCancelled { return .cancelled }
        if liveEdge <= start { return .scheduled }
        if liveEdge < end { return .onAir }
        return playoutLimitMilliseconds == nil ? .aired : .endedEarly
    }

    public enum Phase: String, Hashable, Sendable, Codable, CaseIterable {
        case scheduled, onAir = "on-air", endedEarly = "ended-early", aired, cancelled
    }
}
