/// What Cueline needs of the connections a database URL gives, checked when `cueline serve` starts.
///
/// The listener holds a session in `LISTEN` (the follower hears of new events from it), commands run a prepared
/// statement per connection, and `cueline migrate` takes a session advisory lock. A pooler in transaction or statement
/// mode (PgBouncer `pool_mode = transaction`) hands a server session to other clients between transactions: a
/// notification reaches whichever client holds that session then, or none, so an instance behind it would hear of
/// no one else's commands and serve them only by its polling, and its prepared statements would vanish. A pooler in
/// session mode, or a direct connection (HAProxy, a managed endpoint), keeps one session per connection and works.
public enum SessionCheck {
    /// The connections do not behave as sessions of their own.
    public struct Failure: Error, CustomStringConvertible, Sendable {
        public let description: String
    }

    /// The NOTIFY channel of the check (an identifier of this code base).
    static let channel = "cueline_session_check"

    /// LISTEN on one connection, NOTIFY from another: the notification must arrive within `timeout`.
    ///
    /// - Throws: ``Failure`` naming the likely cause when it does not; the connection errors as they are when the
    ///   database cannot be reached at all.
    public static func notificationsArrive(url: String, timeout: Duration = .seconds(3)) async throws {
        let listening = try await PostgresConnection.connect(url: url, applicationName: "cueline-session-check")
        defer { listening.close() }
        _ = try await listening.query(PostgresQuery(sql: "LISTEN \(channel)"))
        var generator = SystemRandomNumberGenerator()
        let token = String(generator.next() as UInt64, radix: 16)
        let sending = try await PostgresConnection.connect(url: url, applicationName: "cueline-session-check")
        defer { sending.close() }
        _ = try await sending.query("SELECT pg_notify(\(channel), \(token))")
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            for received in try await listening.notifications(waitingUpTo: .milliseconds(200))
            where received.payload == token {
                _ = try? await listening.query(PostgresQuery(sql: "UNLISTEN \(channel)"))
                return
            }
        }
        throw Failure(
            description:
                "a NOTIFY sent on one connection did not reach a LISTEN on another within \(timeout): the database URL seems to go through a pooler in transaction or statement mode (PgBouncer pool_mode = transaction). Cueline holds a session in LISTEN to hear of every instance's commands, and prepares statements per connection: point it at the database directly, through a TCP proxy (HAProxy), or through a pooler in session mode (docs/deployment.md)"
        )
    }
}
