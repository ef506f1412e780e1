import HLS
import Schedule

/// A break as a client-side scheduler wants it: the HLS interstitial fields directly usable.
public struct BreakView: Codable, Sendable, Hashable {
    public var id: BreakID
    public var state: BreakState.Phase
    public var startDate: Timestamp
    public var plannedDuration: DecimalNumber
    /// The duration it plays: the playout limit when one was set.
    public var duration: DecimalNumber
    public var playoutLimit: DecimalNumber?
    /// Seconds into the primary where it resumes; nil for live (players rejoin at the live offset).
    public var resumeOffset: DecimalNumber?
    public var endDate: Timestamp
    public var assetUri: String?
    public var assetList: String?
    public var pod: [PodAsset]?
    public var restrictions: [String]
    public var snap: [String]
    public var cue: [String]
    public var userAttributes: [String: String]
    /// The ad server that decides each viewer's list (the assets, if any, are its fallback).
    public var adServer: String?
    /// Skip control, whole seconds.
    public var skipOffset: DecimalNumber?
    public var skipDuration: DecimalNumber?
    public var skipLabel: String?
    /// `POINT`/`RANGE`, `HIGHLIGHT`/`PRIMARY`, as published (absent: the player's default).
    public var timelineOccupies: String?
    public var timelineStyle: String?
    public var contentMayVary: Bool?
    public var placedBy: String
    public var placedAt: Timestamp
    public var placedVia: String
    public var endedEarlyBy: String?
    public var endedEarlyAt: Timestamp?
    public var endedEarlyHow: EarlyReturnKind?
    public var cancelledBy: String?
    public var cancelledAt: Timestamp?
    /// `cancel-break`, or `cancel-current` for a break ended before its first segment was served (so removed).
    public var cancelledHow: BreakCancelKind?

    public init(_ item: BreakState, liveEdge: Timestamp) {
        id = item.id
        state = item.phase(liveEdge: liveEdge)
        startDate = item.start
        plannedDuration = DecimalNumber(milliseconds: item.spec.plannedDurationMilliseconds)
        duration = DecimalNumber(milliseconds: item.effectiveDurationMilliseconds)
        playoutLimit = item.playoutLimitMilliseconds.map { DecimalNumber(milliseconds: $0) }
        resumeOffset = nil
        endDate = item.end
        switch item.spec.asset {
        case .uri(let uri): assetUri = uri
        case .list(let uri): assetList = uri
        case .pod(let assets): pod = assets
        }
        restrictions = item.spec.options.restrict?.map(\.rawValue) ?? []
        snap = item.spec.options.snap?.map(\.rawValue) ?? []
        cue = item.spec.options.cue?.map(\.rawValue) ?? []
        var attributes: [String: String] = [:]
        for attribute in item.spec.options.clientAttributes {
            switch attribute.value {
            case .string(let text): attributes[attribute.name] = text
            case .hex(let bytes): attributes[attribute.name] = bytes.description
            case .decimal(let number): attributes[attribute.name] = number.description
            }
        }
        userAttributes = attributes
        adServer = item.spec.adServer?.value
        let options = item.spec.options
        skipOffset = options.skipControl.map { DecimalNumber(integer: $0.offsetMilliseconds / 1000) }
        skipDuration = options.skipControl?.durationMilliseconds.map { DecimalNumber(integer: $0 / 1000) }
        skipLabel = options.skipControl?.labelID
        timelineOccupies = options.timelineOccupies?.rawValue
        timelineStyle = options.timelineStyle?.rawValue
        contentMayVary = options.contentMayVary
        placedBy = item.placed.actor
        placedAt = item.placed.at
        placedVia = item.placed.source
        endedEarlyBy = item.limited?.actor
        endedEarlyAt = item.limited?.at
        endedEarlyHow = item.limitKind
        cancelledBy = item.cancelled?.actor
        cancelledAt = item.cancelled?.at
        cancelledHow = item.cancelled == nil ? nil : (item.cancelKind ?? .cancelBreak)
    }
}

/// `GET /channels/{channel}/schedule` (a page of it: ``SchedulePage``) and `cueline schedule --json`, from the
/// database or through the API alike.
public struct ScheduleView: Codable, Sendable, Hashable {
    public var channel: ChannelID
    public var version: Int64
    public var liveEdge: Timestamp
    /// In order of start, then of id.
    public var breaks: [BreakView]
    /// A page that does not hold every break asked for: the ``ScheduleCursor`` of its last break, the `after` of the
    /// next page. Absent on the last page (and on a whole schedule).
    public var next: String?

    /// The whole schedule.
    public init(state: ChannelState, liveEdge: Timestamp) {
        self.init(
            channel: state.channel, version: state.version, liveEdge: liveEdge,
            breaks: state.breaks.map { BreakView($0, liveEdge: liveEdge) })
    }

    public init(channel: ChannelID, version: Int64, liveEdge: Timestamp, breaks: [BreakView], next: String? = nil) {
        self.channel = channel
        self.version = version
        self.liveEdge = liveEdge
        self.breaks = breaks
        self.next = next
    }
}
