import HLS
import SCTE35

/// A splice_info_section received for a channel, with what the request adds to it: the command
/// `POST /channels/{channel}/scte35` sends. Decided against the channel's SCTE-35 policy (`SCTE35Policy`); the section
/// is kept in the log as received (`SCTE35Received`), whatever it did, so a later policy can be tried on it
/// (`cueline scte35 dry-run`).
public struct SCTE35Ingest: Hashable, Sendable, Codable {
    /// The section as `0x` and upper-case hex.
    public var section: String
    /// For a start that gives no duration (milliseconds).
    public var durationMilliseconds: Int64?
    /// What a placed break plays (required for a start).
    public var asset: BreakAsset?
    public var alignment: PlaceBreak.StartAlignment
    /// What was read of a single asset's or a pod's media before deciding (as `PlaceBreak.measured`).
    public var measured: [MeasuredAsset?]?

    public init(
        section: [UInt8], durationMilliseconds: Int64? = nil, asset: BreakAsset? = nil,
        alignment: PlaceBreak.StartAlignment = .segment
    ) {
        self.section = HexBytes(section).description
        self.durationMilliseconds = durationMilliseconds
        self.asset = asset
        self.alignment = alignment
    }
}

/// What a received section did, as the log keeps it (`SCTE35Received`, first of the command's events; the events it
/// led to follow it).
public struct SCTE35Received: Hashable, Sendable, Codable {
    public enum Outcome: String, Hashable, Sendable, Codable, CaseIterable {
        case placed, ended, cancelled, ignored
    }

    public var ingest: SCTE35Ingest
    public var outcome: Outcome
    /// The break it placed, ended or cancelled.
    public var breakID: BreakID?
    /// Why, in words: the cue and the rule that applied.
    public var detail: String
    /// The descriptors' delivery restriction bits (web, no regional blackout, archive, device), when a start
    /// restricted delivery.
    public var deliveryRestrictions: UInt8?
    /// How many events after this one the section led to (0 when ignored).
    public var consequences: Int

    public init(
        ingest: SCTE35Ingest, outcome: Outcome, breakID: BreakID?, detail: String, deliveryRestrictions: UInt8?,
        consequences: Int
    ) {
        self.ingest = ingest
        self.outcome = outcome
        self.breakID = breakID
        self.detail = detail
        self.deliveryRestrictions = deliveryRestrictions
        self.consequences = consequences
    }
}

/// One thing a section asks of the schedule under a policy.
public enum IngestCue: Hashable, Sendable {
    case place(eventID: UInt32, durationMilliseconds: Int64?, type: UInt8?, deliveryRestrictions: UInt8?)
    case end(eventID: UInt32, type: UInt8?)
    case cancel(eventID: UInt32)

    public var eventID: UInt32 {
        switch self {
        case .place(let id, _, _, _), .end(let id, _), .cancel(let id): id
        }
    }
}

extension SCTE35Policy {
    /// The cues a section carries under this policy, and what it ignored and why.
    public func read(_ section: SpliceInfoSection) -> (cues: [IngestCue], ignored: [String]) {
        switch section.command {
        case .insert(let insert):
            guard spliceInsert == .follow else { return ([], ["splice_insert (the policy ignores splice_insert)"]) }
            if insert.cancel { return ([.cancel(eventID: insert.eventID)], []) }
            if insert.outOfNetwork {
                let duration = insert.breakDuration.map(ticksToMilliseconds)
                return (
                    [
                        .place(
                            eventID: insert.eventID, durationMilliseconds: duration, type: nil,
                            deliveryRestrictions: nil)
                    ],
                    []
                )
            }
            return ([.end(eventID: insert.eventID, type: nil)], [])
        case .timeSignal:
            var cues: [IngestCue] = []
            var ignored: [String] = []
            for descriptor in section.descriptors {
                guard case .segmentation(let segmentation) = descriptor else { continue }
                if segmentation.cancel {
                    cues.append(.cancel(eventID: segmentation.eventID))
                    continue
                }
                let type = segmentation.typeID
                switch action(for: type) {
                case .place?:
                    if segmentation.deliveryRestrictions != nil && restricted == .ignore {
                        ignored.append(
                            "\(Self.describe(type)) restricts delivery (the policy ignores restricted starts)")
                        continue
                    }
                    cues.append(
                        .place(
                            eventID: segmentation.eventID,
                            durationMilliseconds: segmentation.duration.map(ticksToMilliseconds), type: type,
                            deliveryRestrictions: segmentation.deliveryRestrictions))
                case .end?: cues.append(.end(eventID: segmentation.eventID, type: type))
                case .cancel?: cues.append(.cancel(eventID: segmentation.eventID))
                case .ignore?: ignored.append("\(Self.describe(type)) (the policy ignores it)")
                case nil: ignored.append("\(Self.describe(type)) (in no list of the policy)")
                }
            }
            if cues.isEmpty && ignored.isEmpty { ignored.append("time_signal without a segmentation descriptor") }
            return (cues, ignored)
        case .null: return ([], ["splice_null"])
        case .bandwidthReservation: return ([], ["bandwidth_reservation"])
        case .privateCommand: return ([], ["private_command"])
        }
    }
}

