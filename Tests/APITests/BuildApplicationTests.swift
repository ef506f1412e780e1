import API
import EventStore
import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
import HLS
import Hummingbird
import Logging
import NIOCore
import Postgres
import Projector
import Schedule
import ServiceLifecycle
import TestSupport
import Testing

/// Issue 32: the server is assembled in the library (`buildApplication`), as `cueline serve` runs it.
@Suite("The assembled server", .enabled(if: TestDatabase.isConfigured, "needs DATABASE_URL (scripts/test.sh)"))
struct BuildApplicationTests {
    @Test(
        "buildApplication serves a channel written to its database, and a command through its HTTP API, on a port it picks"
    )
    func servesFromTheDatabase() async throws {
        let url = try await TestDatabase.makeFreshDatabase()
        _ = try await Migrator.load(directory: TestDatabase.migrationsDirectory).migrate(url: url)
        let clock: @Sendable () -> Timestamp = {
            Timestamp(milliseconds: Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)))
        }
        let store = PostgresEventStore(pool: PostgresPool(url: url, maximumConnections: 2))
        let config = ChannelConfig(
            id: "built", segmentDurationMilliseconds: 1000, windowSegments: 4,
            epoch: clock().adding(milliseconds: -20_000),
            renditions: [RenditionConfig(name: "main", bandwidth: 1_000_000, uriTemplate: "seg{n}.ts")],
            publicBaseURL: "http://127.0.0.1:8080")
        _ = try await CommandHandler(store: store, clock: clock).handle(
            .createChannel(config), channel: "built", context: CommandContext(commandID: "c", actor: "t", source: "t"))

        var settings = ServerSettings(databaseURL: url, clock: clock)
        settings.port = 0
        settings.unauthenticatedCommands = true
        let (ports, reported) = AsyncStream<Int>.makeStream()
        let logger = Logger(label: "cueline.tests.build")
        let app = try await buildApplication(settings, logger: logger) { channel in
            reported.yield(channel.localAddress?.port ?? 0)
        }
        let group = ServiceGroup(configuration: .init(services: [app], logger: logger))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            var iterator = ports.makeAsyncIterator()
            let port = try #require(await iterator.next())
            let base = "http://127.0.0.1:\(port)"
            // The channel is in effect 50 ms after its creation was decided (the effect delay): asked until then.
            var (playlist, response) = try await URLSession.shared.data(
                from: URL(string: "\(base)/channels/built/main.m3u8")!)
            let deadline = ContinuousClock.now + .seconds(5)
            while (response as? HTTPURLResponse)?.statusCode == 404, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
                (playlist, response) = try await URLSession.shared.data(
                    from: URL(string: "\(base)/channels/built/main.m3u8")!)
            }
            #expect((response as? HTTPURLResponse)?.statusCode == 200)
            #expect(String(decoding: playlist, as: UTF8.self).hasPrefix("#EXTM3U"))
            var request = URLRequest(url: URL(string: "\(base)/channels/built/commands")!)
            request.httpMethod = "POST"
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = Data(
                #"{"command":"place_break","id":"b1","in":30,"duration":10,"asset_uri":"https://ads.example/a.m3u8"}"#
                    .utf8)
            let (_, placed) = try await URLSession.shared.data(for: request)
            #expect((placed as? HTTPURLResponse)?.statusCode == 201)
            #expect(try await store.version(of: "built") == 2)
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
    }
}
