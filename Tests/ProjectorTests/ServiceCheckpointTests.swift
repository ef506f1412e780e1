import EventStore
import Foundation
import HLS
import Postgres
@testable import Projector
import Schedule
import TestSupport
import Testing

/// Issue 34, item 7: the first replay of an instant of a long log folded it all (1.28 s for a year) unless an
/// operator's tool had written checkpoints; the server now writes them as it folds, with the service role's rights.
@Suite(
    "Checkpoints written by the server", .enabled(if: TestDatabase.isConfigured, "needs DATABASE_URL (scripts/test.sh)")
)
struct ServiceCheckpointTests {
    static let wallClock: @Sendable () -> Timestamp = {
        Timestamp(milliseconds: Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)))
    }

    /// Gives `cueline_app` a login on this throwaway cluster, once per process: roles are the cluster's, and two
    /// tests altering the role at once fail with "tuple concurrently updated".
    private static let serviceRoleLogin = Task {
        let admin = try await PostgresConnection.connect(url: TestDatabase.url!)
        defer { admin.close() }
        try await admin.query("ALTER ROLE cueline_app LOGIN")
    }

    /// `url` as the service role (`cueline_app`).
    static func asServiceRole(_ url: String) async throws -> String {
        try await serviceRoleLogin.value
        var components = URLComponents(string: url)!
        components.user = "cueline_app"
        return components.string!
    }

    static func count(_ channel: ChannelID, url: String) async throws -> [String] {
        let connection = try await PostgresConnection.connect(url: url)
        defer { connection.close() }
        return try await connection.query(
            "SELECT version || ' ' || written_by FROM cueline_snapshots WHERE channel = \(channel) ORDER BY version"
        ).rows.map { try $0.string(0, "row") }
    }

    /// A fresh migrated database holding `channel`'s log of at least 2,000 events (`SnapshotLog`, seed 9).
    static func longLog(_ channel: ChannelID) async throws -> (url: String, events: [RecordedScheduleEvent]) {
        let url = try await TestDatabase.makeFreshDatabase()
        _ = try await Migrator.load(directory: TestDatabase.migrationsDirectory).migrate(url: url)
        let events = SnapshotLog.make(channel, commands: 4400, seed: 9)
        try #require(events.count >= 2000)
        _ = try await ReplaySnapshotStoreTests.write(events, channel: channel, url: url)
        return (url, events)
    }

    @Test(
        "a follower running as the service role writes a checkpoint every 1,000 events, replay starts from it and names its writer, and a restart writes nothing again"
    )
    func writtenAsTheLogIsFolded() async throws {
        let (url, events) = try await Self.longLog("svc")
        let service = PostgresEventStore(
            pool: PostgresPool(url: try await Self.asServiceRole(url), maximumConnections: 2))
        let expected = (1...(events.count / 1000)).map { "\($0 * 1000) cueline_app" }

        for run in 1...2 {
            let follower = ChannelFollower(
                store: service, wakeups: { AsyncStream { _ in } }, clock: Self.wallClock)
            let writer = try #require(follower.checkpoints)
            let writing = Task { await writer.run() }
            try await follower.catchUp()
            let deadline = ContinuousClock.now + .seconds(10)
            while try await Self.count("svc", url: url) != expected, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(50))
            }
            while !writer.progress.idle, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
            writing.cancel()
            #expect(try await Self.count("svc", url: url) == expected, "run \(run)")
            // The second follower meets the stored ones and offers nothing again.
            #expect(writer.progress.written == (run == 1 ? expected.count : 0), "run \(run)")

            // The log read before the first tick is held until that tick puts it in effect; then its array's capacity
            // is let go of (a server restarted on a year's log held +24 MiB for good: 1.43x a short log's).
            #expect((follower.pendingCapacity(of: "svc") ?? 0) >= events.count - 1)
            _ = try follower.mediaPlaylist("svc", rendition: "720p")
            #expect((follower.pendingCapacity(of: "svc") ?? .max) <= 1024)
        }

        let end = events.last!.attribution.at.adding(milliseconds: 1)
        let (state, checkpoint) = try await Replay.stateAndCheckpoint("svc", store: service, asOf: end)
        #expect(checkpoint?.snapshot.version == Int64(events.count / 1000 * 1000))
        #expect(checkpoint?.writtenBy == "cueline_app")
        #expect(state == fold("svc", events, asOf: end, retention: .window))
    }

    @Test(
        "the service role inserts checkpoints but cannot name their writer, replace or delete them; verify re-folds each and names one that differs"
    )
    func trustedOnlyAsFarAsTheirWriter() async throws {
        let url = try await TestDatabase.makeFreshDatabase()
        _ = try await Migrator.load(directory: TestDatabase.migrationsDirectory).migrate(url: url)
        let events = SnapshotLog.make("trust", commands: 400, seed: 4)
        let recorded = try await ReplaySnapshotStoreTests.write(events, channel: "trust", url: url)
        let service = PostgresEventStore(
            pool: PostgresPool(url: try await Self.asServiceRole(url), maximumConnections: 2))
        let admin = PostgresEventStore(pool: PostgresPool(url: url, maximumConnections: 2))
        #expect(try await Replay.checkpoint("trust", store: admin, every: 100) == events.count / 100)
        let audited = try await Replay.auditCheckpoints(
            "trust", events: recorded, readable: events, store: admin)
        #expect(audited.checked == events.count / 100)
        #expect(audited.mismatched.isEmpty)

        let connection = try await PostgresConnection.connect(url: try await Self.asServiceRole(url))
        defer { connection.close() }
        for statement in [
            "UPDATE cueline_snapshots SET state = state", "DELETE FROM cueline_snapshots",
            "INSERT INTO cueline_snapshots (channel, version, latest_decided_ms, format, state, written_by) VALUES ('x', 1, 0, 1, '{}', 'postgres')",
        ] {
            do {
                try await connection.query(PostgresQuery(sql: statement))
                Issue.record("cueline_app could run \(statement)")
            } catch let error as PostgresError {
                #expect(error.sqlState == "42501", "\(statement): \(error)")
            }
        }

        // A forged checkpoint the hash check cannot catch (the channel's public base URL changed, the log's hash at
        // its version kept), written by the service role in place of the operator's: replay uses it, naming its
        // writer; verify names it.
        var forged = try #require(try await admin.latestSnapshot(of: "trust"))
        let adminConnection = try await PostgresConnection.connect(url: url)
        defer { adminConnection.close() }
        try await adminConnection.query(
            "DELETE FROM cueline_snapshots WHERE channel = 'trust' AND version = \(forged.version)")
        forged.config.publicBaseURL = "https://forged.example"
        try await service.insertSnapshot(forged)
        let end = events.last!.attribution.at.adding(milliseconds: 1)
        let (_, used) = try await Replay.stateAndCheckpoint("trust", store: admin, asOf: end)
        #expect(used?.writtenBy == "cueline_app")
        #expect(used?.snapshot.config.publicBaseURL == "https://forged.example")
        let refolded = try await Replay.auditCheckpoints("trust", events: recorded, readable: events, store: admin)
        #expect(refolded.mismatched.count == 1)
        #expect(
            refolded.mismatched.first?.hasPrefix("version \(forged.version), written by cueline_app: differs") == true,
            "\(refolded.mismatched)")
    }

    @Test(
        "past an event this build cannot read, neither the server nor the operator's tool writes a checkpoint: its fold is not the one a build that reads it reaches"
    )
    func noCheckpointPastAnUnreadableEvent() async throws {
        let (url, _) = try await Self.longLog("skip")
        // A newer build's event at version 500 (its type unknown here), as a rolling upgrade leaves one.
        let admin = try await PostgresConnection.connect(url: url)
        defer { admin.close() }
        try await admin.query("ALTER TABLE cueline_events DISABLE TRIGGER USER")
        try await admin.query(
            "UPDATE cueline_events SET type = 'BreakRescheduled' WHERE channel = 'skip' AND version = 500")
        try await admin.query("ALTER TABLE cueline_events ENABLE TRIGGER USER")

        let service = PostgresEventStore(
            pool: PostgresPool(url: try await Self.asServiceRole(url), maximumConnections: 2))
        let follower = ChannelFollower(store: service, wakeups: { AsyncStream { _ in } }, clock: Self.wallClock)
        let writer = try #require(follower.checkpoints)
        await follower.primeCheckpoints()
        try await follower.catchUp()
        let writing = Task { await writer.run() }
        let deadline = ContinuousClock.now + .seconds(5)
        while !writer.progress.idle, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        writing.cancel()
        #expect(try await Self.count("skip", url: url).isEmpty)
        #expect(writer.progress.written == 0)

        let operatorStore = PostgresEventStore(pool: PostgresPool(url: url, maximumConnections: 2))
        #expect(try await Replay.checkpoint("skip", store: operatorStore, every: 100) == 4, "versions 100-400 only")
    }
}
