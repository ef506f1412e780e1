import EventStore
import Foundation
import HLS
import Postgres
import Projector
import Schedule
import TestSupport
import Testing

@Suite("Upgrading the schema", .enabled(if: TestDatabase.isConfigured, "needs DATABASE_URL (scripts/test.sh)"))
struct UpgradeTests {
    let ticks: [Double] = [60.1, 96, 103.5, 108, 126, 150]

    private func render(_ events: [RecordedScheduleEvent]) throws -> [String] {
        try ticks.map { seconds in
            let tick = epoch.adding(milliseconds: Int64(seconds * 1000))
            return try Replay.playlist("demo", events, at: tick, rendition: nil, multivariant: true)
                + Replay.playlist("demo", events, at: tick, rendition: "720p", multivariant: false)
                + Replay.playlist("demo", events, at: tick, rendition: "360p", multivariant: false)
        }
    }

    @Test("a log written under the previous migration set replays to identical bytes after migrating")
    func upgradeKeepsHistory() async throws {
        // The history, decided as the service decides it.
        let memory = InMemoryEventStore()
        let (handler, clock) = try await channelWithBreak(memory)
        _ = try await handler.handle(
            .placeBreak(
                PlaceBreak(
                    id: "brk-2", start: .at(epoch.adding(milliseconds: 200_000)), plannedDurationMilliseconds: 30_000,
                    asset: .uri("https://a.example/ad.m3u8"))),
            channel: "demo", context: context())
        clock.set(103)
        _ = try await handler.handle(.cancelCurrentEvent, channel: "demo", context: context())
        clock.set(110)
        _ = try await handler.handle(.cancelBreak(id: "brk-2"), channel: "demo", context: context())
        let history = memory.readStream("demo", after: 0, limit: 100)
        let before = try render(try await Replay.events("demo", from: memory))

        // Written into a database as builds before migration 0010 wrote it (positions from the log head, which that
        // migration turned into a sequence; rows without a hash), then every later migration applied at once. From
        // 0010 on, only cueline_append writes events (rows inserted by hand would not move the sequence).
        let url = try await TestDatabase.makeFreshDatabase()
        let all = try Migrator.load(directory: TestDatabase.migrationsDirectory)
        _ = try await Migrator(migrations: all.migrations.filter { $0.version < 10 }, directory: "previous set")
            .migrate(url: url)
        let connection = try await PostgresConnection.connect(url: url)
        defer { connection.close() }
        for event in history {
            try await connection.query(
                """
                INSERT INTO cueline_events (position, channel, version, type, schema_version, payload, decided_at, actor, source, command_id, reason) \
                VALUES (\(event.position), \(event.channel), \(event.version), \(event.type), \(event.schemaVersion), \(event.payload)::json, \
                \(event.decidedAt.iso8601)::timestamptz, \(event.actor), \(event.source), \(event.commandID), \(event.reason))
                """)
        }
        try await connection.query(
            "INSERT INTO cueline_streams (channel, version) VALUES ('demo', \(history.last!.version))")
        try await connection.query("UPDATE cueline_log_head SET position = \(history.last!.position)")

        let report = try await all.migrate(url: url)
        #expect(report.applied == all.migrations.filter { $0.version >= 10 }.map(\.name))
        let store = PostgresEventStore(pool: PostgresPool(url: url))
        try await store.checkSchema()
        #expect(try render(try await Replay.events("demo", from: store)) == before)
        #expect(before[2].contains("X-PLAYOUT-LIMIT=12.000"))

        // New events chain from there; the old ones are reported as written before tamper evidence.
        // The database now checks decision times against its own clock: decide at the real time.
        let upgraded = CommandHandler(
            store: store, clock: { Timestamp(milliseconds: Int64(Date().timeIntervalSince1970 * 1000)) })
        _ = try await upgraded.handle(
            .placeBreak(
                PlaceBreak(
                    id: "brk-3", start: .inMilliseconds(60_000), plannedDurationMilliseconds: 10_000,
                    asset: .uri("https://a.example/ad.m3u8"))),
            channel: "demo", context: context())
        let chain = HashChain.verify(try await store.readStream("demo", after: 0, limit: 100))
        #expect(chain.unchained == history.count && chain.checked == 1 && chain.firstBreak == nil)
    }
}
