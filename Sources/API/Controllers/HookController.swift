import Foundation
import Hummingbird
import Projector
import Schedule

/// `POST /hooks/{name}`: signed feed payloads turned into commands by the hooks file's rules. The signature is the
/// credential (no token, so no authenticator); see ``HookSet``.
struct HookController {
    let hooks: HookSet
    let executor: CommandExecutor
    let follower: ChannelFollower

    func addRoutes(to group: RouterGroup<APIRequestContext>) {
        group.post("/hooks/{name}", use: deliver)
    }

    @Sendable func deliver(_ request: Request, context: APIRequestContext) async throws -> Response {
        let name = try context.identifier("name") { APIError(.notFound, "no hook is named \($0)") }
        guard let hook = hooks.hooks[name] else { throw APIError(.notFound, "no hook is named \(name)") }
        let body = Array(buffer: try await request.body.collect(upTo: 64 * 1024))
        let timestamp = request.headers[.cuelineTimestamp]
        let signature = request.headers[.cuelineSignature]
        if let rejection = hook.rejection(body: body, timestamp: timestamp, signature: signature, now: follower.clock())
        {
            throw APIError(.unauthenticated, rejection.reason, field: rejection.field)
        }
        guard let payload = try? JSONDecoder().decode(JSONValue.self, from: Data(body)) else {
            throw APIError(.invalid, "the payload is not JSON", field: "body")
        }
        // A key given twice: the decoder keeps one silently, and a proxy or a rule reading the other would see
        // another payload than this server (the command API refuses the same).
        if let problem = StrictKeys.problem(body, .anyOnce) { throw problem.error }
        let matched: (channel: ChannelID, command: JSONValue)
        let parsed: CommandRequest
        let command: ScheduleCommand
        let commandID: String
        do {
            commandID = try hook.commandID(payload: payload, timestamp: timestamp ?? "", body: body)
            guard let found = try hook.match(payload) else {
                return jsonResponse(
                    HookIgnored(hook: name.rawValue, ignored: "no rule of hook \(name) matches this payload"))
            }
            matched = found
            parsed = try decodeJSON(CommandRequest.self, try JSONEncoder().encode(matched.command)).get()
            command = try parsed.scheduleCommand()
        } catch let invalid as CommandRequest.Invalid {
            throw APIError(invalid)
        } catch {
            throw APIError(.invalid, "the rule's command does not decode with this payload: \(error)", field: "body")
        }
        // Replays inside the window are harmless: the same signed delivery is one command.
        return try await executor.execute(
            command, channel: matched.channel, request: request, actor: "hook:\(name)",
            source: CommandSource.hook.rawValue, reason: parsed.reason,
            commandID: commandID)
    }
}
