import EventStore
import Foundation
import Postgres
import TestSupport
import Testing

/// Bearer tokens are checked against the table of valid token digests held in memory: a flood of made-up tokens
/// costs the database nothing, and a revoked token stops working, open event streams included, within 5 s.
@Suite(
    "Tokens in memory: made-up tokens never reach the database; revocation ends streams", .serialized,
    .enabled(
        if: TestDatabase.isConfigured && CLIRunner.isAvailable, "needs DATABASE_URL and CUELINE_BIN (scripts/test.sh)"))
struct TokenCacheTests {
    private func setUp() async throws -> (url: String, cli: CLIRunner, server: ServerProcess, wall: String) {
        let url = try await TestDatabase.makeFreshDatabase()
        let cli = CLIRunner(environment: ["DATABASE_URL": url])
        #expect(try cli.run(["migrate"]).status == 0)
        #expect(
            try cli.run([
                "channel", "create", "one", "--segment-duration", "1", "--window", "6", "--rendition",
                "720p,1000000,720p/seg{n}.ts",
            ]).status == 0)
        let wall = try cli.run(["token", "create", "wall", "--role", "viewer"]).stdout.trimmingCharacters(
            in: .whitespacesAndNewlines)
        let server = try ServerProcess(databaseURL: url)
        try await server.waitUntilReady()
        return (url, cli, server, wall)
    }

    /// Scans of `cueline_tokens` so far (every lookup or load of the table is one).
    private func tokenTableScans(_ url: String) async throws -> Int {
        let connection = try await PostgresConnection.connect(url: url)
        defer { connection.close() }
        let rows = try await connection.query(
            "SELECT (coalesce(seq_scan, 0) + coalesce(idx_scan, 0))::text FROM pg_stat_user_tables WHERE relname = 'cueline_tokens'"
        )
        return Int(rows.rows.first?.first.flatMap { $0 } ?? "") ?? -1
    }

    private static func madeUpToken() -> String {
        "cue_" + (0..<64).map { _ in String("0123456789abcdef".randomElement()!) }.joined()
    }

    @Test(
        "300 made-up tokens are 401 without a database lookup each; malformed ones are refused as such; a new token works at once"
    )
    func madeUpTokens() async throws {
        let (url, cli, server, wall) = try await setUp()
        defer { server.stop() }
        let path = "/channels/one/schedule"
        #expect(
            RawHTTP.get(port: server.port, path: path, headers: ["Authorization": "Bearer \(wall)"]).1.status == 200)
        try await Task.sleep(for: .seconds(2))
        let before = try await tokenTableScans(url)
        let started = ContinuousClock.now
        for _ in 0..<300 {
            let (_, answer) = RawHTTP.get(
                port: server.port, path: path, headers: ["Authorization": "Bearer \(Self.madeUpToken())"])
            #expect(answer.status == 401 && answer.text.contains("unknown or revoked"), "\(answer.head) \(answer.text)")
        }
        let elapsed = ContinuousClock.now - started
        try await Task.sleep(for: .seconds(2))  // the server's backends report their statistics once idle
        let scans = try await tokenTableScans(url) - before
        // The table is loaded every second, and at most once a second more for a token it does not hold; statistics
        // reach pg_stat a second or so late, so the window is a few seconds wider. Each lookup used to be a scan.
        let bound = 3 * Int((elapsed + .seconds(4)) / .seconds(1)) + 5
        #expect(
            scans >= 0 && scans <= bound,
            "300 made-up tokens in \(elapsed): \(scans) scans of cueline_tokens (bound \(bound))")

        for malformed in [
            "cue_123", "cue_" + String(repeating: "g", count: 64), String(repeating: "a", count: 68),
            "cue_" + String(repeating: "A", count: 64), "cue_" + String(repeating: "0", count: 4000),
        ] {
            let (_, answer) = RawHTTP.get(
                port: server.port, path: path, headers: ["Authorization": "Bearer \(malformed)"])
            #expect(
                answer.status == 401 && answer.text.contains("malformed"), "\(malformed.prefix(20)): \(answer.text)")
        }
        // A token created while the server runs works on its first request.
        let fresh = try cli.run(["token", "create", "fresh", "--role", "viewer"]).stdout.trimmingCharacters(
            in: .whitespacesAndNewlines)
        let (_, first) = RawHTTP.get(port: server.port, path: path, headers: ["Authorization": "Bearer \(fresh)"])
        #expect(first.status == 200, "\(first.text)")
    }

    @Test("a revoked token is refused, and its open event stream ends, within 5 s")
    func revocationEndsStreams() async throws {
        let (_, cli, server, wall) = try await setUp()
        defer { server.stop() }
        let url = "\(server.baseURL)/channels/one/events"
        let stream = try CurlStream(
            ["-H", "Accept: text/event-stream", "-H", "Authorization: Bearer \(wall)", url], seconds: 60)
        defer { stream.stop() }
        #expect(await stream.wait(for: ["retry: 1000", "id: 1\n"]), "\(stream.text)")
        let other = try CurlStream(
            ["-H", "Accept: text/event-stream", "-H", "Authorization: Bearer \(wall)", url], seconds: 60)
        defer { other.stop() }
        #expect(await other.wait(for: ["id: 1\n"]), "\(other.text)")

        #expect(try cli.run(["token", "revoke", "wall"]).status == 0)
        let revoked = ContinuousClock.now
        var refusedAfter: Duration?
        while ContinuousClock.now - revoked < .seconds(10) {
            if RawHTTP.get(
                port: server.port, path: "/channels/one/schedule", headers: ["Authorization": "Bearer \(wall)"]
            ).1.status == 401 {
                refusedAfter = ContinuousClock.now - revoked
                break
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(refusedAfter != nil && refusedAfter! < .seconds(5), "refused after \(String(describing: refusedAfter))")
        #expect(
            await stream.waitForEnd(timeout: .seconds(5) - (ContinuousClock.now - revoked) + .milliseconds(500)),
            "the stream still runs \(ContinuousClock.now - revoked) after revocation")
        #expect(
            await other.waitForEnd(timeout: .seconds(5) - (ContinuousClock.now - revoked) + .milliseconds(500)),
            "every stream of the token ends")
        print(
            "revocation: refused after \(refusedAfter.map { "\($0)" } ?? "never"), streams ended after \(ContinuousClock.now - revoked)"
        )
    }
}
