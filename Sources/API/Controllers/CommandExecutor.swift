import Foundation
import HTTPTypes
import Hummingbird
import Projector
import Schedule

/// Runs a decided command for the command, SCTE-35 and hook routes alike, and answers as the command API does:
/// 201 with the events (also for a retry with the same `Idempotency-Key`); failures are thrown as ``APIError``
/// (409 for a conflict or a race lost, 422 naming the field, 404, 503).
struct CommandExecutor: Sendable {
    let handler: CommandHandler

    func execute(
        _ command: ScheduleCommand, channel: ChannelID, request: Request, actor: String, source: String,
        reason: String?,
        commandID: String? = nil
    ) async throws(APIError) -> Response {
        let expectedText = request.headers[.ifMatch]?.trimmingCharacters(in: CharacterSet(charactersIn: "\" W/"))
        let expected = expectedText.flatMap { Int64($0) }
        if expectedText != nil, expected == nil {
            throw APIError(.invalid, "If-Match must be the channel version, a whole number", field: "If-Match")
        }
        let key = commandID ?? request.headers[.idempotencyKey] ?? UUID().uuidString.lowercased()
        try Edge.check(actor: actor, reason: reason, commandID: key)
        // An id of the earlier rule takes no command.
        guard channel.isCurrent else { throw APIError.noChannel(channel.rawValue) }
        let commandContext = CommandContext(commandID: key, actor: actor, source: source, reason: reason)
        let outcome: CommandOutcome
        do {
            outcome = try await handler.handle(
                command, channel: channel, context: commandContext, expectedVersion: expected)
        } catch {
            throw APIError(error)
        }
        // Our own write is shown before this answer: the handler folds it within the channel's turn (`applied`, wired
        // to `ChannelFollower.applied` by whoever builds the routes), before the channel's next command is decided.
        var response = jsonResponse(
            CommandResponse(
                channel: channel, version: outcome.result.version, replayed: outcome.result.replayed,
                events: outcome.result.events,
                note: outcome.note(for: command)))
        response.status = .created
        return response
    }
}
