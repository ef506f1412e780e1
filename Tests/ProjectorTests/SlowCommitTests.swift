import EventStore
import Foundation
import HLS
import Postgres
import Projector
import Schedule
import Synchronization
import TestSupport
import Testing

/// Issue 11, defect 12: with a fixed 50 ms effect delay, an event whose commit came later than its effect instant
/// reached the followers late, and replay disagreed with what they had served meanwhile.
@Suite("Slow commits", .enabled(if: TestDatabase.isConfigured, "needs DATABASE_URL (scripts/test.sh)"))
struct SlowCommitTests {
    private static func wallClock() -> Timestamp {
        Timestamp(milliseconds: Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)))
    }

    /// A database of its own (a held commit locks the log head, which would stall other tests' appends), a channel
    /// with 1 s segments, and a follower refreshing its watermark every 20 ms that already serves the channel.
    private static func servedChannel(_ channel: ChannelID) async throws -> (
        url: String, store: PostgresEventStore, follower: ChannelFollower, refresher: Task<Void, Never>
    ) {
        let url = try await TestDatabase.makeFreshDatabase()
        _ = try await Migrator.load(directory: TestDatabase.migrationsDirectory).migrate(url: url)
        let store = PostgresEventStore(pool: PostgresPool(url: url, maximumConnections: 4))
        let config = ChannelConfig(
            id: channel, segmentDurationMilliseconds: 1000, windowSegments: 6,
            epoch: wallClock().adding(milliseconds: -20_000),
            renditions: [RenditionConfig(name: "main", bandwidth: 1_000_000, uriTemplate: "seg{n}.ts")],
            publicBaseURL: "http://127.0.0.1:8080")
        _ = try await CommandHandler(store: store, clock: wallClock)
            .handle(
                .createChannel(config), channel: channel,
                context: CommandContext(commandID: "create", actor: "op", source: "test"))
        let follower = ChannelFollower(store: store, wakeups: { AsyncStream { _ in } }, clock: wallClock)
        let refresher = Task {
            while !Task.isCancelled {
                try? await follower.catchUp()
                try? await Task.sleep(for: .milliseconds(20))
            }
        }
        // Served once the creation's effect instant is known (it was decided 50 ms after it arrived).
        let ready = ContinuousClock.now + .seconds(5)
        while (try? follower.mediaPlaylist(channel, rendition: "main")) == nil, ContinuousClock.now < ready {
            try await Task.sleep(for: .milliseconds(10))
        }
        return (url, store, follower, refresher)
    }

    @Test("a commit held 2 s: every playlist served meanwhile, and after, replays to the same bytes")
    func commitSlowerThanTheEffectDelay() async throws {
        let channel: ChannelID = "slow"
        let (url, store, follower, refresher) = try await Self.servedChannel(channel)
        defer { refresher.cancel() }

        // The slow writer: the append function runs (its clock check passes), then the commit waits 2 s, long past
        // the decision instant. A loaded machine may be late for the check itself: then it decides again, later.
        func request(decided: Timestamp) -> AppendRequest {
            let placed = EventCodec.encode(
                .breakPlaced(
                    BreakSpec(
                        id: "brk-slow", start: decided.adding(milliseconds: 30_000),
                        plannedDurationMilliseconds: 10_000,
                        asset: .uri("https://ads.example/slow.m3u8"), options: InterstitialOptions())))
            return AppendRequest(
                channel: channel, expectedVersion: .exactly(1),
                events: [NewEvent(type: placed.type, schemaVersion: placed.schemaVersion, payload: placed.payload)],
                command: CommandMetadata(
                    commandID: "slow-commit", request: "slow", actor: "op", source: "test", decidedAt: decided))
        }
        let writer = Task { () throws -> AppendResult in
            let connection = try await PostgresConnection.connect(url: url)
            defer { connection.close() }
            for attempt in 1...5 {
                do {
                    return try await connection.withTransaction { connection in
                        let result = try await PostgresEventStore.append(
                            request(decided: Self.wallClock().adding(milliseconds: 500 * Int64(attempt))),
                            on: connection)
                        // A slow commit, not an idle client: cueline_append ends a session idle in its transaction
                        // after 1 s (Migrations/0013), so the wait is one statement that lifts that first.
                        try await connection.query(
                            "SELECT set_config('idle_in_transaction_session_timeout', '0', true), pg_sleep(2)")
                        return result
                    }
                } catch StoreError.lateDecision {
                    continue
                }
            }
            throw StoreError.database("the machine is too loaded to take a decision time ahead of the database clock")
        }
        // What viewers are served while the commit is held, and after it lands (until the break shows, or 10 s).
        var served: [(tick: Timestamp, text: String)] = []
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            if let (text, _, tick) = try? follower.mediaPlaylist(channel, rendition: "main"), served.last?.tick != tick
            {
                served.append((tick, text))
                if text.contains("brk-slow") { break }
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        let decided = try await writer.value.events[0].decidedAt

        // The check has to see both sides: ticks before the event took effect, and the event once served.
        #expect(served.contains { $0.tick < decided }, "served ticks \(served.map(\.tick)), decided \(decided)")
        #expect(served.contains { $0.tick >= decided && $0.text.contains("brk-slow") })
        // The wall clock passed the effect instant long before the commit: a follower serving it would lie.
        let events = try await Replay.events(channel, from: store)
        var differing: [Timestamp] = []
        for sample in served {
            let replayed = try Replay.playlist(channel, events, at: sample.tick, rendition: "main", multivariant: false)
            if replayed != sample.text { differing.append(sample.tick) }
        }
        #expect(
            differing.isEmpty,
            "served ≠ replay at \(differing.count) of \(served.count) ticks, first \(differing.first.map(\.iso8601) ?? "")"
        )
    }

    @Test("a transaction holding the log head for 12 s freezes playlists for at most the watermark's 5 s wait")
    func logHeadHeld() async throws {
        // Red team: BEGIN; cueline_append(…); pg_sleep(15) as the service role froze every channel's playlists.
        let (url, _, follower, refresher) = try await Self.servedChannel("held")
        defer { refresher.cancel() }
        let held = ContinuousClock.now
        let holder = Task {
            let connection = try await PostgresConnection.connect(url: url)
            defer { connection.close() }
            try await connection.query("BEGIN")
            try await connection.query("UPDATE cueline_log_head SET position = position")
            try await connection.query("SELECT pg_sleep(12)")
            try await connection.query("ROLLBACK")
        }
        // While the head is held the served tick falls behind; once the watermark has waited its 5 s, playlists
        // go on by the wall clock though the head is still held.
        var worstLag: Int64 = 0
        var caughtUpWhileHeld = false
        while ContinuousClock.now < held + .milliseconds(11_000) {
            let served = try follower.mediaPlaylist("held", rendition: "main")
            let lag = Self.wallClock().milliseconds(since: served.tick)
            worstLag = max(worstLag, lag)
            if worstLag >= 2000, lag < 1000 { caughtUpWhileHeld = true }
            try await Task.sleep(for: .milliseconds(50))
        }
        try await holder.value
        #expect(worstLag >= 2000, "the held head did hold the watermark back (worst lag \(worstLag) ms)")
        #expect(
            caughtUpWhileHeld,
            "playlists went on by the wall clock while the head was still held (worst lag \(worstLag) ms)")
    }

    @Test("a decision time the database clock has passed is refused, and the handler decides again with a later one")
    func lateDecisionIsRetried() async throws {
        let store = TestDatabase.makeStore()
        let channel = ChannelID("late-" + UUID().uuidString.prefix(8).lowercased())!
        // This machine's clock, as the handler sees it, is 2 s behind the database's.
        let behind: @Sendable () -> Timestamp = { Self.wallClock().adding(milliseconds: -2000) }
        let handler = CommandHandler(store: store, clock: behind)
        let config = ChannelConfig(
            id: channel, segmentDurationMilliseconds: 2000, windowSegments: 5,
            epoch: Self.wallClock().adding(milliseconds: -60_000),
            renditions: [RenditionConfig(name: "main", bandwidth: 1_000_000, uriTemplate: "seg{n}.ts")],
            publicBaseURL: "http://127.0.0.1:8080")
        let before = Self.wallClock()
        let outcome = try await handler.handle(
            .createChannel(config), channel: channel,
            context: CommandContext(commandID: "c", actor: "op", source: "test"))
        // Decided after the database clock, not at the stale local time.
        #expect(outcome.result.events[0].decidedAt > before)
        #expect(try await store.version(of: channel) == 1)
    }
}
