import ArgumentParser
import EventStore
import Foundation
import HLS
import Projector
import Schedule

/// `cueline scte35 policy set|show` and `cueline scte35 dry-run`: what a channel does with the SCTE-35 it receives,
/// and what another policy would have done with what it received.
struct SCTE35Command: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scte35",
        abstract: "A channel's SCTE-35 ingest policy, and a dry-run of another one over what it received.",
        subcommands: [PolicyCommand.self, DryRun.self])

    struct PolicyCommand: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "policy", abstract: "Set or show a channel's SCTE-35 ingest policy.",
            subcommands: [Set.self, Show.self])
    }

    /// The policy in FILE, checked: every problem names the key.
    static func readPolicy(_ path: String) throws -> SCTE35Policy {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw CLIError(message: "cannot read \(path): no such file or not readable", exitCode: ExitStatus.usage)
        }
        defer { try? handle.close() }
        // A policy is a few hundred bytes; 64 KiB is a file that is something else.
        let data = handle.readData(ofLength: 65_537)
        guard data.count <= 65_536 else {
            throw CLIError(message: "\(path) is over 64 KiB: not a policy file", exitCode: ExitStatus.usage)
        }
        do {
            return try SCTE35Policy.parse(json: data)
        } catch {
            if case .invalidField(let field, let reason) = error {
                throw CLIError(message: "\(path): \(field) \(reason)", exitCode: ExitStatus.usage)
            }
            throw CLIError(message: "\(path): \(error)", exitCode: ExitStatus.usage)
        }
    }

    static func policyJSON(_ policy: SCTE35Policy) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(policy), as: UTF8.self)
    }

    struct Set: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Set the channel's SCTE-35 ingest policy from a JSON file (docs/plant.md shows the format).")

        @Argument(help: "Channel id.", transform: identifier)
        var channel: ChannelID

        @Argument(help: "The policy file (JSON).")
        var file: String

        @OptionGroup var database: DatabaseOptions
        @OptionGroup var options: CommandOptions

        func run() async throws {
            let policy = try SCTE35Command.readPolicy(file)
            guard options.remote == nil else {
                throw CLIError(
                    message:
                        "scte35 policy set writes to the database (DATABASE_URL): the HTTP API takes no policy command",
                    exitCode: ExitStatus.usage)
            }
            try options.requireDatabase(for: "scte35 policy set")
            try await sendCommand(.setSCTE35Policy(policy), channel: channel, database: database, options: options) {
                answer in
                "channel \(channel) now follows the SCTE-35 policy in \(file) (version \(answer.version))"
            }
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the channel's SCTE-35 ingest policy in the file format (the standard one if none was set)."
        )

        @Argument(help: "Channel id.", transform: storedIdentifier)
        var channel: ChannelID

        @OptionGroup var database: DatabaseOptions

        func run() async throws {
            let state = try await ChannelLoader.load(channel, from: try await openStore(database), retention: .window)
            guard state.config != nil else {
                throw CLIError(message: "no channel \(channel)", exitCode: ExitStatus.failure)
            }
            if state.scte35Policy == nil {
                FileHandle.standardError.write(
                    Data("note: channel \(channel) set no policy: this is the standard one\n".utf8))
            }
            print(try SCTE35Command.policyJSON(state.scte35Policy ?? .standard))
        }
    }

    struct DryRun: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "dry-run",
            abstract: "Decide every section the channel received again under a proposed policy, and say what differs.",
            discussion: """
                The log is replayed as it is, except that what each received section led to is replaced by what the \
                proposed policy decides, at the instant the server decided it. --as-logged uses the policy each \
                section met, and reproduces the log.
                """)

        @Argument(help: "Channel id.", transform: storedIdentifier)
        var channel: ChannelID

        @Option(help: "The proposed policy file (JSON).")
        var policy: String?

        @Flag(name: .customLong("as-logged"), help: "Use the policy in force when each section arrived.")
        var asLogged = false

        @Option(parsing: .upToNextOption, help: "Two instants A B: print only the sections decided between them.")
        var between: [TimeArgument] = []

        @Flag(help: "Print JSON.")
        var json = false

        @OptionGroup var database: DatabaseOptions

        func validate() throws {
            guard (policy == nil) == asLogged else { throw ValidationError("give --policy FILE or --as-logged") }
            guard between.isEmpty || (between.count == 2 && between[0].timestamp <= between[1].timestamp) else {
                throw ValidationError("--between needs two instants, the earlier first")
            }
        }

        func run() async throws {
            let proposed = try policy.map(SCTE35Command.readPolicy)
            let store = try await openStore(database)
            let (readable, unreadable) = ChannelLoader.decodeReadable(try await store.events(of: channel))
            guard readable.contains(where: { if case .channelCreated = $0.event { true } else { false } }) else {
                throw CLIError(message: "no channel \(channel)", exitCode: ExitStatus.failure)
            }
            for (event, reason) in unreadable.prefix(3) {
                FileHandle.standardError.write(
                    Data(
                        "warning: event at version \(event.version) cannot be read by this build (\(reason)); the dry-run folds without it\n"
                            .utf8))
            }
            let range = between.count == 2 ? between[0].timestamp...between[1].timestamp : nil
            let lines = SCTE35DryRun.run(readable, channel: channel, policy: proposed, between: range)
            if json {
                try printJSON(lines)
                return
            }
            func outcome(_ outcome: SCTE35Received.Outcome?, _ id: BreakID?) -> String {
                guard let outcome else { return "refused" }
                return outcome.rawValue + (id.map { " \($0)" } ?? "")
            }
            print(
                table(
                    ["DECIDED", "VERSION", "LOGGED", "PROPOSED", "COMPARED", "WHY (PROPOSED)"],
                    lines.map { line in
                        [
                            line.at.iso8601, "\(line.version)", outcome(line.logged, line.loggedBreak),
                            outcome(line.proposed, line.proposedBreak), line.differs ? "differs" : "same",
                            line.proposedDetail,
                        ]
                    }))
            var counts: [String: Int] = [:]
            for line in lines { counts[line.proposed?.rawValue ?? "refused", default: 0] += 1 }
            let summary = ["placed", "ended", "cancelled", "ignored", "refused"].map { "\($0) \(counts[$0] ?? 0)" }
            print(
                "\(lines.count) sections: would have \(summary.joined(separator: ", ")); \(lines.filter(\.differs).count) differ from the log"
            )
        }
    }
}
