import CLibPQ
import Logging
import NIOPosix
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One libpq connection, with the thread its calls run on.
///
/// libpq calls block and a connection is not thread-safe, so each connection owns one thread (a one-thread
/// `NIOThreadPool`): every call runs there, never on Swift's cooperative pool, and one at a time. The handle
/// lives in a `Mutex`, so the few calls made from elsewhere (`isHealthy`, `close()`) wait for a running statement
/// instead of racing it (a follow-up sent unawaited, `query(_:preparedAs:thenSend:)`, may still be running on the server
/// then; it is over before the next call's statement is sent). Callers must still not interleave statements from two
/// tasks; the pool lends a connection to one at a time. `close()` (or the last reference going away) ends the thread.
public final class PostgresConnection: Sendable {
    private let handle: Mutex<OpaquePointer?>
    private let thread: NIOThreadPool
    /// Names of the statements prepared on this connection (`query(_:preparedAs:)`).
    private let prepared = Mutex<Set<String>>([])
    /// A statement was sent without waiting for its answer (`query(_:preparedAs:thenSend:)`): the next call on the
    /// thread reads and drops that answer first (read and written under the handle's lock).
    private let answerPending = Atomic<Bool>(false)
    /// `host:port/db`, for error messages; never the password.
    public let target: String

    private init(handle: consuming sending OpaquePointer?, target: String, thread: NIOThreadPool) {
        self.handle = Mutex(handle)
        self.target = target
        self.thread = thread
    }

    deinit {
        handle.withLock { handle in
            if let open = handle { PQfinish(open) }
            handle = nil
        }
        thread.shutdownGracefully { _ in }
    }

    /// Opens a connection.
    ///
    /// - Parameter url: a `postgresql://` URL or a libpq `key=value` string. Empty means libpq's own
    ///   defaults and `PG*` environment variables.
    public static func connect(url: String, applicationName: String = "cueline") async throws -> PostgresConnection {
        let thread = NIOThreadPool(numberOfThreads: 1)
        thread.start()
        do {
            return try await thread.runIfActive {
                try connectBlocking(url: url, applicationName: applicationName, thread: thread)
            }
        } catch {
            thread.shutdownGracefully { _ in }
            throw error
        }
    }

    /// How a TCP connection finds out that the database's host is gone (powered off, partitioned, failed over to
    /// another address): nothing closes the socket then, and a call waiting for its answer would wait for TCP's own
    /// give-up (~15 minutes), or for ever once the query was acknowledged, holding the follower's reader (playlists
    /// held at the last known instant) or a command. With these, an idle connection is probed after 3 s, every
    /// second, and dropped after 3 unanswered probes; data left unacknowledged for 6 s drops it too. The call then
    /// fails as a lost connection and the pool opens another. A live database answers probes from its kernel, however
    /// long a statement runs. The URL may set other values (`?keepalives_idle=…`); Unix sockets ignore them.
    static let deadPeerDefaults: KeyValuePairs<String, String> = [
        "keepalives": "1", "keepalives_idle": "3", "keepalives_interval": "1", "keepalives_count": "3",
        "tcp_user_timeout": "6000",
    ]

    private static func connectBlocking(url: String, applicationName: String, thread: NIOThreadPool) throws
        -> PostgresConnection
    {
        if let scheme = url.firstRange(of: "://").map({ url[..<$0.lowerBound] }), scheme != "postgresql",
            scheme != "postgres"
        {
            throw PostgresError(
                kind: .connectionFailed,
                message: "the database URL must start with postgresql:// (it starts with \(scheme)://)")
        }
        // Later keys win over what the URL says, earlier ones are defaults the URL may override.
        var keys = ["connect_timeout", "fallback_application_name"] + deadPeerDefaults.map(\.key)
        var values = ["10", applicationName] + deadPeerDefaults.map(\.value)
        if !url.isEmpty {
            keys.append("dbname")
            values.append(url)
        }
        let handle = withCStringArray(keys) { keyPointers in
            withCStringArray(values) { valuePointers in
                PQconnectdbParams(keyPointers, valuePointers, 1)
            }
        }
        guard let handle else {
            throw PostgresError(kind: .connectionFailed, message: "libpq could not allocate a connection")
        }
        let target = describeTarget(handle)
        guard PQstatus(handle) == CONNECTION_OK else {
            let message = lastLine(String(cString: PQerrorMessage(handle)))
            PQfinish(handle)
            throw PostgresError(kind: .connectionFailed, message: message, target: target)
        }
        setUpSession(handle)
        return PostgresConnection(handle: handle, target: target, thread: thread)
    }

