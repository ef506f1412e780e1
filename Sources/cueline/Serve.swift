import API
import ArgumentParser
import EventStore
import Foundation
import Hummingbird
import Logging
import Projector

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Serve the channels' playlists over HTTP, following the event log.")

    @Option(help: "Address to listen on (CUELINE_HOST; default 127.0.0.1).")
    var host: String?

    @Option(help: "Port to listen on (CUELINE_PORT; default 8080).")
    var port: Int?

    @Option(name: .customLong("media-dir"), help: "Serve the files under this directory at /media (CUELINE_MEDIA_DIR).")
    var mediaDir: String?

    @Option(name: .customLong("log-level"), help: "trace … critical (CUELINE_LOG_LEVEL; default info).")
    var logLevel: String?

    @Option(name: .customLong("log-format"), help: "text or json (CUELINE_LOG_FORMAT; default text).")
    var logFormat: String?

    @Flag(name: .customLong("unauthenticated-commands"), help: "No tokens: accept commands and JSON reads from anyone who can reach the port (closed networks and demos only).")
    var unauthenticatedCommands = false

    @OptionGroup var database: DatabaseOptions

    func configuration() throws -> Configuration {
        try database.configuration(flags: [
            "host": host, "port": port.map(String.init), "media_dir": mediaDir, "log_level": logLevel, "log_format": logFormat,
        ])
    }

    @Option(help: "Feed hooks file (JSON): the rules that turn signed feed payloads into commands at POST /hooks/{name}.")
    var hooks: String?

    func run() async throws {
        let settings = try configuration()
        let (host, port, url) = (settings.host, settings.port, settings.databaseURL ?? "")
        let logger = Logger(label: "cueline.serve")
        let pool = PostgresPool(url: url, maximumConnections: 8)
        let store = PostgresEventStore(pool: pool, logger: logger)
        try await store.checkSchema()
        let follower = ChannelFollower(
            store: store, wakeups: ChannelFollower.postgresWakeups(url: url), clock: wallClock, logger: logger)
        try await follower.catchUp()
        let handler = CommandHandler(store: store, clock: wallClock, logger: logger, knownState: { follower.followedState(of: $0) })
        let router = Routes.router(
            follower: follower, handler: handler, mediaDirectory: settings.mediaDir, metrics: { Cueline.metrics.emitToString() },
            hooks: try hooks.map { try HookSet(file: $0, environment: ProcessInfo.processInfo.environment) } ?? HookSet(),
            access: unauthenticatedCommands ? .open : .tokens(TokenCache(directory: PostgresTokenDirectory(pool: pool, logger: logger))))
        let app = Application(
            router: router, configuration: .init(address: .hostname(host, port: port), serverName: "cueline"),
            services: [follower, RelayPoller(follower: follower, logger: logger)],
            onServerRunning: { [logger] _ in logger.notice("serving", metadata: ["address": "http://\(host):\(port)"]) },
            logger: logger)
        try await app.runService()
    }
}
