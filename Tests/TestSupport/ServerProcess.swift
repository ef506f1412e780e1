import Foundation
#if canImport(Glibc)
    import Glibc
#endif

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A `cueline serve` process on a free port, stopped when the test is done.
public final class ServerProcess: @unchecked Sendable {
    // Set once in init; the process is only terminated from `stop()`.
    public let baseURL: String
    public let port: Int
    private let process: Process
    public let logFile: URL

    public init(databaseURL: String, extraArguments: [String] = []) throws {
        port = Self.freePort()
        baseURL = "http://127.0.0.1:\(port)"
        process = Process()
        process.executableURL = URL(fileURLWithPath: CLIRunner().executable)
        process.arguments = ["serve", "--port", String(port)] + extraArguments
        var environment = ProcessInfo.processInfo.environment
        environment["DATABASE_URL"] = databaseURL
        process.environment = environment
        logFile = FileManager.default.temporaryDirectory.appendingPathComponent("cueline-serve-\(port).log")
        _ = FileManager.default.createFile(atPath: logFile.path, contents: nil)
        let handle = try FileHandle(forWritingTo: logFile)
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
    }

    /// A port below Linux's ephemeral range (32768–60999), so that no client connection of a flood test can hold
    /// it, and that nothing listens on right now.
    static func freePort() -> Int {
        for _ in 0..<100 {
            let candidate = Int.random(in: 10_000..<32_000)
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { continue }
            defer { close(fd) }
            if withLoopbackAddress(port: candidate, { bind(fd, $0, $1) }) == 0 { return candidate }
        }
        return Int.random(in: 10_000..<32_000)
    }

    /// Waits until /healthz answers.
    public func waitUntilReady(timeout: Duration = .seconds(20)) async throws {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let (_, status) = try? await HTTP.get(baseURL + "/readyz"), status == 200 { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw HTTP.Failure(message: "cueline serve did not become ready: \(log)")
    }

    public var log: String { (try? String(contentsOf: logFile, encoding: .utf8)) ?? "" }

    /// The server's process id.
    public var pid: Int32 { process.processIdentifier }

    public func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }

    /// The log goes with the process (a failure to start carries it in its message); set CUELINE_KEEP_SERVER_LOGS to
    /// keep every run's in the temporary directory.
    deinit {
        stop()
        if ProcessInfo.processInfo.environment["CUELINE_KEEP_SERVER_LOGS"] == nil {
            try? FileManager.default.removeItem(at: logFile)
        }
    }
}

public enum HTTP {
    public struct Failure: Error, CustomStringConvertible {
        public var message: String
        public var description: String { message }
    }

    /// GET with no caching; returns the body and the status.
    public static func get(_ url: String, headers: [String: String] = [:]) async throws -> (String, Int) {
        let (body, status, _) = try await getWithHeaders(url, headers: headers)
        return (body, status)
    }

    /// GET with no caching; returns the body, the status and the response headers.
    public static func getWithHeaders(_ url: String, headers: [String: String] = [:]) async throws -> (
        String, Int, [String: String]
    ) {
        var request = URLRequest(url: URL(string: url)!)
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        request.cachePolicy = .reloadIgnoringLocalCacheData
        request.timeoutInterval = 5
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = response as? HTTPURLResponse
        var headers: [String: String] = [:]
        for (name, value) in http?.allHeaderFields ?? [:] { headers["\(name)".lowercased()] = "\(value)" }
        return (String(decoding: data, as: UTF8.self), http?.statusCode ?? 0, headers)
    }

    /// The part an LL-HLS media playlist hints at (`#EXT-X-PRELOAD-HINT …/seg<n>.<p>.m4s`: the part in progress),
    /// asking every `interval` until the playlist has one, `tries` times at most.
    public static func hintedPart(_ url: String, tries: Int = 100, every interval: Duration = .milliseconds(20))
        async throws -> (msn: Int64, part: Int64)
    {
        for _ in 0..<tries {
            let text = try await get(url).0
            if let hint = text.split(separator: "\n").first(where: { $0.hasPrefix("#EXT-X-PRELOAD-HINT") }) {
                let numbers = hint.split(separator: "seg").last!.split(separator: ".").prefix(2).compactMap {
                    Int64($0)
                }
                guard numbers.count == 2 else { throw Failure(message: "cannot read the hinted part of \(hint)") }
                return (numbers[0], numbers[1])
            }
            try await Task.sleep(for: interval)
        }
        throw Failure(message: "\(url) hinted at no part after \(tries) tries")
    }
}

extension ServerProcess {
    /// A fresh, migrated database with a ready `cueline serve` on it, and a CLI pointed at the same database.
    public static func onFreshDatabase(extraArguments: [String] = []) async throws -> (
        url: String, cli: CLIRunner, server: ServerProcess
    ) {
        let url = try await TestDatabase.makeFreshDatabase()
        let cli = CLIRunner(environment: ["DATABASE_URL": url])
        let migrate = try cli.run(["migrate"])
        guard migrate.status == 0 else { throw HTTP.Failure(message: "cueline migrate failed: \(migrate.stderr)") }
        let server = try ServerProcess(databaseURL: url, extraArguments: extraArguments)
        try await server.waitUntilReady()
        return (url, cli, server)
    }
}

/// Calls `body` with `127.0.0.1:port` as a socket address and its length (for `connect` or `bind`).
public func withLoopbackAddress<R>(port: Int, _ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
}
