import ArgumentParser
import EventStore
import Foundation
import HLS
import Logging
import Metrics
import Postgres
import Projector
import Prometheus
import Schedule
import Wire

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
            Migrate.self, Serve.self, ChannelCommand.self, BreakCommand.self, EventCommand.self,
            ScheduleCommandLine.self,
            ReplayCommand.self, CheckpointCommand.self, AsRunCommand.self, LogCommand.self, VerifyCommand.self,
            LintCommand.self, ConfigCommand.self,
            TokenCommand.self, SubscriptionCommand.self, OpenAPICommand.self, SCTE35Command.self,
        ]
    )

    /// The Prometheus registry `/metrics` exposes.
    static let metrics = PrometheusCollectorRegistry()

    static func main() async {
        do {
            var command = try parseAsRoot()
            // The one place logging and metrics are bootstrapped. `serve` logs at its configured level and format;
            // the other commands log warnings and worse (their output is for people).
            let configuration = (command as? Serve).flatMap { try? $0.configuration() }
            let level =
                configuration.flatMap { Logger.Level(rawValue: $0.logLevel) }
                ?? Logger.Level(rawValue: ProcessInfo.processInfo.environment["CUELINE_LOG_LEVEL"] ?? "") ?? .warning
            let json = (configuration?.logFormat ?? ProcessInfo.processInfo.environment["CUELINE_LOG_FORMAT"]) == "json"
            LoggingSystem.bootstrap { label in
                if json { return JSONLogHandler(label: label, logLevel: level) }
                var handler = StreamLogHandler.standardError(label: label)
                handler.logLevel = level
                return handler
            }
            if command is Serve {
                var factory = PrometheusMetricsFactory(registry: metrics)
                // Blocked LL-HLS reloads are answered, and windows become servable, milliseconds after their boundary:
                // buckets that resolve it.
                let fine = [1, 2, 5, 10, 15, 20, 30, 50, 100, 250, 1000].map { Duration.milliseconds($0) }
                factory.durationHistogramBuckets["cueline_blocked_reload_lateness_seconds"] = fine
                factory.durationHistogramBuckets["cueline_tick_lateness_seconds"] = fine
                MetricsSystem.bootstrap(factory)
            }
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
            switch error {
            case .versionConflict, .commandIDReused: code = ExitStatus.conflict
            case .invalidValue: code = ExitStatus.usage
            default: code = ExitStatus.failure
            }
            message = error.description
        case let error as TokenError:
            if case .nameTaken = error { code = ExitStatus.conflict } else { code = ExitStatus.failure }
            message = error.description
        case let error as MigrationError:
            (code, message) = (ExitStatus.failure, error.description)
        case let error as PostgresError:
            (code, message) = (ExitStatus.failure, error.description)
        case let error as CLIError:
            (code, message) = (error.exitCode, error.message)
        case let error as ExitCode:
            Foundation.exit(error.rawValue)
        case let error as Replay.Failure:
            (code, message) = (ExitStatus.failure, error.description)
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
        // Messages can quote what a request or the log holds: no control character reaches the terminal.
        FileHandle.standardError.write(Data(("error: " + message.escapingControlCharacters + "\n").utf8))
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
        help: "postgresql:// URL; defaults to DATABASE_URL, then the config file, then libpq's PG* variables.")
    var databaseURL: String?

    @Option(help: "Config file (key = value lines); defaults to CUELINE_CONFIG. Flags and environment win over it.")
    var config: String?

    /// The resolved settings: flags, then environment, then the config file, then defaults.
    func configuration(flags: [String: String?] = [:]) throws -> Configuration {
        var all = flags
        all["database_url"] = databaseURL
        return try Configuration.resolve(file: config, environment: ProcessInfo.processInfo.environment, flags: all)
    }

    /// The database URL; empty means libpq's own PG* variables.
    func url() throws -> String {
        try configuration().databaseURL ?? ""
    }
}

/// Prints a value as JSON on stdout (`--json`), pretty-printed with the wire's one configuration (`WireJSON`:
/// snake_case keys), so a report reads as the API's answer with the same name does.
func printJSON(_ value: some Encodable) throws {
    FileHandle.standardOutput.write(try WireJSON.encode(value, pretty: true) + Data("\n".utf8))
}
