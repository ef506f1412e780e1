import API
import ArgumentParser
import EventStore
import Foundation
import Hummingbird
import Logging
import Projector

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Serve the channels' playlists over HTTP, following the event log.")

    @Option(help: "Address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "Port to listen on.")
    var port = 8080

    @Option(name: .customLong("media-dir"), help: "Serve the files under this directory at /media (demo segments, ads).")
    var mediaDir: String?

    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        var logger = Logger(label: "cueline.serve")
        logger.logLevel = Logger.Level(rawValue: ProcessInfo.processInfo.environment["CUELINE_LOG_LEVEL"] ?? "") ?? .info
        let store = PostgresEventStore(pool: PostgresPool(url: database.url, maximumConnections: 8), logger: logger)
        try await store.checkSchema()
        let follower = ChannelFollower(
            store: store, wakeups: ChannelFollower.postgresWakeups(url: database.url), clock: wallClock, logger: logger)
        try await follower.catchUp()
        let handler = CommandHandler(store: store, clock: wallClock, logger: logger)
        let router = Routes.router(follower: follower, handler: handler, mediaDirectory: mediaDir)
        let app = Application(
            router: router, configuration: .init(address: .hostname(host, port: port), serverName: "cueline"),
            services: [follower, RelayPoller(follower: follower, logger: logger)],
            onServerRunning: { [logger] _ in logger.notice("serving", metadata: ["address": "http://\(host):\(port)"]) },
            logger: logger)
        try await app.runService()
    }
}
