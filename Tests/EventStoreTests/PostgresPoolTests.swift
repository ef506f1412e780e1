#if canImport(Glibc)
    import Glibc
#endif
@testable import Postgres
import ServiceLifecycle
import Synchronization
import TestSupport
import Testing

/// Polls `condition` every 10 ms for up to 5 s.
private func eventually(_ condition: () -> Bool) async throws -> Bool {
    let deadline = ContinuousClock.now + .seconds(5)
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try await Task.sleep(for: .milliseconds(10))
    }
    return condition()
}

/// A connection held until `release()`: what keeps a pool of one busy.
private final class Hold: Sendable {
    private let (stream, continuation) = AsyncStream<Void>.makeStream()
    func wait() async { for await _ in stream {} }
    func release() { continuation.finish() }
}

/// The waiters in the order they were served.
private final class Order: Sendable {
    let served = Mutex<[Int]>([])
}

/// State only an actor may touch: `withConnection` runs its body on the caller's isolation, so the body may use it.
private actor Tally {
    var queries = 0
    func count(on pool: PostgresPool) async throws -> Int {
        try await pool.withConnection { connection in
            try await connection.query("SELECT 1")
            queries += 1
        }
        return queries
    }
}

@Suite(
    "PostgreSQL connection pool", .serialized,
    .enabled(if: TestDatabase.isConfigured, "needs DATABASE_URL (scripts/test.sh)"))
struct PostgresPoolTests {
    @Test(
        "a TCP connection finds out that the database's host is gone: keepalive probes and a user timeout, the URL's values first"
    )
    func deadPeerDetection() async throws {
        let url = try #require(TestDatabase.url)
        try #require(url.contains("127.0.0.1") || url.contains("localhost"), "the test database is reached over TCP")
        let connection = try await PostgresConnection.connect(url: url)
        defer { connection.close() }
        #expect(connection.socketOption(level: SOL_SOCKET, name: SO_KEEPALIVE) == 1)
        #expect(connection.socketOption(level: Int32(IPPROTO_TCP), name: TCP_KEEPIDLE) == 3)
        #expect(connection.socketOption(level: Int32(IPPROTO_TCP), name: TCP_KEEPINTVL) == 1)
        #expect(connection.socketOption(level: Int32(IPPROTO_TCP), name: TCP_KEEPCNT) == 3)
        #expect(connection.socketOption(level: Int32(IPPROTO_TCP), name: 18 /* TCP_USER_TIMEOUT */) == 6000)
        let overridden = try await PostgresConnection.connect(
            url: url + (url.contains("?") ? "&" : "?") + "keepalives_idle=7&tcp_user_timeout=0")
        defer { overridden.close() }
        #expect(overridden.socketOption(level: Int32(IPPROTO_TCP), name: TCP_KEEPIDLE) == 7)
        #expect(overridden.socketOption(level: Int32(IPPROTO_TCP), name: 18) == 0)
    }

