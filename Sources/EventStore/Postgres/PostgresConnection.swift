import CLibPQ
import Dispatch

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One libpq connection.
///
/// libpq connections are not thread-safe and their calls block, so every call runs on this connection's
/// own serial dispatch queue: never on Swift's cooperative thread pool, and never on two threads at once.
/// That serial queue is why the class can be `@unchecked Sendable`: `handle` is only touched from `queue`.
/// Callers still must not interleave statements from two tasks; the pool lends a connection to one at a time.
public final class PostgresConnection: @unchecked Sendable {
    private var handle: OpaquePointer?
    private let queue: DispatchQueue
    /// `host:port/db`, for error messages; never the password.
    public let target: String

    private init(handle: OpaquePointer, target: String) {
        self.handle = handle
        self.target = target
        self.queue = DispatchQueue(label: "cueline.postgres.\(target)")
    }

    deinit {
        if let handle { PQfinish(handle) }
    }

    /// Opens a connection.
    ///
    /// - Parameter url: a `postgresql://` URL or a libpq `key=value` string. Empty means libpq's own
    ///   defaults and `PG*` environment variables.
    public static func connect(url: String, applicationName: String = "cueline") async throws -> PostgresConnection {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<PostgresConnection, any Error>) in
            DispatchQueue.global().async {
                continuation.resume(with: Result { try connectBlocking(url: url, applicationName: applicationName) })
            }
        }
    }

    private static func connectBlocking(url: String, applicationName: String) throws -> PostgresConnection {
        if let scheme = url.range(of: "://").map({ url[..<$0.lowerBound] }), scheme != "postgresql", scheme != "postgres" {
            throw PostgresError(
                kind: .connectionFailed,
                message: "the database URL must start with postgresql:// (it starts with \(scheme)://)")
        }
        // Later keys win over what the URL says, earlier ones are defaults the URL may override.
        var keys = ["connect_timeout", "fallback_application_name"]
        var values = ["10", applicationName]
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
        // Times are exchanged as UTC ISO 8601 text; make the session's rendering independent of the server.
        let setup = PQexec(handle, "SET TIME ZONE 'UTC'; SET DateStyle = 'ISO'; SET client_encoding = 'UTF8'; SET client_min_messages = 'warning'")
        PQclear(setup)
        return PostgresConnection(handle: handle, target: target)
    }

    /// Whether libpq still considers the connection usable.
    public var isHealthy: Bool {
        queue.sync { handle.map { PQstatus($0) == CONNECTION_OK } ?? false }
    }

    /// Whether a transaction block is open on this connection (`BEGIN` without `COMMIT`/`ROLLBACK` yet).
    public var isInTransaction: Bool {
        queue.sync {
            guard let handle else { return false }
            let status = PQtransactionStatus(handle)
            return status == PQTRANS_INTRANS || status == PQTRANS_INERROR
        }
    }

    /// Runs one parameterized statement (`PQexecParams`).
    @discardableResult
    public func query(_ query: PostgresQuery) async throws -> PostgresRows {
        try await onQueue { try self.queryBlocking(query) }
    }

    /// Runs trusted SQL text that may hold several statements and no parameters (`PQexec`).
    /// Used for migration files only; anything carrying a value goes through `query(_:)`.
    public func executeScript(_ sql: String) async throws {
        try await onQueue {
            guard let handle = self.handle else { throw self.closedError() }
            let result = PQexec(handle, sql)
            defer { PQclear(result) }
            try self.check(result, statement: String(sql.prefix(200)))
        }
    }

    /// Runs `body` inside `BEGIN` … `COMMIT`; rolls back when it throws and rethrows the error.
    public func withTransaction<T: Sendable>(
        isolation: String = "READ COMMITTED", _ body: (PostgresConnection) async throws -> T
    ) async throws -> T {
        try await query(PostgresQuery(sql: "BEGIN ISOLATION LEVEL \(isolation)"))
        do {
            let value = try await body(self)
            try await query("COMMIT")
            return value
        } catch {
            _ = try? await query("ROLLBACK")
            throw error
        }
    }

    /// Closes the connection now.
    public func close() {
        queue.sync {
            if let handle { PQfinish(handle) }
            handle = nil
        }
    }

    // MARK: - Notifications (used by PostgresListener on its own thread)

    /// The socket descriptor, for `poll`.
    func socketDescriptor() -> Int32 {
        queue.sync { handle.map { PQsocket($0) } ?? -1 }
    }

    /// Reads what arrived on the socket and returns the notifications received.
    func consumeNotifications() throws -> [(channel: String, payload: String)] {
        try queue.sync {
            guard let handle else { throw closedError() }
            guard PQconsumeInput(handle) == 1 else {
                throw PostgresError(
                    kind: .connectionLost, message: lastLine(String(cString: PQerrorMessage(handle))), target: target)
            }
            var received: [(String, String)] = []
            while let notify = PQnotifies(handle) {
                received.append((String(cString: notify.pointee.relname), String(cString: notify.pointee.extra)))
                PQfreemem(notify)
            }
            return received
        }
    }

    // MARK: - Internals

    private func onQueue<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try work() }) }
        }
    }

    private func queryBlocking(_ query: PostgresQuery) throws -> PostgresRows {
        guard let handle else { throw closedError() }
        // libpq takes values as C strings: a NUL would silently cut the value short, and the log would then hold
        // something other than what was acknowledged. PostgreSQL text cannot hold U+0000 at all: refuse.
        if let index = query.binds.firstIndex(where: { $0?.utf8.contains(0) == true }) {
            throw PostgresError(
                kind: .statementFailed, sqlState: "22021",
                message: "parameter $\(index + 1) holds a NUL character (U+0000), which PostgreSQL text cannot store",
                statement: query.sql, target: target)
        }
        let result = withCStringArray(query.binds) { values in
            PQexecParams(handle, query.sql, Int32(query.binds.count), nil, values, nil, nil, 0)
        }
        defer { PQclear(result) }
        try check(result, statement: query.sql)
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

    private func check(_ result: OpaquePointer?, statement: String) throws {
        guard let handle else { throw closedError() }
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
