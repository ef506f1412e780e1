import Logging
import ServiceLifecycle
import Synchronization

/// A small pool of connections, lent to one task at a time through a closure.
///
/// A `Service`: `run()` owns its background work (closing connections idle longer than `idleTimeout`) and, when it
/// ends (graceful shutdown or cancellation), closes every connection, fails the waiters and lends no more.
/// One-shot commands may use a pool whose `run()` was never started: checkouts work the same, connections open on
/// demand and close when the pool goes away.
///
/// A checkout that finds no free connection waits in line, at most `checkoutTimeout`
/// (then `PostgresError.checkoutTimeout`); a waiter whose task is cancelled leaves the line and throws
/// `CancellationError`.
public final class PostgresPool: Service, Sendable {
    public let url: String
    let maximumConnections: Int
    let checkoutTimeout: Duration
    let idleTimeout: Duration
    let keepIdle: Int
    let logger: Logger

    private let state = Mutex(State())

    /// - Parameters:
    ///   - url: a `postgresql://` URL or libpq `key=value` string; empty means libpq's `PG*` variables.
    ///   - maximumConnections: how many connections may be open at once.
    ///   - checkoutTimeout: how long a checkout waits for a connection to become free.
    ///   - idleTimeout: a connection unused this long is closed by `run()`.
    ///   - keepIdle: `run()` keeps this many idle connections open, opening them when it starts and replacing those idle
    ///     past `idleTimeout` (a flow idle for hours may have been dropped by a firewall on the way): a command that
    ///     finds the one connection in use (a watermark read) is not the one that pays for opening another, which can
    ///     make it miss its decision time and be decided again later.
    public init(
        url: String, maximumConnections: Int = 8, checkoutTimeout: Duration = .seconds(10),
        idleTimeout: Duration = .seconds(60), keepIdle: Int = 0, logger: Logger = Logger(label: "cueline.postgres.pool")
    ) {
        self.url = url
        self.maximumConnections = max(1, maximumConnections)
        self.checkoutTimeout = checkoutTimeout
        self.idleTimeout = idleTimeout
        self.keepIdle = min(max(0, keepIdle), self.maximumConnections)
        self.logger = logger
    }

    deinit {
        let idle = state.withLock { state in
            defer { state.idle.removeAll() }
            return state.idle
        }
        for entry in idle { entry.connection.close() }
    }

    /// Lends a connection to `body` and takes it back afterwards; a broken connection is discarded.
    ///
    /// `body` runs on the caller's isolation (no hop to the pool).
    @discardableResult
    public func withConnection<T>(
        isolation actor: isolated (any Actor)? = #isolation, _ body: (PostgresConnection) async throws -> sending T
    ) async throws -> sending T {
        let connection = try await checkout()
        do {
            let value = try await body(connection)
            checkin(connection)
            return value
        } catch {
            checkin(connection)
            throw error
        }
    }

    /// Runs `body` in a transaction on a pooled connection.
    @discardableResult
    public func withTransaction<T>(
        isolation actor: isolated (any Actor)? = #isolation, _ body: (PostgresConnection) async throws -> sending T
    ) async throws -> sending T {
        try await withConnection { connection in
            try await connection.withTransaction(body)
        }
    }

