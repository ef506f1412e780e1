import EventStore
import Hummingbird
import Projector
import SCTE35
import Schedule

/// `POST /channels/{channel}/scte35`: a splice_info_section from an encoder or a playout system, mapped onto the
/// channel's schedule (``CueMapping``).
struct SCTE35Controller {
    let executor: CommandExecutor
    let follower: ChannelFollower

    func addRoutes(to group: RouterGroup<APIRequestContext>) {
        group.post("/channels/{channel}/scte35", use: cue)
    }

    @Sendable func cue(_ request: Request, context: APIRequestContext) async throws -> Response {
        let channel = try context.channelID()
        // The channel is authorized before anything of it is read: a token scoped to another channel learns
        // nothing of this one's breaks (not even whether it exists).
        _ = try context.caller(for: .read(channel: channel))
        // `section` (base64 or hex) and `asset_uri` or `asset_list`.
        let parsed = try await decodeBody(SCTE35Request.self, request, keys: .scte35) {
            DecodingProblem($0, snakeCase: true).error
        }
        let section: SpliceInfoSection
        do {
            section = try SpliceInfoSection(text: parsed.section)
        } catch {
            throw APIError(.invalid, error.description, field: "section")
        }
        let cues = section.cues
        guard cues.count == 1, let cue = cues.first else {
            if cues.isEmpty {
                return jsonResponse(
                    SCTE35Ignored(
                        channel: channel,
                        ignored: "the section carries no break cue (splice_null, or segmentation that is not a break)"))
            }
            throw APIError(
                .invalid, "the section carries \(cues.count) break cues; send one per section", field: "section")
        }
        // The command types this cue can become are authorized before the cue is mapped against the channel's
        // state: a viewer, or a token without those commands, learns nothing of the schedule.
        _ = try context.caller(forAnyOf: cue.possibleCommands.map { .command($0, channel: channel) })
        guard let state = follower.followedState(of: channel), let config = state.config else {
            throw APIError(.unknownChannel(channel))
        }
        let mapping: CueMapping
        do {
            mapping = try CueMapping.map(
                cue, section: section, request: parsed, state: state,
                liveEdge: Timeline(config).liveEdge(at: follower.clock()))
        } catch {
            throw APIError(error)
        }
        switch mapping {
        case .nothing(let why):
            return jsonResponse(SCTE35Ignored(channel: channel, ignored: why))
        case .command(let command):
            let caller = try context.caller(for: .command(command.apiName, channel: channel))
            // The same section sent twice for the same break is one command, unless the caller names its own key.
            // The target break is part of the id: once the break a cue placed is over, the same bytes are a new cue
            // that places a new break (`scte35-<event>-2`), not a reuse of the first command's id.
            return try await executor.execute(
                command, channel: channel, request: request, actor: caller.actor(claimed: nil),
                source: CommandSource.scte35.rawValue,
                reason: parsed.reason,
                commandID: request.headers[.idempotencyKey]
                    ?? "scte35:\(channel):\(command.targetBreakID?.rawValue ?? "-"):\(sha256Hex(section.bytes))")
        }
    }
}
