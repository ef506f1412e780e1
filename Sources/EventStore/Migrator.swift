import Foundation
import Logging
import Postgres

/// A numbered SQL file from `Migrations/`.
public struct Migration: Sendable, Hashable {
    public var version: Int
    /// The file name, e.g. `0001_event_log.sql`.
    public var name: String
    public var sql: String
    public var checksum: String

    public init(version: Int, name: String, sql: String) {
        self.version = version
        self.name = name
        self.sql = sql
        self.checksum = sha256Hex(sql)
    }
}

/// What `migrate` did.
public struct MigrationReport: Sendable, Hashable, Codable {
    public var applied: [String]
    public var alreadyApplied: [String]
    public var current: Int
}

public enum MigrationError: Error, Sendable, Equatable, CustomStringConvertible {
    case directoryUnreadable(path: String, reason: String)
    case badFileName(String)
    case duplicateVersion(Int, [String])
    case noMigrations(path: String)
    case changedAfterApplied(name: String, recorded: String, now: String)
    case missingFile(version: Int, name: String, directory: String)
    case failed(name: String, reason: String)

    public var description: String {
        switch self {
        case .directoryUnreadable(let path, let reason):
            return
                "cannot read the migrations directory \(path): \(reason); pass --migrations <dir> or set CUELINE_MIGRATIONS"
        case .badFileName(let name):
            return
                "migration file \(name) is not named NNNN_description.sql (four digits, underscore, lower-case words)"
        case .duplicateVersion(let version, let names):
            return
                "migration number \(migrationNumber(version)) is used by several files: \(names.joined(separator: ", "))"
        case .noMigrations(let path):
            return "no migration files (NNNN_name.sql) in \(path)"
        case .changedAfterApplied(let name, let recorded, let now):
            return
                "\(name) was changed after it was applied (recorded checksum \(recorded.prefix(12)), file now \(now.prefix(12))); "
                + "restore the original and put the change in a new migration"
        case .missingFile(let version, let name, let directory):
            return
                "migration \(migrationNumber(version)) (\(name)) is applied in the database but missing from \(directory); "
                + "this build is older than the database or the directory is incomplete"
        case .failed(let name, let reason):
            return "migration \(name) failed and was rolled back: \(reason)"
        }
    }
}

/// Applies `Migrations/NNNN_*.sql` in order, each in its own transaction, recorded with a checksum, under an
/// advisory lock so that instances starting together do not race.
public struct Migrator: Sendable {
    /// The advisory lock key (`pg_advisory_lock`); any constant unlikely to collide with other software.
    static let lockKey: Int64 = 0x6375_656C_696E_65  // "cueline"

    public var migrations: [Migration]
    public var directory: String
    let logger: Logger

    public init(
        migrations: [Migration], directory: String = "(built in)", logger: Logger = Logger(label: "cueline.migrate")
    ) {
        self.migrations = migrations.sorted { $0.version < $1.version }
        self.directory = directory
        self.logger = logger
    }

    /// Loads every `NNNN_name.sql` in `directory`.
    public static func load(directory: String, logger: Logger = Logger(label: "cueline.migrate")) throws -> Migrator {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory)
        } catch {
            throw MigrationError.directoryUnreadable(path: directory, reason: "no such directory or not readable")
        }
        var migrations: [Migration] = []
        for name in names.sorted() where name.hasSuffix(".sql") {
            guard let version = parseVersion(name) else { throw MigrationError.badFileName(name) }
            let path = (directory as NSString).appendingPathComponent(name)
            guard let data = FileManager.default.contents(atPath: path), let sql = String(data: data, encoding: .utf8)
            else {
                throw MigrationError.directoryUnreadable(path: path, reason: "not readable as UTF-8")
            }
            migrations.append(Migration(version: version, name: name, sql: sql))
        }
        guard !migrations.isEmpty else { throw MigrationError.noMigrations(path: directory) }
        for (version, group) in Dictionary(grouping: migrations, by: \.version) where group.count > 1 {
            throw MigrationError.duplicateVersion(version, group.map(\.name).sorted())
        }
        return Migrator(migrations: migrations, directory: directory, logger: logger)
    }

    static func parseVersion(_ name: String) -> Int? {
        let parts = name.dropLast(4).split(separator: "_", maxSplits: 1)
        guard parts.count == 2, parts[0].count == 4, parts[0].allSatisfy(\.isASCII), let version = Int(parts[0]),
            version > 0,
            parts[1].allSatisfy({ ($0.isLetter && $0.isLowercase && $0.isASCII) || $0.isNumber || $0 == "_" })
        else { return nil }
        return version
    }

    /// Applies what is pending. Safe to run twice, and from two processes at once.
    public func migrate(url: String) async throws -> MigrationReport {
        let connection = try await PostgresConnection.connect(url: url, applicationName: "cueline-migrate")
        defer { connection.close() }
        // Session-level lock: held across the per-file transactions, released when the connection closes.
        try await connection.query("SELECT pg_advisory_lock(\(Self.lockKey))")
        try await connection.executeScript(
            """
            CREATE TABLE IF NOT EXISTS cueline_migrations (
                version integer PRIMARY KEY,
                name text NOT NULL,
                checksum text NOT NULL,
                applied_at timestamptz NOT NULL DEFAULT now()
            )
            """)
        let rows = try await connection.query("SELECT version, name, checksum FROM cueline_migrations ORDER BY version")
        var applied: [Int: (name: String, checksum: String)] = [:]
        for row in rows.rows {
            applied[Int(try row.int64(0, "version"))] = (try row.string(1, "name"), try row.string(2, "checksum"))
        }
        let byVersion = Dictionary(uniqueKeysWithValues: migrations.map { ($0.version, $0) })
        for (version, record) in applied.sorted(by: { $0.key < $1.key }) {
            guard let file = byVersion[version] else {
                throw MigrationError.missingFile(version: version, name: record.name, directory: directory)
            }
            guard file.checksum == record.checksum else {
                throw MigrationError.changedAfterApplied(name: file.name, recorded: record.checksum, now: file.checksum)
            }
        }
        var report = MigrationReport(applied: [], alreadyApplied: [], current: applied.keys.max() ?? 0)
        for migration in migrations {
            if applied[migration.version] != nil {
                report.alreadyApplied.append(migration.name)
                continue
            }
            do {
                try await connection.withTransaction { connection in
                    try await connection.executeScript(migration.sql)
                    try await connection.query(
                        """
                        INSERT INTO cueline_migrations (version, name, checksum) \
                        VALUES (\(migration.version), \(migration.name), \(migration.checksum))
                        """)
                }
            } catch let error as PostgresError where error.kind == .statementFailed {
                throw MigrationError.failed(name: migration.name, reason: error.description)
            }
            logger.info("applied migration", metadata: ["migration": "\(migration.name)"])
            report.applied.append(migration.name)
            report.current = migration.version
        }
        _ = try? await connection.query("SELECT pg_advisory_unlock(\(Self.lockKey))")
        return report
    }
}