    /// Closes idle connections every few seconds until shutdown; then closes every connection and fails the waiters.
    public func run() async throws {
        let interval = min(idleTimeout, .seconds(5))
        await warm()
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            do {
                try await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
            } catch {
                break
            }
            let now = ContinuousClock.now
            let stale = state.withLock { $0.takeIdle(unusedSince: now - idleTimeout) }
            for connection in stale { connection.close() }
            if !stale.isEmpty { logger.debug("closed idle connections", metadata: ["count": "\(stale.count)"]) }
            await warm()
        }
        close()
    }

    /// Opens connections until `keepIdle` are idle (as far as the maximum allows); when one cannot be opened, that is
    /// logged once until one can, and checkouts open connections as they need them meanwhile.
    func warm() async {
        let missing = state.withLock { state -> Int in
            guard !state.closed else { return 0 }
            let missing = max(0, min(keepIdle - state.idle.count, maximumConnections - state.open))
            state.open += missing
            return missing
        }
        for opened in 0..<missing {
            do {
                checkin(try await PostgresConnection.connect(url: url))
            } catch {
                for _ in opened..<missing { giveBack(.open) }
                if state.withLock({ !$0.sparesFailing }) {
                    logger.warning(
                        "could not open a spare database connection; commands open connections as they need them until it can (tried again every 5 s)",
                        metadata: ["error": "\(error)"])
                }
                state.withLock { $0.sparesFailing = true }
                return
            }
        }
        state.withLock { $0.sparesFailing = false }
    }

    /// Closes every idle connection and refuses checkouts from now on; waiters fail with `poolClosed`. Connections
    /// lent out are closed when they come back.
    public func close() {
        let (idle, waiters) = state.withLock { $0.shutDown() }
        for connection in idle { connection.close() }
        for waiter in waiters { waiter.resume(throwing: Self.closedError()) }
    }

    /// Connections open now (idle and lent), idle ones, and checkouts waiting in line: for tests and metrics.
    public var counts: (open: Int, idle: Int, waiting: Int) {
        state.withLock { ($0.open, $0.idle.count, $0.waiters.count) }
    }

    // MARK: - Checkout

    private func checkout() async throws -> PostgresConnection {
        try Task.checkCancellation()
        switch try state.withLock({ try $0.checkout(maximum: maximumConnections) }) {
        case .connection(let connection):
            return try await usable(connection)
        case .open:
            return try await open()
        case .wait:
            switch try await waitInLine() {
            case .connection(let connection): return try await usable(connection)
            case .open: return try await open()
            }
        }
    }

    /// An idle connection whose server process ended meanwhile (a restart, `pg_terminate_backend`, a follow-up that
    /// broke it) is closed and replaced in its slot before it is lent: the borrower's statement is then sent, rather
    /// than failing unsent.
    private func usable(_ connection: PostgresConnection) async throws -> PostgresConnection {
        if connection.isAliveWithoutWaiting { return connection }
        connection.close()
        return try await open()
    }

    /// Opens a connection for a slot already counted in `open`; gives the slot back when that fails.
    private func open() async throws -> PostgresConnection {
        do {
            return try await PostgresConnection.connect(url: url)
        } catch {
            giveBack(.open)
            throw error
        }
    }

    private func checkin(_ connection: PostgresConnection) {
        if connection.isHealthy && !connection.isInTransaction {
            let handedTo = state.withLock { $0.checkin(connection, at: .now) }
            if handedTo == nil { return }
            handedTo!.resume(returning: .connection(connection))
        } else {
            connection.close()
            giveBack(.open)
        }
    }

    /// Returns what a waiter was given but cannot use: the connection goes back, the slot to the next in line.
    private func giveBack(_ lease: Lease) {
        switch lease {
        case .connection(let connection):
            checkin(connection)
        case .open:
            if let next = state.withLock({ $0.releaseSlot() }) { next.resume(returning: .open) }
        }
    }

    /// Waits for a connection (or a slot to open one) at most `checkoutTimeout`; leaves the line when cancelled.
    private func waitInLine() async throws -> Lease {
        let id = state.withLock { $0.nextWaiterID() }
        let timeout = checkoutTimeout
        return try await withThrowingTaskGroup(of: Lease?.self) { group in
            group.addTask {
                try await withTaskCancellationHandler {
                    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Lease, any Error>) in
                        switch self.state.withLock({ $0.enqueue(id, continuation, maximum: self.maximumConnections) }) {
                        case .queued: break
                        case .refused: continuation.resume(throwing: CancellationError())
                        case .lease(let lease): continuation.resume(returning: lease)
                        }
                    }
                } onCancel: {
                    self.state.withLock { $0.removeWaiter(id) }?.resume(throwing: CancellationError())
                }
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                return nil
            }
            let first: Result<Lease?, any Error>
            do {
                first = .success(try await group.next() ?? nil)
            } catch {
                first = .failure(error)
            }
            group.cancelAll()
            if case .success(let lease?) = first { return lease }
            // Timed out, cancelled or closed: a lease handed over meanwhile must not be lost.
            while true {
                do {
                    guard let result = try await group.next() else { break }
                    if let lease = result { giveBack(lease) }
                } catch {
                    continue
                }
            }
            switch first {
            case .failure(let error): throw error
            case .success: throw PostgresError(kind: .checkoutTimeout, message: timeoutMessage())
            }
        }
    }

    private func timeoutMessage() -> String {
        let (open, _, _) = counts
        return
            "no database connection became free within \(checkoutTimeout) (\(open) of \(maximumConnections) open, all in use)"
    }

    private static func closedError() -> PostgresError {
        PostgresError(kind: .poolClosed, message: "the database connection pool is shut down")
    }
}

