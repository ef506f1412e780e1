import EventStore
import HLS
import TestSupport
import Foundation
import Testing

@Suite("PostgreSQL event log", .enabled(if: TestDatabase.isConfigured, "needs DATABASE_URL (scripts/test.sh)"))
struct PostgresOnlyTests {
    @Test("UPDATE, DELETE and TRUNCATE on the log are refused", arguments: [
        "UPDATE cueline_events SET actor = 'mallory' WHERE channel = $1",
        "DELETE FROM cueline_events WHERE channel = $1",
        "TRUNCATE cueline_events",
        "UPDATE cueline_commands SET request_hash = 'x' WHERE channel = $1",
        "DELETE FROM cueline_commands WHERE channel = $1",
        "TRUNCATE cueline_commands CASCADE",
    ])
    func immutable(statement: String) async throws {
        let store = TestDatabase.makeStore()
        let channel = uniqueChannel()
        let appended = try await store.append(makeRequest(channel: channel, expected: .noStream))
        let connection = try await PostgresConnection.connect(url: TestDatabase.url!)
        defer { connection.close() }
        do {
            try await connection.query(PostgresQuery(sql: statement, binds: statement.contains("$1") ? [channel] : []))
            Issue.record("\(statement) succeeded on the append-only log")
        } catch let error as PostgresError {
            #expect(error.sqlState == "42501")
            #expect(error.message.contains("append-only"))
        }
        #expect(try await store.readStream(channel, after: 0, limit: 10) == appended.events)
    }

    @Test("the service role can append and read but cannot alter the log, even by disabling the triggers")
    func leastPrivilege() async throws {
        let connection = try await PostgresConnection.connect(url: TestDatabase.url!)
        defer { connection.close() }
        try await connection.query("SET ROLE cueline_app")
        let channel = uniqueChannel()
        // Outside a transaction the append is refused: its statements would commit one by one.
        await #expect(throws: StoreError.self) {
            try await PostgresEventStore.append(makeRequest(channel: channel, expected: .noStream), on: connection)
        }
        let appended = try await connection.withTransaction {
            try await PostgresEventStore.append(makeRequest(channel: channel, expected: .noStream), on: $0)
        }
        #expect(appended.events.count == 1)
        for statement in ["ALTER TABLE cueline_events DISABLE TRIGGER ALL", "DROP TABLE cueline_events", "UPDATE cueline_events SET actor = 'x'", "DELETE FROM cueline_commands"] {
            do {
                try await connection.query(PostgresQuery(sql: statement))
                Issue.record("cueline_app could run \(statement)")
            } catch let error as PostgresError {
                #expect(error.sqlState == "42501" || error.sqlState == "42P01", "\(statement): \(error)")
            }
        }
    }

    @Test("an append sends a NOTIFY hint that a listener receives")
    func notify() async throws {
        let store = TestDatabase.makeStore()
        let listener = PostgresListener(url: TestDatabase.url!, channel: PostgresEventStore.notifyChannel)
        defer { listener.stop() }
        var events = listener.events().makeAsyncIterator()
        #expect(await events.next() == .listening)
        let channel = uniqueChannel()
        let result = try await store.append(makeRequest(channel: channel, expected: .noStream))
        let expected = "\(channel) \(result.events[0].position)"
        // Other tests append concurrently: wait for ours among the hints.
        let deadline = ContinuousClock.now + .seconds(10)
        var received = false
        while ContinuousClock.now < deadline, let event = await events.next() {
            if event == .notification(payload: expected) {
                received = true
                break
            }
        }
        #expect(received)
    }

    @Test("a store on an unmigrated database says to run cueline migrate")
    func schemaOutdated() async throws {
        let url = try await TestDatabase.makeFreshDatabase()
        let store = PostgresEventStore(pool: PostgresPool(url: url))
        await #expect(throws: StoreError.schemaOutdated(applied: 0, required: PostgresEventStore.requiredMigration)) {
            try await store.checkSchema()
        }
        _ = try await Migrator.load(directory: TestDatabase.migrationsDirectory).migrate(url: url)
        try await store.checkSchema()
    }

    @Test("an unreachable database is reported as unavailable, naming the target")
    func unreachable() async throws {
        let store = PostgresEventStore(pool: PostgresPool(url: "postgresql://postgres@127.0.0.1:1/nothing"))
        do {
            _ = try await store.headPosition()
            Issue.record("reading from a closed port succeeded")
        } catch let StoreError.unavailable(message) {
            #expect(message.contains("127.0.0.1:1"))
        }
    }
}
