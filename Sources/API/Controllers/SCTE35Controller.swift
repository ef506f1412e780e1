import EventStore
import Hummingbird
import Projector
import SCTE35
import Schedule

/// `POST /channels/{channel}/scte35`: a splice_info_section from an encoder or a playout system, decided by the
/// channel's SCTE-35 policy (`decideIngest`) and kept in the log as received, whatever it did.
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
        let ingest: SCTE35Ingest
        do {
            ingest = try parsed.ingest(section)
        } catch {
            throw APIError(error)
        }
        guard let state = follower.followedState(of: channel), state.config != nil else {
            throw APIError(.unknownChannel(channel))
        }
        // The command types the section's cues can become are authorized before they are decided against the
        // channel's schedule: a viewer, or a token without those commands, learns nothing of it. A section the policy
        // ignores is still written to the log: it takes a token that may send some command to the channel.
        let policy = state.scte35Policy ?? .standard
        let cues = policy.read(section).cues
        _ = try context.caller(
            forAnyOf: (cues.isEmpty ? ScheduleCommand.Kind.api.map(\.rawValue) : cues.flatMap(\.possibleCommands))
                .map { .command($0, channel: channel) })
        // Decided here as the log will decide it, for the command it becomes (its token scope) and the break it
        // names (the idempotency key); the log's decision, a few milliseconds later, is the one that counts. One that
        // would be refused goes on all the same, to be refused there and kept in the refusal records.
        let preview = try? decideIngest(
            ingest, policy: policy, state: state, now: EffectiveTime.decisionTime(arrival: follower.clock()))
        let scope: String? =
            switch preview?.received.outcome {
            case .placed?: ScheduleCommand.Kind.placeBreak.rawValue
            case .ended?: ScheduleCommand.Kind.cancelCurrentEvent.rawValue
            case .cancelled?: ScheduleCommand.Kind.cancelBreak.rawValue
            case .ignored?, nil: nil
            }
        let caller =
            if let scope {
                try context.caller(for: .command(scope, channel: channel))
            } else {
                try context.caller(forAnyOf: ScheduleCommand.Kind.api.map { .command($0.rawValue, channel: channel) })
            }
        // The same section sent twice for the same break is one command, unless the caller names its own key.
        // The break is part of the id: once the break a cue placed is over, the same bytes are a new cue that places
        // a new break (`scte35-<event>-2`), not a reuse of the first command's id.
        return try await executor.execute(
            .ingestSCTE35(ingest), channel: channel, request: request, actor: caller.actor(claimed: nil),
            source: CommandSource.scte35.rawValue,
            reason: parsed.reason,
            commandID: request.headers[.idempotencyKey]
                ?? "scte35:\(channel):\(preview?.received.breakID?.rawValue ?? "-"):\(sha256Hex(section.bytes))")
    }
}
