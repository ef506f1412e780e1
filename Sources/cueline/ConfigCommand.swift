import ArgumentParser
import Foundation

struct ConfigCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config", abstract: "Check configuration files.", subcommands: [Check.self])

    struct Check: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Validate a config file: every unknown key and bad value, with its line.",
            discussion: "Precedence: flags, then environment variables, then the config file, then defaults.")

        @Argument var file: String

        @Flag(help: "Print the result as JSON.")
        var json = false

        func run() async throws {
            guard let data = FileManager.default.contents(atPath: file) else {
                throw CLIError(message: "cannot read \(file): no such file or not readable")
            }
            let (values, problems) = Configuration.parseFile(String(decoding: data, as: UTF8.self))
            if json {
                struct Report: Encodable {
                    var file: String
                    var valid: Bool
                    var problems: [String]
                    var keys: [String]
                }
                try printJSON(
                    Report(
                        file: file, valid: problems.isEmpty, problems: problems.map(\.description),
                        keys: values.keys.sorted()))
            } else if problems.isEmpty {
                print("\(file): valid (\(values.keys.sorted().joined(separator: ", ")))")
            } else {
                for problem in problems { print("\(file):\(problem.line.map(String.init) ?? "-"): \(problem.message)") }
            }
            if !problems.isEmpty { throw ExitCode(1) }
        }
    }
}