    /// Times are exchanged as UTC ISO 8601 text; makes the session's rendering independent of the server. What the
    /// server sends between statements (the error of a server process that ends, a warning) goes to the log, one
    /// record a message, instead of libpq's own lines on standard error.
    private static func setUpSession(_ handle: OpaquePointer) {
        PQsetNoticeProcessor(
            handle,
            { _, message in
                guard let message else { return }
                noticeLogger.warning(
                    "message from PostgreSQL", metadata: ["message": "\(lastLine(String(cString: message)))"])
            }, nil)
        let setup = PQexec(
            handle,
            "SET TIME ZONE 'UTC'; SET DateStyle = 'ISO'; SET client_encoding = 'UTF8'; SET client_min_messages = 'warning'"
        )
        PQclear(setup)
    }

    /// An option of the connection's socket as the kernel holds it (`level`: `SOL_SOCKET`, `IPPROTO_TCP`), or nil
    /// when closed or unknown: shows that `deadPeerDefaults` reached the socket.
    package func socketOption(level: Int32, name: Int32) -> Int32? {
        handle.withLock { handle -> Int32? in
            guard let handle else { return nil }
            var value: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            guard getsockopt(PQsocket(handle), level, name, &value, &length) == 0 else { return nil }
            return value
        }
    }

    /// Whether libpq still considers the connection usable.
    public var isHealthy: Bool {
        handle.withLock { handle in handle.map { PQstatus($0) == CONNECTION_OK } ?? false }
    }

    /// Whether a connection not in use still looks usable, found without waiting: what the server sent since (the
    /// error of a server process that ended, a closed socket) is read, then libpq's status reported. A follow-up's
    /// answer still pending is left to the next call, which looks again once it has read it.
    package var isAliveWithoutWaiting: Bool {
        handle.withLock { handle in
            guard let handle, PQstatus(handle) == CONNECTION_OK else { return false }
            if answerPending.load(ordering: .relaxed) { return true }
            Self.readWithoutWaiting(handle)
            return PQstatus(handle) == CONNECTION_OK
        }
    }

    /// Whether a transaction block is open on this connection (`BEGIN` without `COMMIT`/`ROLLBACK` yet).
    public var isInTransaction: Bool {
        handle.withLock { handle in
            guard let handle else { return false }
            let status = PQtransactionStatus(handle)
            return status == PQTRANS_INTRANS || status == PQTRANS_INERROR
        }
    }

    /// Runs one parameterized statement (`PQexecParams`).
    @discardableResult
    public func query(_ query: PostgresQuery) async throws -> PostgresRows {
        try await onThread { handle in try self.queryBlocking(query, on: handle) }
    }

    /// Runs one parameterized statement prepared once per connection under `name` (`PQprepare` on first use, then
    /// `PQexecPrepared`): the server parses and plans it once. `name` must always stand for the same SQL text.
    @discardableResult
    public func query(_ query: PostgresQuery, preparedAs name: String) async throws -> PostgresRows {
        try await onThread { handle in
            try self.prepare(query, as: name, on: handle)
            return try self.queryBlocking(query, preparedAs: name, on: handle)
        }
    }

    private func prepare(_ query: PostgresQuery, as name: String, on handle: OpaquePointer) throws {
        guard !prepared.withLock({ $0.contains(name) }) else { return }
        let result = PQprepare(handle, name, query.sql, Int32(query.binds.count), nil)
        defer { PQclear(result) }
        try check(result, on: handle, statement: query.sql)
        prepared.withLock { _ = $0.insert(name) }
    }

    /// Runs `query` as `query(_:preparedAs:)` does, then sends the statement `follow` makes of its rows without
    /// waiting for its answer: the caller goes on while the server runs it.
    ///
    /// The follow-up runs on this connection before any later call (they all run on its thread, in order, and the
    /// next one first reads the follow-up's answer), in an implicit transaction of its own; nothing is sent when the
    /// first statement left a transaction block open (the caller's). Its answer and errors are dropped, so it must be
    /// one statement whose loss costs nothing but time and that leaves nothing behind on the session (no `BEGIN`, no
    /// `SET`, no `COPY`): the NOTIFY hint after an append.
    @discardableResult
    package func query(
        _ query: PostgresQuery, preparedAs name: String,
        thenSend follow: @escaping @Sendable (PostgresRows) -> PostgresQuery?
    ) async throws -> PostgresRows {
        try await onThread { handle in
            try self.prepare(query, as: name, on: handle)
            let rows = try self.queryBlocking(query, preparedAs: name, on: handle)
            guard let next = follow(rows), PQtransactionStatus(handle) == PQTRANS_IDLE,
                !next.binds.contains(where: { $0?.utf8.contains(0) == true })
            else { return rows }
            // Parsed, bound and run in one flight (no prepare: that would be a round trip to wait for).
            let sent = withCStringArray(next.binds) { values in
                PQsendQueryParams(handle, next.sql, Int32(next.binds.count), nil, values, nil, nil, 0)
            }
            if sent == 1 { self.answerPending.store(true, ordering: .relaxed) }
            return rows
        }
    }

