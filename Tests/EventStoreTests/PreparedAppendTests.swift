import EventStore
import Postgres
import TestSupport
import Testing

@Suite("Prepared append")
struct PreparedAppendTests {
    /// The append call is parsed once per connection: after several appends on a one-connection pool, the
    /// connection holds exactly one prepared `cueline_append`, and each append still answered its own version.
    @Test("cueline_append is prepared once per connection and reused", .enabled(if: TestDatabase.isConfigured))
    func preparedOnce() async throws {
        let pool = PostgresPool(url: try #require(TestDatabase.url), maximumConnections: 1)
        let store = PostgresEventStore(pool: pool)
        let channel = uniqueChannel("prep")
        var versions: [Int64] = []
        for index in 0..<3 {
            let result = try await store.append(
                makeRequest(
                    channel: channel, expected: index == 0 ? .noStream : .exactly(Int64(index)),
                    events: [NewEvent(type: "Noted", payload: "{}")], at: wallClockMilliseconds() + 15_000))
            versions.append(result.version)
        }
        #expect(versions == [1, 2, 3])
        let count = try await pool.withConnection { connection in
            try await connection.query("SELECT count(*) FROM pg_prepared_statements WHERE name = 'cueline_append'")
                .scalar()
        }
        #expect(count == "1")
    }
}
