import API
import EventStore
import Foundation
import HLS
import Projector
import Schedule
import Wire

/// What a schedule command answered, from the database or through the API: the one value both paths print, so
/// `--json`, the text line and the exit code are the same either way.
struct CommandAnswer {
    var response: CommandResponse
    /// The response's events, decoded.
    var events: [ScheduleEvent]

    init(_ response: CommandResponse) throws {
        self.response = response
        events = try response.scheduleEvents()
    }

    var version: Int64 { response.version }
    var note: String? { response.note }
}

/// Sends a schedule command to the database, or to `--server`, and prints the answer: `--json` as the API's
/// `CommandResponse`, else `describe`'s line. A refusal exits 3 when someone else changed the break first.
func sendCommand(
    _ command: ScheduleCommand, channel: ChannelID, database: DatabaseOptions, options: CommandOptions,
    describe: (CommandAnswer) -> String
) async throws {
    let response: CommandResponse
    if let remote = options.remote {
        response = try await remote.send(command, channel: channel, options: options)
    } else {
        response = try await handle(command, channel: channel, database: database, options: options)
    }
    if options.json {
        try printJSON(response)
    } else {
        print(
            describe(try CommandAnswer(response))
                + (response.replayed ? " (already applied: this is the original result)" : ""))
    }
}

/// The database path: the command handler the server runs, answered as the server answers.
private func handle(_ command: ScheduleCommand, channel: ChannelID, database: DatabaseOptions, options: CommandOptions)
    async throws -> CommandResponse
{
    let store = try await openStore(database)
    let handler = CommandHandler(
        store: store, refusals: PostgresRefusalStore(pool: store.pool), clock: wallClock, assets: AssetPlaylists())
    do {
        let outcome = try await handler.handle(command, channel: channel, context: options.context())
        return CommandResponse(outcome, channel: channel, command: command)
    } catch {
        switch error {
        case .refused(let refusal):
            // The exit code the same refusal gets through the API: one map (ErrorCategory) for both paths.
            throw CLIError(message: refusal.description, exitCode: ErrorCategory(error).exitCode)
        case .store(let storeError):
            // The same map for the log's failures: a conflict exits 3, anything else 1, as through --server.
            throw CLIError(message: storeError.description, exitCode: ErrorCategory(error).exitCode)
        }
    }
}
