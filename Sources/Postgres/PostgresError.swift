/// An error from PostgreSQL or from libpq, carrying what an operator needs to act on it.
///
/// It holds the SQLSTATE and the statement text, never the bound values (they may hold tokens or payloads).
public struct PostgresError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The connection could not be opened (bad URL, server down, authentication).
        case connectionFailed
        /// The connection broke while a statement was in flight.
        case connectionLost
        /// The server refused a statement.
        case statementFailed
        /// No pooled connection became free within the pool's checkout timeout.
        case checkoutTimeout
        /// The pool was shut down (its service ended): it lends no more connections.
        case poolClosed
    }

    public var kind: Kind
    /// Five-character SQLSTATE code, when the server sent one (e.g. `23505` unique violation).
    public var sqlState: String?
    /// The server's or libpq's primary message, one line.
    public var message: String
    public var detail: String?
    public var hint: String?
    public var constraint: String?
    /// The statement that failed, without its bound values.
    public var statement: String?
    /// Where the connection was going: `host:port/db` with no password.
    public var target: String?

    public init(
        kind: Kind, sqlState: String? = nil, message: String, detail: String? = nil, hint: String? = nil,
        constraint: String? = nil, statement: String? = nil, target: String? = nil
    ) {
        self.kind = kind
        self.sqlState = sqlState
        self.message = message
        self.detail = detail
        self.hint = hint
        self.constraint = constraint
        self.statement = statement
        self.target = target
    }

    public var isUniqueViolation: Bool { sqlState == "23505" }
    public var isSerializationFailure: Bool { sqlState == "40001" || sqlState == "40P01" }
    /// The database is not reachable right now: retrying later may work.
    public var isUnavailable: Bool {
        kind != .statementFailed || sqlState?.hasPrefix("08") == true || sqlState == "57P01"
            || sqlState == "57P03"
    }

    public var description: String {
        switch kind {
        case .connectionFailed:
            return "cannot connect to PostgreSQL\(target.map { " at \($0)" } ?? ""): \(message)"
        case .connectionLost:
            return "lost the connection to PostgreSQL\(target.map { " at \($0)" } ?? ""): \(message)"
        case .checkoutTimeout, .poolClosed:
            return message
        case .statementFailed:
            var text = "PostgreSQL error"
            if let sqlState { text += " \(sqlState)" }
            text += ": \(message)"
            if let detail { text += " (\(detail))" }
            if let hint { text += " hint: \(hint)" }
            return text
        }
    }
}