    /// Reads what the server sent on an idle connection, without waiting: a server process that ended sends its error,
    /// then closes the socket, which a second read finds (libpq then reports the connection as bad).
    private static func readWithoutWaiting(_ handle: OpaquePointer) {
        for _ in 0..<2 where PQstatus(handle) == CONNECTION_OK {
            guard PQconsumeInput(handle) == 1 else { return }
        }
    }

    /// Reads and drops a follow-up's answer (`query(_:preparedAs:thenSend:)`). When the connection broke while the
    /// follow-up ran, it is opened again here: the next call is then sent on a live connection rather than failing
    /// unsent for the follow-up's sake (if the database cannot be reached, it fails as it would have).
    private func drainFollowUp(_ handle: OpaquePointer) {
        while let dropped = PQgetResult(handle) {
            let status = PQresultStatus(dropped)
            PQclear(dropped)
            if status == PGRES_COPY_IN || status == PGRES_COPY_OUT || status == PGRES_COPY_BOTH { break }
        }
        // The server process may have ended just after answering: read what came since, without waiting.
        Self.readWithoutWaiting(handle)
        guard PQstatus(handle) != CONNECTION_OK else { return }
        PQreset(handle)
        prepared.withLock { $0.removeAll() }
        if PQstatus(handle) == CONNECTION_OK { Self.setUpSession(handle) }
    }

    /// Runs trusted SQL text that may hold several statements and no parameters (`PQexec`).
    /// Used for migration files only; anything carrying a value goes through `query(_:)`.
    public func executeScript(_ sql: String) async throws {
        try await onThread { handle in
            let result = PQexec(handle, sql)
            defer { PQclear(result) }
            try self.check(result, on: handle, statement: String(sql.prefix(200)))
        }
    }

    /// Runs `body` inside `BEGIN` … `COMMIT`; rolls back when it throws and rethrows the error.
    @discardableResult
    public func withTransaction<T>(
        isolation actor: isolated (any Actor)? = #isolation, level: String = "READ COMMITTED",
        _ body: (PostgresConnection) async throws -> sending T
    ) async throws -> sending T {
        try await query(PostgresQuery(sql: "BEGIN ISOLATION LEVEL \(level)"))
        do {
            let value = try await body(self)
            try await query("COMMIT")
            return value
        } catch {
            _ = try? await query("ROLLBACK")
            throw error
        }
    }

    /// Closes the connection now (after a statement running on it) and ends its thread.
    public func close() {
        handle.withLock { handle in
            if let open = handle { PQfinish(open) }
            handle = nil
        }
        thread.shutdownGracefully { _ in }
    }

    // MARK: - Notifications (PostgresListener)

