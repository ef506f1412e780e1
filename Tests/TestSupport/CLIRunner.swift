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
