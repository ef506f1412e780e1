import EventStore
import Foundation
import Postgres
import TestSupport
import Testing

@Suite(
    "cueline migrate",
    .enabled(
        if: TestDatabase.isConfigured && CLIRunner.isAvailable, "needs DATABASE_URL and CUELINE_BIN (scripts/test.sh)"))
struct MigrateCommandTests {
    private func recordCount(_ url: String) async throws -> String? {
        let connection = try await PostgresConnection.connect(url: url)
        defer { connection.close() }
        return try await connection.query("SELECT count(*) FROM cueline_migrations").scalar()
    }

    @Test("twice in a row: applies, then reports up to date")
    func twice() async throws {
        let url = try await TestDatabase.makeFreshDatabase()
        let cli = CLIRunner(environment: ["DATABASE_URL": url])
        let first = try cli.run(["migrate"])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stdout.contains("applied 0001_event_log.sql"))
        let second = try cli.run(["migrate", "--json"])
        #expect(second.status == 0)
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase  // every --json is snake_case
        let report = try decoder.decode(MigrationReport.self, from: Data(second.stdout.utf8))
        #expect(report.applied.isEmpty)
        #expect(report.alreadyApplied.first == "0001_event_log.sql")
        #expect(
            report.alreadyApplied.count
                == (try Migrator.load(directory: TestDatabase.migrationsDirectory)).migrations.count)
        #expect(
            try await recordCount(url)
                == String((try Migrator.load(directory: TestDatabase.migrationsDirectory)).migrations.count))
    }

    @Test("two processes at once both succeed, one record per file")
    func concurrent() async throws {
        let url = try await TestDatabase.makeFreshDatabase()
        let cli = CLIRunner(environment: ["DATABASE_URL": url])
        async let a = Task.detached { try cli.run(["migrate"]) }.value
        async let b = Task.detached { try cli.run(["migrate"]) }.value
        let (ra, rb) = try await (a, b)
        #expect(ra.status == 0, "\(ra.stderr)")
        #expect(rb.status == 0, "\(rb.stderr)")
        #expect(
            try await recordCount(url)
                == String((try Migrator.load(directory: TestDatabase.migrationsDirectory)).migrations.count))
    }

    @Test(
        "bad database settings: one clear line on stderr and a non-zero exit",
        arguments: [
            (
                "postgresql://postgres@127.0.0.1:1/cueline",
                "cannot connect to PostgreSQL at postgres@127.0.0.1:1/cueline"
            ),
            ("mysql://root@127.0.0.1/cueline", "must start with postgresql://"),
        ])
    func badURL(url: String, expected: String) throws {
        let result = try CLIRunner(environment: ["DATABASE_URL": url]).run(["migrate"])
        #expect(result.status == 1)
        #expect(result.stderrLines.count == 1, "\(result.stderr)")
        #expect(result.stderr.hasPrefix("error: "))
        #expect(result.stderr.contains(expected), "\(result.stderr)")
    }

    @Test("a migration applied in the database but missing from the directory: one line, non-zero exit")
    func missingMigration() async throws {
        let url = try await TestDatabase.makeFreshDatabase()
        let cli = CLIRunner(environment: ["DATABASE_URL": url])
        #expect(try cli.run(["migrate"]).status == 0)
        let empty = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: empty) }
        try Data("SELECT 1;".utf8).write(to: empty.appendingPathComponent("0002_other.sql"))
        let result = try cli.run(["migrate", "--migrations", empty.path])
        #expect(result.status == 1)
        #expect(result.stderrLines.count == 1, "\(result.stderr)")
        #expect(result.stderr.contains("migration 0001 (0001_event_log.sql) is applied in the database but missing"))
    }

    @Test("a missing migrations directory: one line, non-zero exit")
    func missingDirectory() throws {
        let result = try CLIRunner().run(["migrate", "--migrations", "/nonexistent/Migrations"])
        #expect(result.status == 1)
        #expect(
            result.stderrLines == [
                "error: cannot read the migrations directory /nonexistent/Migrations: no such directory or not readable; "
                    + "pass --migrations <dir> or set CUELINE_MIGRATIONS"
            ])
    }

    @Test("a usage error exits 2")
    func usage() throws {
        let result = try CLIRunner().run(["migrate", "--no-such-flag"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("--no-such-flag"))
    }
}
