import EventStore
import Foundation
import HLS
import Projector
import Schedule
import TestSupport
import Testing

@Suite("Upgrading the schema", .enabled(if: TestDatabase.isConfigured, "needs DATABASE_URL (scripts/test.sh)"))
struct UpgradeTests {
    private func renderTicks(_ store: PostgresEventStore, _ ticks: [Double]) async throws -> [String] {
        let state = try await ChannelLoader.load("demo", from: store)
        return try ticks.map { seconds in
            let rendered = try ChannelFollower.render(config: state.config!, state: state, tick: epoch.adding(milliseconds: Int64(seconds * 1000)))
            return rendered.multivariant + rendered.playlists.sorted { $0.key < $1.key }.map(\.value).joined()
        }
    }

    @Test("a log written under the previous migration set replays to identical bytes after migrating")
    func upgradeKeepsHistory() async throws {
        let url = try await TestDatabase.makeFreshDatabase()
        let all = try Migrator.load(directory: TestDatabase.migrationsDirectory)
        let previous = Migrator(migrations: Array(all.migrations.dropLast()), directory: "previous set")
        _ = try await previous.migrate(url: url)

        let store = PostgresEventStore(pool: PostgresPool(url: url))
        let (handler, clock) = try await channelWithBreak(store)
        _ = try await handler.handle(
            .placeBreak(PlaceBreak(id: "brk-2", start: .at(epoch.adding(milliseconds: 200_000)), plannedDurationMilliseconds: 30_000, asset: .uri("https://a.example/ad.m3u8"))),
            channel: "demo", context: context())
        clock.set(103)
        _ = try await handler.handle(.cancelCurrentEvent, channel: "demo", context: context())
        clock.set(110)
        _ = try await handler.handle(.cancelBreak(id: "brk-2"), channel: "demo", context: context())
        let ticks: [Double] = [60, 96, 103.5, 108, 126, 150]
        let before = try await renderTicks(store, ticks)

        let report = try await all.migrate(url: url)
        #expect(report.applied == [all.migrations.last!.name])
        try await store.checkSchema()
        let after = try await renderTicks(store, ticks)
        #expect(after == before)
        #expect(before[2].contains("X-PLAYOUT-LIMIT=12.000"))
    }
}
