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
        let matching = state.breaks.filter { $0.id == base || $0.id.hasPrefix(base + "-") }
        let latest = matching.max { $0.placed.at < $1.placed.at }
        return (latest, matching.isEmpty ? base : "\(base)-\(matching.count + 1)")
    }

    static func map(
        _ cue: Cue, section: SpliceInfoSection, request: SCTE35Request, state: ChannelState, liveEdge: Timestamp
    ) throws(CommandRequest.Invalid) -> CueMapping {
        let hex = "0x" + section.bytes.map { $0 < 16 ? "0" + String($0, radix: 16, uppercase: true) : String($0, radix: 16, uppercase: true) }.joined()
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
                    requested = try Limits.milliseconds(seconds: seconds, field: "duration", maximum: Limits.maximumBreakMilliseconds)
                } catch {
                    throw CommandRequest.Invalid(error)
                }
            }
            guard let duration = durationMilliseconds ?? requested else {
                throw CommandRequest.Invalid(field: "duration", reason: "is required: the section gives no break duration")
            }
            let asset: BreakAsset
            switch (request.assetUri, request.assetList) {
            case (let uri?, nil): asset = .uri(uri)
            case (nil, let list?): asset = .list(list)
            default: throw CommandRequest.Invalid(field: "asset_uri", reason: "give exactly one of asset_uri or asset_list")
            }
            // The splice point is taken as the moment the cue arrives (plus the usual effect delay): channels here
            // are timed by the wall clock, not by the PTS of an upstream encoder. Like any placement it moves to the
            // next segment boundary unless the request asks for `align: exact`.
            return .command(.placeBreak(PlaceBreak(
                id: next, start: .inMilliseconds(0), plannedDurationMilliseconds: duration, asset: asset,
                options: InterstitialOptions(cue: InterstitialOptions.defaultCue, scte35Out: hex), alignment: try CommandRequest.alignment(request.align))))
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

extension Routes {
    static func addSCTE35Route(
        to router: Router<BasicRequestContext>, follower: ChannelFollower, handler: CommandHandler, access: AccessPolicy
    ) {
        router.post("/channels/{channel}/scte35") { request, context -> Response in
            let channel = try context.parameters.require("channel")
            // The channel is authorized before anything of it is read: a token scoped to another channel learns
            // nothing of this one's breaks (not even whether it exists).
            if case .failure(let refusal) = await access.authorize(request, .read(channel: channel)) { return refusal.response }
            let parsed: SCTE35Request
            switch try await decodeBody(SCTE35Request.self, request) {
            case .success(let value): parsed = value
            case .failure(let error):
                return errorResponse(.unprocessableContent, "the body must be JSON with section (base64 or hex) and asset_uri or asset_list: \(error)", field: "body")
            }
            let section: SpliceInfoSection
            do {
                section = try SpliceInfoSection(text: parsed.section)
            } catch let error as SCTE35Error {
                return errorResponse(.unprocessableContent, error.description, field: "section")
            }
            let cues = section.cues
            guard cues.count == 1, let cue = cues.first else {
                if cues.isEmpty {
                    return jsonResponse(SCTE35Ignored(channel: channel, ignored: "the section carries no break cue (splice_null, or segmentation that is not a break)"))
                }
                return errorResponse(.unprocessableContent, "the section carries \(cues.count) break cues; send one per section", field: "section")
            }
            // The command types this cue can become are authorized before the cue is mapped against the channel's
            // state: a viewer, or a token without those commands, learns nothing of the schedule.
            if let refusal = await refusalOfEveryCommand(cue.possibleCommands, channel: channel, request: request, access: access) {
                return refusal.response
            }
            guard let state = follower.followedState(of: channel), let config = state.config else {
                return lookupErrorResponse(.unknownChannel(channel))
            }
            let mapping: CueMapping
            do {
                mapping = try CueMapping.map(cue, section: section, request: parsed, state: state, liveEdge: Timeline(config).liveEdge(at: follower.clock()))
            } catch let error as CommandRequest.Invalid {
                return errorResponse(.unprocessableContent, "\(error.field) \(error.reason)", field: error.field)
            }
            guard case .command(let command) = mapping else {
                if case .nothing(let why) = mapping { return jsonResponse(SCTE35Ignored(channel: channel, ignored: why)) }
                return errorResponse(.internalServerError, "unreachable")
            }
            let caller: Caller
            switch await access.authorize(request, .command(command.apiName, channel: channel)) {
            case .failure(let refusal): return refusal.response
            case .success(let found): caller = found
            }
            // The same section sent twice for the same break is one command, unless the caller names its own key.
            // The target break is part of the id: once the break a cue placed is over, the same bytes are a new cue
            // that places a new break (`scte35-<event>-2`), not a reuse of the first command's id.
            return await execute(
                command, channel: channel, request: request, actor: caller.actor(claimed: nil), source: "scte35",
                reason: parsed.reason, handler: handler, follower: follower,
                commandID: request.headers[.init("Idempotency-Key")!]
                    ?? "scte35:\(channel):\(command.targetBreakID ?? "-"):\(sha256Hex(section.bytes))")
        }
    }
}

extension Routes {
    /// The refusal when the caller may send none of `commands` on `channel`, else nil.
    static func refusalOfEveryCommand(
        _ commands: [String], channel: String, request: Request, access: AccessPolicy
    ) async -> AccessRefusal? {
        var first: AccessRefusal?
        for command in commands {
            switch await access.authorize(request, .command(command, channel: channel)) {
            case .success: return nil
            case .failure(let refusal): first = first ?? refusal
            }
        }
        return first
    }
}

extension Cue {
    /// The command types (`apiName`s) this cue may map to, whatever the channel's state.
    var possibleCommands: [String] {
        switch self {
        case .out: ["place_break"]
        case .in, .cancel: ["cancel_current_event", "cancel_break"]
        }
    }
}

struct SCTE35Ignored: Encodable {
    var channel: String
    var ignored: String
}

extension ScheduleCommand {
    /// The break a break command is about.
    var targetBreakID: String? {
        switch self {
        case .placeBreak(let place): place.id
        case .setPlayoutLimit(let id, _), .returnFromBreak(let id, _), .cancelBreak(let id): id
        case .cancelCurrentEvent, .createChannel, .updateRenditions: nil
        }
    }

    /// The command type tokens are scoped by (the `command` values of `POST …/commands`).
    var apiName: String {
        switch self {
        case .placeBreak: "place_break"
        case .setPlayoutLimit: "set_playout_limit"
        case .cancelCurrentEvent, .returnFromBreak: "cancel_current_event"
        case .cancelBreak: "cancel_break"
        case .createChannel, .updateRenditions: "channel"
        }
    }
}
