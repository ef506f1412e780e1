import EventStore
import Foundation
import HLS
import Hummingbird
import Projector
import SCTE35
import Schedule

/// The body of `POST /channels/{channel}/scte35`.
///
///     {"section": "/DAvAAAAAAAA///wFAVIAACPf+/+…", "asset_list": "https://ads.example.com/decide?…"}
struct SCTE35Request: Decodable {
    /// The splice_info_section, base64 or hex.
    var section: String
    var assetUri: String?
    var assetList: String?
    /// Seconds, for an out cue that gives no duration.
    var duration: Double?
    /// `segment` (default) or `exact`, as for `place_break`.
    var align: String?
    var reason: String?
}

/// How one cue maps onto the schedule, given what the channel holds. Pure, so tests can check every branch.
enum CueMapping: Equatable {
    case command(ScheduleCommand)
    /// Nothing to do, and why (a repeated cue, a return after the break ended).
    case nothing(String)

    /// Breaks placed over SCTE-35 are named `scte35-<event id>`; an event id used again later gets `-2`, `-3`…
    static func breakIDs(_ eventID: UInt32, in state: ChannelState) -> (latest: BreakState?, next: String) {
        let base = "scte35-\(eventID)"
        let matching = state.breaks.filter { $0.id.rawValue == base || $0.id.rawValue.hasPrefix(base + "-") }
        let latest = matching.max { $0.placed.at < $1.placed.at }
        return (latest, matching.isEmpty ? base : "\(base)-\(matching.count + 1)")
    }

    static func map(
        _ cue: Cue, section: SpliceInfoSection, request: SCTE35Request, state: ChannelState, liveEdge: Timestamp
    ) throws(CommandRequest.Invalid) -> CueMapping {
        let hex = HexBytes(section.bytes).description
        switch cue {
        case .out(let eventID, let durationMilliseconds):
            let (latest, next) = breakIDs(eventID, in: state)
            // Encoders repeat a cue until the splice point: while that break is still ahead or on air, it is the same.
            if let latest, !latest.isCancelled, liveEdge < latest.end {
                return .nothing("break \(latest.id) for splice event \(eventID) is already scheduled or on air")
            }
            // A JSON number can be 1e300 or -0: bounded before it is converted, never a trapping Int64(_:).
            var requested: Int64?
            if let seconds = request.duration {
                do {
                    requested = try Limits.milliseconds(
                        seconds: seconds, field: "duration", maximum: Limits.maximumBreakMilliseconds)
                } catch {
                    throw CommandRequest.Invalid(refusal: error)
                }
            }
            guard let duration = durationMilliseconds ?? requested else {
                throw CommandRequest.Invalid(
                    field: "duration", reason: "is required: the section gives no break duration")
            }
            let asset: BreakAsset
            switch (request.assetUri, request.assetList) {
            case (let uri?, nil): asset = .uri(uri)
            case (nil, let list?): asset = .list(list)
            default:
                throw CommandRequest.Invalid(field: "asset_uri", reason: "give exactly one of asset_uri or asset_list")
            }
            // The splice point is taken as the moment the cue arrives (plus the usual effect delay): channels here
            // are timed by the wall clock, not by the PTS of an upstream encoder. Like any placement it moves to the
            // next segment boundary unless the request asks for `align: exact`.
            // `scte35-<digits>[-<digits>]`: always an id (checked all the same, so a mistake here is a refusal).
            let id: BreakID
            do { id = try BreakID(next, field: "id") } catch { throw CommandRequest.Invalid(refusal: error) }
            return .command(
                .placeBreak(
                    PlaceBreak(
                        id: id, start: .inMilliseconds(0), plannedDurationMilliseconds: duration, asset: asset,
                        options: InterstitialOptions(cue: InterstitialOptions.defaultCue, scte35Out: hex),
                        alignment: try CommandRequest.alignment(request.align))))
        case .in(let eventID), .cancel(let eventID):
            let isCancel = if case .cancel = cue { true } else { false }
            guard let latest = breakIDs(eventID, in: state).latest else {
                return .nothing("no break was placed for splice event \(eventID)")
            }
            switch latest.phase(liveEdge: liveEdge) {
            case .scheduled: return .command(.cancelBreak(id: latest.id))
            case .onAir: return .command(.returnFromBreak(id: latest.id, scte35In: isCancel ? nil : hex))
            case .cancelled, .aired, .endedEarly: return .nothing("break \(latest.id) is already over")
            }
        }
    }
}

extension Cue {
    /// The command types (`apiName`s) this cue may map to, whatever the channel's state.
    var possibleCommands: [String] {
        switch self {
        case .out: [ScheduleCommand.Kind.placeBreak.rawValue]
        case .in, .cancel:
            [ScheduleCommand.Kind.cancelCurrentEvent.rawValue, ScheduleCommand.Kind.cancelBreak.rawValue]
        }
    }
}

struct SCTE35Ignored: Encodable {
    var channel: ChannelID
    var ignored: String
}

extension ScheduleCommand {
    /// The break a break command is about.
    var targetBreakID: BreakID? {
        switch self {
        case .placeBreak(let place): place.id
        case .setPlayoutLimit(let id, _), .returnFromBreak(let id, _), .cancelBreak(let id): id
        case .cancelCurrentEvent, .createChannel, .updateRenditions: nil
        }
    }

    /// The command type tokens are scoped by (the `command` values of `POST …/commands`).
    var apiName: String { kind.scope?.rawValue ?? "channel" }
}
