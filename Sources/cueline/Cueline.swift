import ArgumentParser
import EventStore
import Foundation
import Logging
import Schedule

@main
struct Cueline: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cueline",
        abstract: "Runs the break schedule of live HLS channels.",
        discussion: """
            The database is named by DATABASE_URL (postgresql://user@host:port/db) or libpq's PG* variables.
            Exit codes: 0 ok, 1 failure, 2 usage error, 3 conflict (someone changed the schedule first).
            """,
        subcommands: [
            Migrate.self, Serve.self, ChannelCommand.self, BreakCommand.self, EventCommand.self, ScheduleCommandLine.self,
            LintCommand.self,
        ]
    )

    static func main() async {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = Logger.Level(rawValue: ProcessInfo.processInfo.environment["CUELINE_LOG_LEVEL"] ?? "")
                ?? .warning
            return handler
        }
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            exit(reporting: error)
        }
    }

    /// One line on stderr an operator can act on, and an exit code a script can branch on.
    static func exit(reporting error: any Error) -> Never {
        let code: Int32
        let message: String
        switch error {
        case let error as StoreError:
            if case .versionConflict = error { code = ExitStatus.conflict } else { code = ExitStatus.failure }
            message = error.description
        case let error as MigrationError:
            (code, message) = (ExitStatus.failure, error.description)
        case let error as PostgresError:
            (code, message) = (ExitStatus.failure, error.description)
        case let error as CLIError:
            (code, message) = (error.exitCode, error.message)
        case let error as ExitCode:
            Foundation.exit(error.rawValue)
        case let error as ScheduleError:
            (code, message) = (ExitStatus.failure, error.description)
        default:
            // ArgumentParser's own errors: help, version, usage. Anything else is one line, exit 1.
            let exitCode = Cueline.exitCode(for: error)
            if exitCode == .success {
                Cueline.exit(withError: error)
            }
            if exitCode == .validationFailure {
                FileHandle.standardError.write(Data((Cueline.fullMessage(for: error) + "\n").utf8))
                Foundation.exit(ExitStatus.usage)
            }
            (code, message) = (ExitStatus.failure, "\(error)")
        }
        FileHandle.standardError.write(Data(("error: " + message + "\n").utf8))
        Foundation.exit(code)
    }
}

enum ExitStatus {
    static let failure: Int32 = 1
    static let usage: Int32 = 2
    static let conflict: Int32 = 3
}

/// An error the CLI itself raises, with its exit code.
struct CLIError: Error {
    var message: String
    var exitCode: Int32 = ExitStatus.failure
}

/// Options every command that talks to the database shares.
struct DatabaseOptions: ParsableArguments {
    @Option(
        name: .customLong("database-url"),
        help: "postgresql:// URL; defaults to DATABASE_URL, then libpq's PG* variables.")
    var databaseURL: String?

    var url: String {
        databaseURL ?? ProcessInfo.processInfo.environment["DATABASE_URL"] ?? ""
    }
}

/// Prints a value as JSON on stdout (`--json`).
func printJSON(_ value: some Encodable) throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
    FileHandle.standardOutput.write(try encoder.encode(value) + Data("\n".utf8))
}
