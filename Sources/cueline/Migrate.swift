import ArgumentParser
import EventStore
import Foundation

struct Migrate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Apply the pending SQL migrations, in order, under an advisory lock.")

    @OptionGroup var database: DatabaseOptions

    @Option(help: "Directory of NNNN_name.sql files; defaults to CUELINE_MIGRATIONS, then ./Migrations.")
    var migrations: String?

    @Flag(help: "Print the result as JSON.")
    var json = false

    func run() async throws {
        let settings = try database.configuration()
        let migrator = try Migrator.load(directory: try Self.locateMigrations(migrations ?? settings.migrations))
        let report = try await migrator.migrate(url: settings.databaseURL ?? "")
        if json {
            try printJSON(report)
        } else if report.applied.isEmpty {
            print("database is up to date at migration \(report.current) (\(report.alreadyApplied.count) applied)")
        } else {
            for name in report.applied { print("applied \(name)") }
            print("database is at migration \(report.current)")
        }
    }

    /// `--migrations`, then `CUELINE_MIGRATIONS`, then `./Migrations`, then the source tree or install prefix
    /// next to the executable.
    static func locateMigrations(_ explicit: String?) throws -> String {
        if let explicit { return explicit }
        if let fromEnvironment = ProcessInfo.processInfo.environment["CUELINE_MIGRATIONS"] { return fromEnvironment }
        var candidates = ["Migrations"]
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .deletingLastPathComponent()
        for _ in 0..<4 {
            candidates.append(directory.appendingPathComponent("Migrations").path)
            candidates.append(directory.appendingPathComponent("share/cueline/Migrations").path)
            directory.deleteLastPathComponent()
        }
        var isDirectory: ObjCBool = false
        for candidate in candidates
        where FileManager.default.fileExists(atPath: candidate, isDirectory: &isDirectory) && isDirectory.boolValue {
            return candidate
        }
        throw CLIError(
            message: "cannot find the Migrations directory; pass --migrations <dir> or set CUELINE_MIGRATIONS")
    }
}