/// Decides a received section: the policy's cue mapped onto the channel's schedule at `now`, the events of the
/// command it becomes, and the record of the section that goes first in the log. Pure, so a dry-run of another policy
/// over the log decides exactly as the server did.
///
/// Breaks placed over SCTE-35 are named `scte35-<event id>`; an event id used again once its break is over gets `-2`,
/// `-3`… A start repeated while its break is ahead or on air is the same break (encoders repeat a cue until the splice
/// point): ignored. An end or a cancel ends the break on air at the live edge, or cancels it before its start.
public func decideIngest(
    _ ingest: SCTE35Ingest, policy: SCTE35Policy, state: ChannelState, now: Timestamp
) throws(ScheduleError) -> (received: SCTE35Received, events: [ScheduleEvent]) {
    guard let bytes = HexBytes(hex: ingest.section)?.bytes else {
        throw .invalidField("section", "is not 0x and hexadecimal digits")
    }
    let section: SpliceInfoSection
    do {
        section = try SpliceInfoSection(bytes: bytes)
    } catch {
        throw .invalidField("section", error.description)
    }
    let (cues, ignored) = policy.read(section)
    func received(_ outcome: SCTE35Received.Outcome, _ id: BreakID?, _ detail: String, restrictions: UInt8? = nil)
        -> SCTE35Received
    {
        SCTE35Received(
            ingest: ingest, outcome: outcome, breakID: id, detail: detail, deliveryRestrictions: restrictions,
            consequences: 0)
    }
    guard cues.count <= 1 else {
        throw .invalidField("section", "the section carries \(cues.count) break cues; send one per section")
    }
    guard let cue = cues.first else {
        return (received(.ignored, nil, "ignored: " + ignored.joined(separator: "; ")), [])
    }
    guard let config = state.config else { throw .unknownChannel(state.channel) }
    let liveEdge = Timeline(config).liveEdge(at: now)
    let base = "scte35-\(cue.eventID)"
    // Breaks that have not retired, as commands see them: the follower's hot state and a full fold agree on these.
    let live = state.breaks.filter {
        ($0.id.rawValue == base || $0.id.rawValue.hasPrefix(base + "-")) && !state.isRetired($0, now: now)
    }
    let latest = live.max { $0.placed.at < $1.placed.at }
    let command: ScheduleCommand
    var outcome: SCTE35Received.Outcome
    var restrictions: UInt8?
    switch cue {
    case .place(let eventID, let sectionDuration, _, let restricted):
        if let latest, !latest.isCancelled, liveEdge < latest.end {
            return (
                received(
                    .ignored, latest.id, "break \(latest.id) for splice event \(eventID) is already scheduled or on air"
                ),
                []
            )
        }
        guard let duration = sectionDuration ?? ingest.durationMilliseconds ?? policy.defaultDurationMilliseconds else {
            throw .invalidField("duration", "is required: the section gives no break duration")
        }
        // The first of scte35-<event>, -2, -3… that no live break holds.
        var candidate = base
        var suffix = 1
        while live.contains(where: { $0.id.rawValue == candidate }) {
            suffix += 1
            candidate = "\(base)-\(suffix)"
        }
        let id = try BreakID(candidate, field: "id")
        // A channel marked for a downstream SSAI alone plays no asset: its breaks list this service's empty list.
        // A channel with an ad server fills a break from automation's cue with it: no asset needed.
        let ownList: BreakAsset? =
            config.signalling?.markers.interstitials == false
            ? .list(PlaylistBuilder.assetListURI(config: config, breakID: id))
            : state.adSettings?.adServer != nil ? .pod([]) : nil
        guard let asset = ingest.asset ?? ownList else {
            throw .invalidField("asset_uri", "give exactly one of asset_uri or asset_list")
        }
        var place = PlaceBreak(
            id: id, start: .inMilliseconds(0), plannedDurationMilliseconds: duration, asset: asset,
            options: InterstitialOptions(cue: InterstitialOptions.defaultCue, scte35Out: ingest.section),
            alignment: ingest.alignment)
        place.measured = ingest.measured
        command = .placeBreak(place)
        outcome = .placed
        restrictions = restricted
    case .end(let eventID, _), .cancel(let eventID):
        let isCancel = if case .cancel = cue { true } else { false }
        guard let latest else {
            return (received(.ignored, nil, "no break was placed for splice event \(eventID)"), [])
        }
        switch latest.phase(liveEdge: liveEdge) {
        case .scheduled:
            command = .cancelBreak(id: latest.id)
            outcome = .cancelled
        case .onAir:
            command = .returnFromBreak(id: latest.id, scte35In: isCancel ? nil : ingest.section)
            outcome = .ended
        case .cancelled, .aired, .endedEarly:
            return (received(.ignored, latest.id, "break \(latest.id) is already over"), [])
        }
    }
    let events = try decide(command, state: state, now: now)
    var record = received(outcome, command.targetBreak, describe(cue, outcome), restrictions: restrictions)
    record.consequences = events.count
    return (record, events)
}

private func describe(_ cue: IngestCue, _ outcome: SCTE35Received.Outcome) -> String {
    switch cue {
    case .place(let eventID, _, let type, _):
        "\(type.map(SCTE35Policy.describe) ?? "splice_insert out") for splice event \(eventID): \(outcome.rawValue)"
    case .end(let eventID, let type):
        "\(type.map(SCTE35Policy.describe) ?? "splice_insert return") for splice event \(eventID): \(outcome.rawValue)"
    case .cancel(let eventID): "cancel of splice event \(eventID): \(outcome.rawValue)"
    }
}

extension ScheduleCommand {
    /// The break a break command is about.
    public var targetBreak: BreakID? {
        switch self {
        case .placeBreak(let place): place.id
        case .setPlayoutLimit(let id, _), .returnFromBreak(let id, _), .cancelBreak(let id): id
        case .cancelCurrentEvent, .createChannel, .updateRenditions, .setSCTE35Policy, .ingestSCTE35, .setAdSettings:
            nil
        }
    }
}
