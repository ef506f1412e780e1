import Hummingbird
import Schedule

/// `POST /channels/{channel}/commands`: schedule commands from operators and automation.
struct CommandController {
    let executor: CommandExecutor

    func addRoutes(to group: RouterGroup<APIRequestContext>) {
        group.post("/channels/{channel}/commands", use: command)
    }

    @Sendable func command(_ request: Request, context: APIRequestContext) async throws -> Response {
        let channel = try context.channelID()
        // Who is asking came first (401, the authenticator); what the token may do is checked once the command
        // type is known.
        let parsed = try await decodeBody(CommandRequest.self, request, keys: .command) {
            DecodingProblem($0, snakeCase: true).error
        }
        let caller = try context.caller(for: .command(parsed.command, channel: channel))
        let command: ScheduleCommand
        do {
            command = try parsed.scheduleCommand()
        } catch let invalid as CommandRequest.Invalid {
            throw APIError(invalid)
        }
        return try await executor.execute(
            command, channel: channel, request: request, actor: caller.actor(claimed: parsed.actor),
            source: CommandSource.http.rawValue,
            reason: parsed.reason)
    }
}