    /// Waits on this connection's thread up to `timeout` for input and returns the notifications received.
    ///
    /// - Throws: `connectionLost` when the connection broke.
    func notifications(waitingUpTo timeout: Duration) async throws -> [(channel: String, payload: String)] {
        let milliseconds = Int32(
            clamping: timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        return try await onThread { handle in
            var pfd = pollfd(fd: PQsocket(handle), events: Int16(POLLIN), revents: 0)
            _ = poll(&pfd, 1, milliseconds)
            guard PQconsumeInput(handle) == 1 else {
                throw PostgresError(
                    kind: .connectionLost, message: lastLine(String(cString: PQerrorMessage(handle))),
                    target: self.target)
            }
            var received: [(String, String)] = []
            while let notify = PQnotifies(handle) {
                received.append((String(cString: notify.pointee.relname), String(cString: notify.pointee.extra)))
                PQfreemem(notify)
            }
            return received.map { (channel: $0.0, payload: $0.1) }
        }
    }

    // MARK: - Internals

    /// Runs `work` on this connection's thread with the handle locked. A call not yet started when its task is
    /// cancelled does not run (CancellationError); one that started runs to its end, as libpq calls cannot be cut.
    private func onThread<T: Sendable>(_ work: @escaping @Sendable (OpaquePointer) throws -> T) async throws -> T {
        do {
            return try await thread.runIfActive {
                try self.handle.withLock { handle in
                    guard let handle else { throw self.closedError() }
                    if self.answerPending.exchange(false, ordering: .relaxed) { self.drainFollowUp(handle) }
                    return try work(handle)
                }
            }
        } catch is NIOThreadPoolError.ThreadPoolInactive {
            throw closedError()
        }
    }

    private func queryBlocking(
        _ query: PostgresQuery, preparedAs name: String? = nil, on handle: OpaquePointer
    ) throws -> PostgresRows {
        // libpq takes values as C strings: a NUL would silently cut the value short, and the log would then hold
        // something other than what was acknowledged. PostgreSQL text cannot hold U+0000 at all: refuse.
        if let index = query.binds.firstIndex(where: { $0?.utf8.contains(0) == true }) {
            throw PostgresError(
                kind: .statementFailed, sqlState: "22021",
                message: "parameter $\(index + 1) holds a NUL character (U+0000), which PostgreSQL text cannot store",
                statement: query.sql, target: target)
        }
        let result = withCStringArray(query.binds) { values in
            if let name {
                PQexecPrepared(handle, name, Int32(query.binds.count), values, nil, nil, 0)
            } else {
                PQexecParams(handle, query.sql, Int32(query.binds.count), nil, values, nil, nil, 0)
            }
        }
        defer { PQclear(result) }
        try check(result, on: handle, statement: query.sql)
        var rows = PostgresRows()
        let fieldCount = PQnfields(result)
        let tupleCount = PQntuples(result)
        rows.columns = (0..<fieldCount).map { String(cString: PQfname(result, $0)) }
        rows.rows.reserveCapacity(Int(tupleCount))
        for row in 0..<tupleCount {
            var values: [String?] = []
            values.reserveCapacity(Int(fieldCount))
            for column in 0..<fieldCount {
                if PQgetisnull(result, row, column) == 1 {
                    values.append(nil)
                } else {
                    values.append(String(cString: PQgetvalue(result, row, column)))
                }
            }
            rows.rows.append(values)
        }
        rows.affectedRows = Int(String(cString: PQcmdTuples(result))) ?? 0
        return rows
    }

    private func check(_ result: OpaquePointer?, on handle: OpaquePointer, statement: String) throws {
        let status = result.map { PQresultStatus($0) } ?? PGRES_FATAL_ERROR
        if status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK || status == PGRES_EMPTY_QUERY {
            return
        }
        if PQstatus(handle) != CONNECTION_OK {
            throw PostgresError(
                kind: .connectionLost, message: lastLine(String(cString: PQerrorMessage(handle))),
                statement: statement, target: target)
        }
        func field(_ code: Character) -> String? {
            guard let result, let value = PQresultErrorField(result, Int32(code.asciiValue!)) else { return nil }
            return String(cString: value)
        }
        throw PostgresError(
            kind: .statementFailed, sqlState: field("C"),
            message: field("M") ?? lastLine(String(cString: PQerrorMessage(handle))),
            detail: field("D"), hint: field("H"), constraint: field("n"), statement: statement, target: target)
    }

    private func closedError() -> PostgresError {
        PostgresError(kind: .connectionLost, message: "the connection is closed", target: target)
    }

    private static func describeTarget(_ handle: OpaquePointer) -> String {
        func text(_ pointer: UnsafeMutablePointer<CChar>?) -> String { pointer.map { String(cString: $0) } ?? "" }
        let host = text(PQhost(handle))
        let port = text(PQport(handle))
        let db = text(PQdb(handle))
        let user = text(PQuser(handle))
        return "\(user.isEmpty ? "" : user + "@")\(host.isEmpty ? "localhost" : host):\(port)/\(db)"
    }
}

/// libpq messages end in a newline and sometimes hold several lines; operators get the meaningful one.
/// Where `setUpSession` sends the server's notices.
private let noticeLogger = Logger(label: "cueline.postgres")

func lastLine(_ message: String) -> String {
    let lines = message.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters() }.filter { !$0.isEmpty }
    // "connection to server at ... failed: Connection refused" then "Is the server running on that host...?"
    return lines.joined(separator: "; ")
}

extension Substring {
    fileprivate func trimmingCharacters() -> String {
        var s = self
        while let first = s.first, first == " " || first == "\t" { s.removeFirst() }
        while let last = s.last, last == " " || last == "\t" { s.removeLast() }
        return String(s)
    }
}

/// Calls `body` with a NULL-terminated C array of C strings (NULL for nil) that lives for the call.
func withCStringArray<R>(_ strings: [String?], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> R) -> R {
    let pointers: [UnsafeMutablePointer<CChar>?] = strings.map { $0.flatMap { strdup($0) } } + [nil]
    defer { pointers.forEach { free($0) } }
    let constPointers = pointers.map { UnsafePointer($0) }
    return constPointers.withUnsafeBufferPointer { buffer in body(buffer.baseAddress!) }
}

func withCStringArray<R>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> R) -> R {
    withCStringArray(strings.map { Optional($0) }, body)
}