    @Test("a checkout that finds every connection lent waits at most the checkout timeout, naming why")
    func checkoutTimeout() async throws {
        let pool = PostgresPool(url: TestDatabase.url!, maximumConnections: 1, checkoutTimeout: .milliseconds(300))
        let hold = Hold()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await pool.withConnection { _ in await hold.wait() } }
            #expect(try await eventually { pool.counts.open == 1 && pool.counts.idle == 0 })
            let started = ContinuousClock.now
            do {
                try await pool.withConnection { _ in Issue.record("lent a connection that is in use") }
            } catch let error as PostgresError {
                #expect(error.kind == .checkoutTimeout)
                #expect(error.isUnavailable)
                #expect(error.message.contains("1 of 1 open"), "\(error.message)")
            }
            let waited = ContinuousClock.now - started
            #expect(waited >= .milliseconds(300) && waited < .seconds(3), "\(waited)")
            #expect(pool.counts.waiting == 0)
            hold.release()
            try await group.waitForAll()
        }
        // The connection came back and is lent again.
        #expect(try await pool.withConnection { try await $0.query("SELECT 41 + 1").scalar() } == "42")
        #expect(pool.counts.open == 1)
    }

    @Test("a connection that comes back between a checkout told to wait and its queueing is taken, not left idle")
    func returnedBeforeQueued() async throws {
        // The window between `checkout()` answering "wait" and `enqueue`: the pool's two lock takes. Before the fix,
        // the connection went idle (no one in line yet), and the waiter slept the whole timeout beside it.
        let connection = try await PostgresConnection.connect(url: TestDatabase.url!)
        defer { connection.close() }
        var state = PostgresPool.State()
        guard case .open = try state.checkout(maximum: 1) else { Issue.record("the first checkout opens"); return }
        guard case .wait = try state.checkout(maximum: 1) else { Issue.record("the second checkout waits"); return }
        let id = state.nextWaiterID()
        #expect(state.checkin(connection, at: .now) == nil, "no one is in line yet: the connection goes idle")
        #expect(state.idle.count == 1)
        let taken = try await Self.enqueue(id, into: &state)
        guard case .connection? = taken else {
            Issue.record("the waiter must take the connection that came back, not wait"); return
        }
        #expect(state.idle.isEmpty && state.waiters.isEmpty)
        // And a slot freed before queueing (a connection closed): the waiter may open one.
        let second = state.nextWaiterID()
        #expect(state.releaseSlot() == nil)
        let opens = try await Self.enqueue(second, into: &state)
        guard case .open? = opens else { Issue.record("the waiter must take the freed slot, not wait"); return }
    }

    /// What `enqueue` hands the waiter at once; nil when it queued it (taken out of the line again here).
    private static func enqueue(_ id: Int, into state: inout PostgresPool.State) async throws -> PostgresPool.Lease? {
        struct Queued: Error {}
        do {
            return try await withCheckedThrowingContinuation {
                (continuation: CheckedContinuation<PostgresPool.Lease, any Error>) in
                switch state.enqueue(id, continuation, maximum: 1) {
                case .lease(let lease): continuation.resume(returning: lease)
                case .queued: state.removeWaiter(id)?.resume(throwing: Queued())
                case .refused: continuation.resume(throwing: Queued())
                }
            }
        } catch is Queued {
            return nil
        }
    }

    @Test("a waiter whose task is cancelled leaves the line at once and throws CancellationError")
    func cancelledWaiter() async throws {
        let pool = PostgresPool(url: TestDatabase.url!, maximumConnections: 1, checkoutTimeout: .seconds(30))
        let hold = Hold()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await pool.withConnection { _ in await hold.wait() } }
            #expect(try await eventually { pool.counts.open == 1 && pool.counts.idle == 0 })
            let started = ContinuousClock.now
            let waiter = Task {
                try await pool.withConnection { _ in Issue.record("a cancelled waiter was lent a connection") }
            }
            #expect(try await eventually { pool.counts.waiting == 1 })
            waiter.cancel()
            let result = await waiter.result
            #expect(throws: CancellationError.self) { try result.get() }
            #expect(ContinuousClock.now - started < .seconds(5))
            #expect(pool.counts.waiting == 0)
            hold.release()
            try await group.waitForAll()
        }
        // The connection given back went idle, not to the cancelled waiter.
        #expect(pool.counts == (open: 1, idle: 1, waiting: 0))
    }

    @Test("a connection coming back is handed to the first waiter in line, without opening another")
    func handOver() async throws {
        let pool = PostgresPool(url: TestDatabase.url!, maximumConnections: 1)
        let hold = Hold()
        let order = Order()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await pool.withConnection { _ in await hold.wait() } }
            #expect(try await eventually { pool.counts.open == 1 && pool.counts.idle == 0 })
            for waiter in 1...3 {
                group.addTask {
                    try await pool.withConnection { connection in
                        try await connection.query("SELECT 1")
                        order.served.withLock { $0.append(waiter) }
                    }
                }
                #expect(try await eventually { pool.counts.waiting == waiter })
            }
            hold.release()
            try await group.waitForAll()
        }
        #expect(order.served.withLock { $0 } == [1, 2, 3])
        #expect(pool.counts == (open: 1, idle: 1, waiting: 0))
    }

    @Test("the body runs on the caller's isolation: an actor's state is used inside it without a hop")
    func callerIsolation() async throws {
        let pool = PostgresPool(url: TestDatabase.url!, maximumConnections: 2)
        let tally = Tally()
        #expect(try await tally.count(on: pool) == 1)
        #expect(try await tally.count(on: pool) == 2)
    }

    /// The server processes of two connections lent at once (both of a pool of two idle).
    private func lentPIDs(_ pool: PostgresPool) async throws -> Set<String> {
        let hold = Hold()
        return try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<2 {
                group.addTask {
                    try await pool.withConnection { connection in
                        let pid = try await connection.query("SELECT pg_backend_pid()").scalar() ?? ""
                        await hold.wait()
                        return pid
                    }
                }
            }
            #expect(try await eventually { pool.counts.idle == 0 && pool.counts.open == 2 })
            hold.release()
            return try await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
    }

    @Test(
        "run() keeps keepIdle connections open: opened at start, replaced (not closed) once idle past the timeout; the rest close"
    )
    func keepsSpareConnections() async throws {
        let pool = PostgresPool(
            url: TestDatabase.url!, maximumConnections: 4, idleTimeout: .milliseconds(200), keepIdle: 2)
        let plain = PostgresPool(url: TestDatabase.url!, maximumConnections: 4, idleTimeout: .milliseconds(200))
        let runners = [Task { try await pool.run() }, Task { try await plain.run() }]
        #expect(
            try await eventually { pool.counts == (open: 2, idle: 2, waiting: 0) }, "opened at start: \(pool.counts)")
        let first = try await lentPIDs(pool)
        #expect(first.count == 2)
        // Three lent at once: a third is opened; once idle past the timeout it is closed, as every one of a plain pool.
        for used in [pool, plain] {
            let holds = (0..<3).map { _ in Hold() }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for hold in holds { group.addTask { try await used.withConnection { _ in await hold.wait() } } }
                #expect(try await eventually { used.counts.open == 3 && used.counts.idle == 0 })
                for hold in holds { hold.release() }
                try await group.waitForAll()
            }
            #expect(used.counts.idle == 3)
        }
        #expect(try await eventually { plain.counts == (open: 0, idle: 0, waiting: 0) }, "\(plain.counts)")
        #expect(try await eventually { pool.counts == (open: 2, idle: 2, waiting: 0) }, "\(pool.counts)")
        // The two kept are new server processes (each look uses them, so it waits longer than the timeout between looks).
        var replaced = false
        for _ in 0..<10 where !replaced {
            try await Task.sleep(for: .milliseconds(500))
            replaced = try await lentPIDs(pool).isDisjoint(with: first)
        }
        #expect(replaced, "the kept connections were not replaced")
        for runner in runners { runner.cancel() }
        for runner in runners { _ = await runner.result }
        #expect(pool.counts.open == 0 && plain.counts.open == 0)
    }

    @Test("run() owns the pool's life: when it ends, connections close, waiters fail and no more are lent")
    func runEndsThePool() async throws {
        let pool = PostgresPool(url: TestDatabase.url!, maximumConnections: 1, checkoutTimeout: .seconds(30))
        let hold = Hold()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await pool.withConnection { _ in await hold.wait() } }
            #expect(try await eventually { pool.counts.open == 1 && pool.counts.idle == 0 })
            let waiter = Task { try await pool.withConnection { _ in } }
            #expect(try await eventually { pool.counts.waiting == 1 })
            // run() is cancelled, as at shutdown; the lent connection comes back after.
            let runner = Task { try await pool.run() }
            runner.cancel()
            _ = await runner.result
            do {
                try await waiter.value
                Issue.record("a waiter was lent a connection from a closed pool")
            } catch let error as PostgresError {
                #expect(error.kind == .poolClosed)
            }
            hold.release()
            group.cancelAll()
        }
        #expect(pool.counts == (open: 0, idle: 0, waiting: 0))
        await #expect(throws: PostgresError.self) { try await pool.withConnection { _ in } }
    }

    @Test(
        "a statement sent without waiting runs after the first, on its own, before the connection's next call; its failure is dropped"
    )
    func followUpStatement() async throws {
        let connection = try await PostgresConnection.connect(url: TestDatabase.url!)
        defer { connection.close() }
        try await connection.query("CREATE TEMPORARY TABLE follow_up (n integer PRIMARY KEY)")
        try await connection.query("CREATE TEMPORARY SEQUENCE follow_up_sent")
        let rows = try await connection.query("SELECT 41 + 1", preparedAs: "follow_first") { rows in
            PostgresQuery(sql: "INSERT INTO follow_up VALUES ($1::integer)", binds: [rows.scalar()])
        }
        #expect(rows.scalar() == "42")
        // The next call reads the follow-up's answer first, and sees what it did: it committed on its own.
        #expect(try await connection.query("SELECT n FROM follow_up").scalar() == "42")
        #expect(!connection.isInTransaction)
        // A follow-up that fails was sent (the sequence, outside transactions, moved) and costs the next call nothing.
        try await connection.query("SELECT 1", preparedAs: "follow_again") { _ in
            PostgresQuery(sql: "SELECT 1 / (nextval('follow_up_sent') - 1)")
        }
        #expect(
            try await connection.query("SELECT last_value, is_called FROM follow_up_sent").rows.first == ["1", "t"])
        // Inside the caller's transaction nothing is sent: the follow-up is never part of someone else's work.
        try await connection.withTransaction { connection in
            try await connection.query("SELECT 7", preparedAs: "follow_in_tx") { rows in
                PostgresQuery(sql: "INSERT INTO follow_up VALUES ($1::integer)", binds: [rows.scalar()])
            }
        }
        #expect(try await connection.query("SELECT count(*) FROM follow_up WHERE n = 7").scalar() == "0")
    }

    @Test(
        "a connection that breaks while a follow-up runs is opened again before the next call, which is then sent, not failed"
    )
    func followUpBreaksTheConnection() async throws {
        let connection = try await PostgresConnection.connect(url: TestDatabase.url!)
        defer { connection.close() }
        let before = try await connection.query("SELECT pg_backend_pid()").scalar()
        // The follow-up ends its own server process, as a failover or an administrator would.
        try await connection.query("SELECT 1", preparedAs: "follow_kill") { _ in
            PostgresQuery(sql: "SELECT pg_terminate_backend(pg_backend_pid())")
        }
        let after = try await connection.query("SELECT pg_backend_pid()").scalar()
        #expect(after != nil && after != before)
        #expect(connection.isHealthy)
        // The session is set up as a new connection's (UTC), and statements prepared before are prepared again.
        #expect(try await connection.query("SHOW TimeZone").scalar() == "UTC")
        #expect(try await connection.query("SELECT 1", preparedAs: "follow_kill").scalar() == "1")
    }

    @Test(
        "an idle connection whose server process ended is replaced before it is lent: the borrower's statement is sent, not failed"
    )
    func deadIdleConnectionReplaced() async throws {
        let pool = PostgresPool(url: TestDatabase.url!, maximumConnections: 1, checkoutTimeout: .seconds(5))
        let first = try await pool.withConnection { try await $0.query("SELECT pg_backend_pid()").scalar() }
        let admin = try await PostgresConnection.connect(url: TestDatabase.url!)
        defer { admin.close() }
        try await admin.query("SELECT pg_terminate_backend(\(first ?? "0")::integer)")
        // Gone from the server's list of processes (the termination is asynchronous).
        var gone = false
        for _ in 0..<500 where !gone {
            gone =
                try await admin.query("SELECT count(*) FROM pg_stat_activity WHERE pid = \(first ?? "0")::integer")
                .scalar() == "0"
            if !gone { try await Task.sleep(for: .milliseconds(10)) }
        }
        #expect(gone)
        // A server process leaves that list in its exit hooks, before the process ends and the kernel closes its socket:
        // until the close arrives, the pool's connection has only the FATAL message, which libpq takes as a notice
        // while idle, and looks alive (seen once in CI on a loaded machine: the dead connection was lent and the
        // statement failed). Time for the close to arrive.
        try await Task.sleep(for: .milliseconds(200))
        let second = try await pool.withConnection { try await $0.query("SELECT pg_backend_pid()").scalar() }
        #expect(second != nil && second != first)
        #expect(pool.counts.open == 1)
    }
}