extension PostgresPool {
    /// What a waiter is given: a connection, or a free slot to open one.
    enum Lease: Sendable {
        case connection(PostgresConnection)
        case open
    }

    /// The pool's bookkeeping, changed only under the pool's `Mutex`. Mutating methods return what the caller must
    /// do once the lock is released (resume a waiter, close connections, open one).
    struct State: ~Copyable {
        struct Idle {
            var connection: PostgresConnection
            var since: ContinuousClock.Instant
        }

        enum Checkout {
            case connection(PostgresConnection)
            case open
            case wait
        }

        var idle: [Idle] = []
        /// Open connections, idle and lent, plus slots being opened.
        var open = 0
        var waiters: [(id: Int, continuation: CheckedContinuation<Lease, any Error>)] = []
        /// Waiters given an id but not queued yet, and those of them cancelled meanwhile.
        var notYetQueued: Set<Int> = []
        var cancelledEarly: Set<Int> = []
        var lastWaiterID = 0
        var closed = false
        /// The last attempt to open the spare connections failed (logged once until one opens).
        var sparesFailing = false

        mutating func checkout(maximum: Int) throws -> Checkout {
            if closed { throw PostgresPool.closedError() }
            if let entry = idle.popLast() { return .connection(entry.connection) }
            if open < maximum {
                open += 1
                return .open
            }
            return .wait
        }

        /// Takes a connection back; returns the waiter to hand it to, if one waits.
        mutating func checkin(_ connection: PostgresConnection, at now: ContinuousClock.Instant)
            -> CheckedContinuation<Lease, any Error>?
        {
            if closed {
                open -= 1
                connection.close()
                return nil
            }
            if !waiters.isEmpty { return waiters.removeFirst().continuation }
            idle.append(Idle(connection: connection, since: now))
            return nil
        }

        /// A slot freed (a connection closed or never opened): the next waiter may open one.
        mutating func releaseSlot() -> CheckedContinuation<Lease, any Error>? {
            if !closed, !waiters.isEmpty { return waiters.removeFirst().continuation }
            open -= 1
            return nil
        }

        mutating func nextWaiterID() -> Int {
            lastWaiterID += 1
            notYetQueued.insert(lastWaiterID)
            return lastWaiterID
        }

        enum Enqueued {
            case queued
            /// Cancelled already, or the pool closed.
            case refused
            /// A connection came back or a slot was freed between the checkout and now (when no one was in line to
            /// be handed it): the waiter takes it instead of waiting for the next one.
            case lease(Lease)
        }

        /// Queues a waiter, unless it was cancelled already, the pool closed, or what it waits for is free now.
        mutating func enqueue(_ id: Int, _ continuation: CheckedContinuation<Lease, any Error>, maximum: Int)
            -> Enqueued
        {
            notYetQueued.remove(id)
            if cancelledEarly.remove(id) != nil || closed { return .refused }
            if let entry = idle.popLast() { return .lease(.connection(entry.connection)) }
            if open < maximum {
                open += 1
                return .lease(.open)
            }
            waiters.append((id, continuation))
            return .queued
        }

        /// Removes a cancelled waiter and returns it to be resumed; nil when it was served already.
        mutating func removeWaiter(_ id: Int) -> CheckedContinuation<Lease, any Error>? {
            guard let index = waiters.firstIndex(where: { $0.id == id }) else {
                if notYetQueued.contains(id) { cancelledEarly.insert(id) }
                return nil
            }
            return waiters.remove(at: index).continuation
        }

        mutating func takeIdle(unusedSince cutoff: ContinuousClock.Instant) -> [PostgresConnection] {
            let stale = idle.filter { $0.since < cutoff }.map(\.connection)
            idle.removeAll { $0.since < cutoff }
            open -= stale.count
            return stale
        }

        mutating func shutDown() -> ([PostgresConnection], [CheckedContinuation<Lease, any Error>]) {
            closed = true
            let connections = idle.map(\.connection)
            open -= idle.count
            idle.removeAll()
            let pending = waiters.map(\.continuation)
            waiters.removeAll()
            return (connections, pending)
        }
    }
}
