import Foundation

/// Runs the built `cueline` executable (`CUELINE_BIN`, set by scripts/test.sh) as a user would.
public struct CLIRunner: Sendable {
    public struct Output: Sendable {
        public var status: Int32
        public var stdout: String
        public var stderr: String
        /// stderr without trailing newline, split into lines.
        public var stderrLines: [String] { stderr.split(separator: "\n").map(String.init) }
    }

    public var executable: String
    public var environment: [String: String]

    public static var isAvailable: Bool { ProcessInfo.processInfo.environment["CUELINE_BIN"] != nil }

    public init(environment overrides: [String: String] = [:]) {
        executable = ProcessInfo.processInfo.environment["CUELINE_BIN"] ?? "cueline"
        var environment = ProcessInfo.processInfo.environment
        environment.merge(overrides) { $1 }
        self.environment = environment
    }

    public func run(_ arguments: [String]) throws -> Output {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = environment
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Output(
            status: process.terminationStatus, stdout: String(decoding: stdout, as: UTF8.self),
            stderr: String(decoding: stderr, as: UTF8.self))
    }
}

extension CLIRunner {
    /// A fresh, migrated database with the given channels (1 s segments, one 720p rendition), and a CLI on it.
    public static func onFreshDatabase(channels: [String]) async throws -> (url: String, cli: CLIRunner) {
        let url = try await TestDatabase.makeFreshDatabase()
        let cli = CLIRunner(environment: ["DATABASE_URL": url])
        let migrate = try cli.run(["migrate"])
        guard migrate.status == 0 else { throw HTTP.Failure(message: "cueline migrate failed: \(migrate.stderr)") }
        for channel in channels {
            let created = try cli.run([
                "channel", "create", channel, "--segment-duration", "1", "--window", "6", "--rendition",
                "720p,1000000,720p/seg{n}.ts",
            ])
            guard created.status == 0 else {
                throw HTTP.Failure(message: "channel create \(channel) failed: \(created.stderr)")
            }
        }
        return (url, cli)
    }

    /// Creates each token (`cueline token create NAME ARGUMENTS…`) and returns the secrets by name.
    public func createTokens(_ specs: [(String, [String])]) throws -> [String: String] {
        var tokens: [String: String] = [:]
        for (name, arguments) in specs {
            let created = try run(["token", "create", name] + arguments)
            guard created.status == 0 else {
                throw HTTP.Failure(message: "token create \(name) failed: \(created.stderr)")
            }
            tokens[name] = created.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        return tokens
    }
}
