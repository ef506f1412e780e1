import EventStore
import HLS
import Foundation
import Postgres

/// The PostgreSQL that `scripts/test.sh` starts (DATABASE_URL), and helpers for tests that need a fresh one.
public enum TestDatabase {
    public static var url: String? {
        ProcessInfo.processInfo.environment["DATABASE_URL"].flatMap { $0.isEmpty ? nil : $0 }
    }
    public static var isConfigured: Bool { url != nil }

    /// The same server with another database name in the URL.
    public static func url(database: String) -> String {
        var components = URLComponents(string: url!)!
        components.path = "/" + database
        return components.string!
    }

    /// Creates an empty database for one test and returns its URL.
    public static func makeFreshDatabase() async throws -> String {
        let name = "t_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(16)
        let admin = try await PostgresConnection.connect(url: url!)
        defer { admin.close() }
        // Database names cannot be bound parameters; this one is generated above from hex digits only.
        try await admin.query(PostgresQuery(sql: "CREATE DATABASE \(name)"))
        return self.url(database: String(name))
    }

    /// The repository's Migrations directory.
    public static var migrationsDirectory: String {
        if let explicit = ProcessInfo.processInfo.environment["CUELINE_MIGRATIONS"] { return explicit }
        return repositoryRoot.appendingPathComponent("Migrations").path
    }

    /// The checkout this test build comes from.
    public static var repositoryRoot: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
    }

    /// A store on the migrated test database.
    public static func makeStore() -> PostgresEventStore {
        PostgresEventStore(pool: PostgresPool(url: url!, maximumConnections: 24))
    }
}
