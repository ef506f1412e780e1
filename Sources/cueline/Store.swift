import ArgumentParser
import EventStore
import Foundation
import HLS
import Logging
import Postgres
import Projector
import Schedule

/// Options of the commands that change a schedule.
struct CommandOptions: ParsableArguments {
    @Option(help: "Who is acting (recorded on the event); defaults to $USER. With --server, the token's name is.")
    var actor: String?

    @Option(help: "Why (recorded on the event).")
    var reason: String?

    @Option(name: .customLong("command-id"), help: "Idempotency key: retrying with the same id never applies twice.")
    var commandID: String?

    @Flag(help: "Print the result as JSON.")
    var json = false

    @Option(help: "Send the command through this server's HTTP API instead of the database (or CUELINE_SERVER).")
    var server: String?

    @Option(help: "API token for --server (or CUELINE_TOKEN); see cueline token create.")
    var token: String?

    /// Who, why and the command id are stored and printed: no control characters, bounded (exit code 2 otherwise).
    func validate() throws {
        try checkPlainText(actor, option: "actor", maximumLength: Limits.labelBytes)
        try checkPlainText(reason, option: "reason")
        try checkPlainText(commandID, option: "command-id", maximumLength: Limits.labelBytes)
    }

    /// The remote API when `--server` or CUELINE_SERVER is given.
    var remote: RemoteAPI? { RemoteAPI.configured(server: server, token: token) }

    /// Refuses `--server` (or CUELINE_SERVER) for a command the HTTP API does not take (channel create and
    /// update-renditions: channels are set up against the database), before anything is read: exit 2.
    func requireDatabase(for command: String) throws {
        guard remote == nil else {
            throw CLIError(
                message: "\(command) needs the database; leave out --server (and unset CUELINE_SERVER)",
                exitCode: ExitStatus.usage)
        }
    }

    func context() -> CommandContext {
        CommandContext(
            commandID: commandID ?? UUID().uuidString.lowercased(),
            actor: actor ?? ProcessInfo.processInfo.environment["USER"] ?? "operator",
            source: CommandSource.cli.rawValue, reason: reason)
    }
}

/// Opens the store and checks its schema: one place for every database-backed command.
///
/// One-shot commands use the pool without running it as a service: it lends connections all the same (opened on
/// demand, at most 4), and they close when the process ends. Only `cueline serve` runs it (Serve.swift).
func openStore(_ database: DatabaseOptions) async throws -> PostgresEventStore {
    let store = PostgresEventStore(pool: PostgresPool(url: try database.url(), maximumConnections: 4))
    try await store.checkSchema()
    return store
}

/// Every event of a channel, in version order.
func loadEvents(_ channel: ChannelID, from store: any EventStore) async throws -> [RecordedEvent] {
    try await store.events(of: channel)
}
