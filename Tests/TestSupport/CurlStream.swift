import Foundation
#if canImport(Glibc)
    import Glibc
#endif

/// A `curl -sN` running in the background (an event stream, say), whose output can be waited for as it arrives.
public final class CurlStream: @unchecked Sendable {
    // `text` is written by the pipe's readability handler and read by the test: both under `lock`.
    private let lock = NSLock()
    private var received = Data()
    private let process = Process()

    /// - Parameter seconds: curl's `--max-time`: the stream ends then at the latest.
    public init(_ arguments: [String], seconds: Int) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        process.arguments = ["-sN", "--max-time", String(seconds)] + arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        pipe.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let chunk = handle.availableData
            guard let self, !chunk.isEmpty else { return }
            self.lock.withLock { self.received.append(chunk) }
        }
        try process.run()
    }

    /// What arrived so far.
    public var text: String { lock.withLock { String(decoding: received, as: UTF8.self) } }

    public var isRunning: Bool { process.isRunning }

    /// Waits until everything in `expected` has arrived (true), or the deadline passes or curl ends first (false).
    @discardableResult
    public func wait(for expected: [String], timeout: Duration = .seconds(60)) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let text = self.text
            if expected.allSatisfy(text.contains) { return true }
            if !process.isRunning {
                try? await Task.sleep(for: .milliseconds(100))  // the last bytes may still be in the pipe
                return expected.allSatisfy(self.text.contains)
            }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return false
    }

    /// Waits until curl ends (the server closed the stream, or --max-time); false if it is still running at the deadline.
    public func waitForEnd(timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while process.isRunning && ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(50)) }
        return !process.isRunning
    }

    /// Ends curl if it still runs. SIGKILL: curl inherits the test runner's signal dispositions, and SIGTERM may be
    /// ignored there, which left it running until its --max-time.
    public func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    deinit { stop() }
}
