import Logging
import ServiceLifecycle
import Synchronization

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

/// Holds one connection in `LISTEN` and reports what arrives to its subscribers.
///
/// A `Service`: `run()` is the LISTEN loop (connect, `LISTEN`, wait for notifications on the connection's own
/// thread in short slices, reconnect after a delay when the connection drops) until graceful shutdown or
/// cancellation; then the subscribers' streams finish. Subscribe before or while it runs: a subscriber sees what
/// arrives from then on.
public final class PostgresListener: Service, Sendable {
    private let url: String
    private let channel: String
    private let reconnectDelay: Duration
    private let logger: Logger
    private let subscribers = Mutex(Subscribers())

    private struct Subscriber {
        var events: AsyncStream<ListenerEvent>.Continuation?
        var wakeups: AsyncStream<Void>.Continuation?
        /// Notifications whose payload this says is already known wake no one (`wakeups(skipping:)`).
        var skipping: (@Sendable (String) -> Bool)?
    }

    private struct Subscribers {
        var next = 0
        var all: [Int: Subscriber] = [:]
        var finished = false
    }

    /// - Parameters:
    ///   - channel: the NOTIFY channel; a constant of this code base (it is spliced into `LISTEN`).
    public init(
        url: String, channel: String, reconnectDelay: Duration = .seconds(1),
        logger: Logger = Logger(label: "cueline.postgres.listener")
    ) {
        precondition(channel.allSatisfy { $0.isLetter || $0 == "_" }, "NOTIFY channel must be an identifier")
        self.url = url
        self.channel = channel
        self.reconnectDelay = reconnectDelay
        self.logger = logger
    }

    /// What the listener reports from now on, until its `run()` ends or the stream is dropped.
    public func events() -> AsyncStream<ListenerEvent> {
        subscribe(bufferingNewest: 1024) { $0.events = $1 }
    }

    /// A wake-up whenever the log may have grown: LISTEN in place (after a reconnect too) and each notification,
    /// except those whose payload `skipping` says the subscriber already knows (its own appends' hints).
    public func wakeups(skipping: (@Sendable (String) -> Bool)? = nil) -> AsyncStream<Void> {
        subscribe(bufferingNewest: 1) {
            $0.wakeups = $1
            $0.skipping = skipping
        }
    }

    private func subscribe<Element>(
        bufferingNewest limit: Int, _ register: (inout Subscriber, AsyncStream<Element>.Continuation) -> Void
    ) -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream<Element>.makeStream(bufferingPolicy: .bufferingNewest(limit))
        let id: Int? = subscribers.withLock { subscribers in
            guard !subscribers.finished else { return nil }
            subscribers.next += 1
            var subscriber = Subscriber()
            register(&subscriber, continuation)
            subscribers.all[subscribers.next] = subscriber
            return subscribers.next
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.subscribers.withLock { $0.all.removeValue(forKey: id) }
        }
        return stream
    }

    public func run() async throws {
        defer { finish() }
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            let connection: PostgresConnection
            do {
                connection = try await PostgresConnection.connect(url: url)
                try await connection.query(PostgresQuery(sql: "LISTEN \(channel)"))
            } catch {
                if Task.isCancelled { return }
                publish(.disconnected(reason: "\(error)"))
                logger.debug("cannot LISTEN; retrying", metadata: ["error": "\(error)"])
                try? await cancelWhenGracefulShutdown { try await Task.sleep(for: self.reconnectDelay) }
                continue
            }
            publish(.listening)
            while !Task.isCancelled && !Task.isShuttingDownGracefully {
                do {
                    for received in try await connection.notifications(waitingUpTo: .milliseconds(200)) {
                        publish(.notification(payload: received.payload))
                    }
                } catch is CancellationError {
                    break
                } catch {
                    publish(.disconnected(reason: "\(error)"))
                    break
                }
            }
            connection.close()
            if !Task.isCancelled && !Task.isShuttingDownGracefully {
                try? await cancelWhenGracefulShutdown { try await Task.sleep(for: self.reconnectDelay) }
            }
        }
    }

    private func publish(_ event: ListenerEvent) {
        let targets = subscribers.withLock { Array($0.all.values) }
        for subscriber in targets {
            subscriber.events?.yield(event)
            if case .disconnected = event { continue }
            if case .notification(let payload) = event, subscriber.skipping?(payload) == true { continue }
            subscriber.wakeups?.yield()
        }
    }

    private func finish() {
        let targets = subscribers.withLock { subscribers in
            subscribers.finished = true
            defer { subscribers.all.removeAll() }
            return Array(subscribers.all.values)
        }
        for subscriber in targets {
            subscriber.events?.finish()
            subscriber.wakeups?.finish()
        }
    }
}
