import EventStore
import HLS
import Postgres
import TestSupport
import Foundation
import Testing

@Suite("Migrations", .enabled(if: TestDatabase.isConfigured, "needs DATABASE_URL (scripts/test.sh)"))
struct MigratorTests {
    let one = Migration(version: 1, name: "0001_first.sql", sql: "CREATE TABLE t1 (id int);")
    let two = Migration(
        version: 2, name: "0002_second.sql", sql: "CREATE TABLE t2 (id int); INSERT INTO t2 VALUES (1);")

    private func recorded(_ url: String) async throws -> [[String?]] {
        let connection = try await PostgresConnection.connect(url: url)
        defer { connection.close() }
        return try await connection.query("SELECT version, name FROM cueline_migrations ORDER BY version").rows
    }

    @Test("applies in order, then twice in a row is a no-op")
    func twice() async throws {
        let url = try await TestDatabase.makeFreshDatabase()
        let first = try await Migrator(migrations: [two, one]).migrate(url: url)
        #expect(first.applied == ["0001_first.sql", "0002_second.sql"])
        let second = try await Migrator(migrations: [one, two]).migrate(url: url)
        #expect(second.applied.isEmpty)
        #expect(second.alreadyApplied == ["0001_first.sql", "0002_second.sql"])
        #expect(second.current == 2)
        #expect(try await recorded(url) == [["1", "0001_first.sql"], ["2", "0002_second.sql"]])
    }

    @Test("four concurrent runs all succeed and leave one record per file")
    func concurrent() async throws {
        let url = try await TestDatabase.makeFreshDatabase()
        let migrator = try Migrator.load(directory: TestDatabase.migrationsDirectory)
        let reports = try await withThrowingTaskGroup(of: MigrationReport.self) { group in
            for _ in 0..<4 { group.addTask { try await migrator.migrate(url: url) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(reports.map(\.applied.count).reduce(0, +) == migrator.migrations.count)
        #expect(try await recorded(url).count == migrator.migrations.count)
    }

    @Test("a file changed after it was applied is refused")
    func changedFile() async throws {
        let url = try await TestDatabase.makeFreshDatabase()
        _ = try await Migrator(migrations: [one]).migrate(url: url)
        let edited = Migration(version: 1, name: "0001_first.sql", sql: "CREATE TABLE t1 (id bigint);")
        await #expect(
            throws: MigrationError.changedAfterApplied(
                name: "0001_first.sql", recorded: one.checksum, now: edited.checksum)
        ) {
            try await Migrator(migrations: [edited, two]).migrate(url: url)
        }
        #expect(try await recorded(url).count == 1, "nothing after the refusal may be applied")
    }

    @Test("an applied migration missing from the directory is refused")
    func missingFile() async throws {
        let url = try await TestDatabase.makeFreshDatabase()
        _ = try await Migrator(migrations: [one, two]).migrate(url: url)
        await #expect(throws: MigrationError.missingFile(version: 2, name: "0002_second.sql", directory: "(built in)"))
        {
            try await Migrator(migrations: [one]).migrate(url: url)
        }
    }

    @Test("a failing migration is rolled back whole and not recorded")
    func failing() async throws {
        let url = try await TestDatabase.makeFreshDatabase()
        let broken = Migration(
            version: 2, name: "0002_broken.sql", sql: "CREATE TABLE t2 (id int); SELECT no_such_function();")
        do {
            _ = try await Migrator(migrations: [one, broken]).migrate(url: url)
            Issue.record("a broken migration was applied")
        } catch let MigrationError.failed(name, reason) {
            #expect(name == "0002_broken.sql")
            #expect(reason.contains("no_such_function"))
        }
        #expect(try await recorded(url) == [["1", "0001_first.sql"]])
        let connection = try await PostgresConnection.connect(url: url)
        defer { connection.close() }
        #expect(try await connection.query("SELECT to_regclass('t2') IS NULL").scalar() == "t")
    }

    @Test(
        "file names are checked",
        arguments: [
            ("0001_event_log.sql", true), ("1_x.sql", false), ("0001-x.sql", false), ("0001_Upper.sql", false),
            ("0000_zero.sql", false), ("0012_two_words2.sql", true),
        ])
    func fileNames(name: String, valid: Bool) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data("SELECT 1;".utf8).write(to: directory.appendingPathComponent(name))
        if valid {
            #expect(try Migrator.load(directory: directory.path).migrations.map(\.name) == [name])
        } else {
            #expect(throws: MigrationError.badFileName(name)) { try Migrator.load(directory: directory.path) }
        }
    }

    @Test("the build's required migration is the newest file in Migrations/")
    func requiredMatchesDirectory() throws {
        let migrator = try Migrator.load(directory: TestDatabase.migrationsDirectory)
        #expect(migrator.migrations.last?.version == PostgresEventStore.requiredMigration)
    }
}
