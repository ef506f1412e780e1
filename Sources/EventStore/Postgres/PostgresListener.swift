import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What a LISTEN connection reports.
public enum ListenerEvent: Sendable, Equatable {
    /// LISTEN is in place (first time or after a reconnect): catch up by position now, since
    /// notifications sent while disconnected are lost.
    case listening
    /// A notification arrived; its payload is a hint, never the truth.
    case notification(payload: String)
    /// The connection dropped; the listener reconnects by itself.
    case disconnected(reason: String)
}

/// Holds one connection in `LISTEN` on a dedicated thread and reports what arrives.
///
/// A dedicated thread, because waiting on the socket blocks; it must not hold a cooperative-pool thread.
public final class PostgresListener: Sendable {
    private let url: String
    private let channel: String
    private let reconnectDelay: Double
    private let stopFlag = StopFlag()

    /// - Parameters:
    ///   - channel: the NOTIFY channel; a constant of this code base (it is spliced into `LISTEN`).
    public init(url: String, channel: String, reconnectDelay: Double = 1.0) {
        precondition(channel.allSatisfy { $0.isLetter || $0 == "_" }, "NOTIFY channel must be an identifier")
        self.url = url
        self.channel = channel
        self.reconnectDelay = reconnectDelay
    }

    /// Starts the listening thread; the stream ends when `stop()` is called.
    public func events() -> AsyncStream<ListenerEvent> {
        let (stream, continuation) = AsyncStream<ListenerEvent>.makeStream(bufferingPolicy: .bufferingNewest(1024))
        let thread = Thread { [self] in self.run(continuation) }
        thread.name = "cueline-listen"
        thread.start()
        continuation.onTermination = { [stopFlag] _ in stopFlag.set() }
        return stream
    }

    public func stop() {
        stopFlag.set()
    }

    private func run(_ continuation: AsyncStream<ListenerEvent>.Continuation) {
        defer { continuation.finish() }
        while !stopFlag.isSet {
            let connection: PostgresConnection
            do {
                connection = try blocking { try await PostgresConnection.connect(url: self.url) }
                _ = try blocking { try await connection.query(PostgresQuery(sql: "LISTEN \(self.channel)")) }
            } catch {
                continuation.yield(.disconnected(reason: "\(error)"))
                sleepInterruptibly(reconnectDelay)
                continue
            }
            continuation.yield(.listening)
            let descriptor = connection.socketDescriptor()
            while !stopFlag.isSet {
                var pfd = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
                let ready = poll(&pfd, 1, 200)
                if ready < 0 && errno == EINTR { continue }
                do {
                    for received in try connection.consumeNotifications() {
                        continuation.yield(.notification(payload: received.payload))
                    }
                } catch {
                    continuation.yield(.disconnected(reason: "\(error)"))
                    break
                }
            }
            connection.close()
            if !stopFlag.isSet { sleepInterruptibly(reconnectDelay) }
        }
    }

    private func sleepInterruptibly(_ seconds: Double) {
        var remaining = seconds
        while remaining > 0 && !stopFlag.isSet {
            usleep(50_000)
            remaining -= 0.05
        }
    }
}

/// Runs async work from a plain thread and waits for it. Only for the listener's own thread.
private func blocking<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) throws -> T {
    let box = ResultBox<T>()
    let semaphore = DispatchSemaphore(value: 0)
    Task {
        box.set(await Result { try await work() })
        semaphore.signal()
    }
    semaphore.wait()
    return try box.get()
}

private final class ResultBox<T: Sendable>: @unchecked Sendable {
    // Written once before the semaphore is signalled, read after it is waited on.
    private var result: Result<T, any Error>?
    func set(_ value: Result<T, any Error>) { result = value }
    func get() throws -> T { try result!.get() }
}

private final class StopFlag: @unchecked Sendable {
    // Guarded by `lock`.
    private let lock = NSLock()
    private var value = false
    var isSet: Bool { lock.withLock { value } }
    func set() { lock.withLock { value = true } }
}

extension Result where Failure == any Error {
    init(catching body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}
