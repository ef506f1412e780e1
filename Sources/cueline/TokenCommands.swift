import ArgumentParser
import EventStore
import Foundation
import Schedule

/// `cueline token create|list|revoke`: bearer tokens for the HTTP API, managed directly in the database.
struct TokenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "Create, list and revoke HTTP API tokens.",
        discussion: """
            Roles: operator (every command and read), automation (only --command types on --channel channels),
            viewer (reads only). The token's name is the actor recorded on every event it sends.
            """,
        subcommands: [Create.self, List.self, Revoke.self])

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a token and print it once; only its SHA-256 is stored.")

        @Argument(help: "The token's name, recorded as the actor of its commands (a-z, 0-9, '.', '_', '-').")
        var name: String

        @Option(help: "operator, automation or viewer.")
        var role: String

        @Option(
            name: .customLong("channel"),
            help: "A channel the token may use (repeat; required for automation; default every channel).")
        var channels: [String] = []

        @Option(
            name: .customLong("command"),
            help:
                "A command type an automation token may send (repeat; default all): \(APIToken.commandTypes.joined(separator: ", "))."
        )
        var commands: [String] = []

        @OptionGroup var database: DatabaseOptions

        @Flag(help: "Print JSON.")
        var json = false

        func run() async throws {
            guard let role = APIToken.Role(rawValue: role) else {
                throw ValidationError("--role must be operator, automation or viewer, not \(role.debugDescription)")
            }
            let scope: (channels: [ChannelID], commands: [ScheduleCommand.Kind])
            do {
                scope = try APIToken.scope(channels: channels, commands: commands)
                try APIToken.validate(name: name, role: role, channels: scope.channels, commands: scope.commands)
            } catch {
                throw ValidationError(error.description)
            }
            let directory = PostgresTokenStore(pool: try await openStore(database).pool)
            let secret = try await directory.create(
                name: name, role: role, channels: scope.channels, commands: scope.commands,
                createdBy: ProcessInfo.processInfo.environment["USER"] ?? "cli")
            if json {
                struct Created: Encodable { var name: String; var role: String; var token: String }
                try printJSON(Created(name: name, role: role.rawValue, token: secret))
            } else {
                print(secret)
                FileHandle.standardError.write(
                    Data(
                        "token \(name) (\(role.rawValue)) created; it is shown only now. Send it as Authorization: Bearer <token>\n"
                            .utf8))
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List tokens (never their secrets).")

        @OptionGroup var database: DatabaseOptions

        @Flag(help: "Print JSON.")
        var json = false

        func run() async throws {
            let tokens = try await PostgresTokenStore(pool: try await openStore(database).pool).list()
            if json {
                try printJSON(tokens)
                return
            }
            print(
                table(
                    ["NAME", "ROLE", "CHANNELS", "COMMANDS", "CREATED", "BY", "REVOKED"],
                    tokens.map { token in
                        [
                            token.name, token.role.rawValue,
                            token.channels.isEmpty ? "all" : token.channels.map(\.rawValue).joined(separator: ","),
                            token.role != .automation
                                ? "-"
                                : token.commands.isEmpty
                                    ? "all" : token.commands.map(\.rawValue).joined(separator: ","),
                            token.createdAt, token.createdBy, token.revokedAt ?? "-",
                        ]
                    }))
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Revoke a token; servers refuse it within 5 seconds.")

        @Argument(help: "The token's name.")
        var name: String

        @OptionGroup var database: DatabaseOptions

        func run() async throws {
            try await PostgresTokenStore(pool: try await openStore(database).pool).revoke(name: name)
            print("token \(name) revoked")
        }
    }
}
