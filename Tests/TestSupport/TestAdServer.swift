import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// `scripts/lib/test_adserver.py` on a free port: an ad decision server answering VAST, VMAP and every hostile
/// answer a real one may send, counting what it was asked (`/stats`). Stopped when released.
public final class TestAdServer: @unchecked Sendable {
    // Set once in init; the process is only terminated from `stop()` and deinit.
    public let baseURL: String
    private let process: Process

    /// The script, from this file's place in the repository.
    public static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../scripts/lib/test_adserver.py").standardized.path

    /// Whether python3 can run it here.
    public static let available: Bool =
        FileManager.default.fileExists(atPath: script)
        && FileManager.default.isExecutableFile(atPath: "/usr/bin/python3")

    /// - Parameter mediaBase: where the creatives' HLS playlists are said to be (`ad/pod1.m3u8` … under it).
    public init(mediaBase: String = "http://127.0.0.1:9/media") throws {
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [Self.script, "--port", "0", "--media-base", mediaBase]
        let stdout = Pipe()
        process.standardOutput = stdout
        process.standardError = FileHandle.nullDevice
        try process.run()
        // The first line is `listening PORT`.
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = stdout.fileHandleForReading.availableData
            guard !chunk.isEmpty else { break }
            line += chunk
        }
        let text = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard text.hasPrefix("listening "), let port = Int(text.dropFirst(10)) else {
            process.terminate()
            throw HTTP.Failure(message: "test_adserver.py did not start: \(text.debugDescription)")
        }
        baseURL = "http://127.0.0.1:\(port)"
    }

    deinit { stop() }

    /// Kills the server without waiting on it: Foundation's `waitUntilExit` spun a core and never returned when
    /// called from a deinit off the main thread (Swift 6.3, Linux); the process is reaped by Foundation's monitor.
    public func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    /// `/stats`: requests by path, the most in flight at once, tracking hits and the last requests.
    public func stats() async throws -> [String: Any] {
        let (body, _) = try await HTTP.get(baseURL + "/stats")
        return try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any] ?? [:]
    }

    public func reset() async throws {
        _ = try await HTTP.get(baseURL + "/reset")
    }
}
