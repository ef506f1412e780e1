import HLS
import Logging
import Postgres
import Schedule

/// Subscriptions, their cursors and the delivery lease in PostgreSQL (Migrations/0015_subscriptions.sql).
///
/// The operator's role creates and deletes subscriptions; the service's role reads them, moves cursors and takes the
/// lease. A cursor moves only in a statement that finds the lease held by the caller with its fencing token.
public struct PostgresSubscriptionStore: Sendable {
    let pool: PostgresPool
    let logger: Logger

    public init(pool: PostgresPool, logger: Logger = Logger(label: "cueline.notifications")) {
        self.pool = pool
        self.logger = logger
    }

    static let columns = """
        name, url, array_to_string(channels, ','), array_to_string(events, ','), secret, \
        floor(extract(epoch FROM created_at) * 1000)::bigint, created_by
        """

    /// Creates a subscription with a new secret and returns it (the only time the secret is shown).
    ///
    /// - Throws: ``SubscriptionError`` naming the field, or the name taken.
    public func create(
        name: String, url: String, channels: [ChannelID], events: [NotificationKind], createdBy: String
    ) async throws -> Subscription {
        try Subscription.validate(name: name, url: url)
        let secret = Subscription.generateSecret()
        let row = try await storeErrors {
            do {
                return try await pool.withConnection { connection in
                    try await connection.query(
                        """
                        INSERT INTO cueline_subscriptions (name, url, channels, events, secret, created_by) VALUES \
                        (\(name), \(url), string_to_array(\(channels.map(\.rawValue).joined(separator: ",")), ','), \
                        string_to_array(\(events.map(\.rawValue).joined(separator: ",")), ','), \(secret), \
                        \(createdBy)) RETURNING \(unescaped: Self.columns)
                        """
                    ).rows.first
                }
            } catch let error as PostgresError
                where error.isUniqueViolation && error.constraint == "cueline_subscriptions_pkey"
            {
                throw SubscriptionError.nameTaken(name)
            }
        }
        guard let row else { throw StoreError.database("the new subscription \(name) was not returned") }
        return try Self.decode(row)
    }

    /// Every subscription by name, secrets included (the deliverer signs with them).
    public func list() async throws -> [Subscription] {
        try await storeErrors {
            try await pool.withConnection { connection in
                try await connection.query(
                    "SELECT \(unescaped: Self.columns) FROM cueline_subscriptions ORDER BY name"
                ).rows.map(Self.decode)
            }
        }
    }

    /// Deletes a subscription and its cursors; the deliverer stops sending to it within a second or two.
    public func delete(name: String) async throws {
        let deleted = try await storeErrors {
            try await pool.withConnection { connection in
                try await connection.query(
                    "DELETE FROM cueline_subscriptions WHERE name = \(name) RETURNING name"
                ).rows.count
            }
        }
        guard deleted == 1 else { throw SubscriptionError.unknown(name) }
    }

    /// Every stored cursor: subscription name → channel → the last fact delivered.
    public func cursors() async throws -> [String: [ChannelID: FactKey]] {
        try await storeErrors {
            try await pool.withConnection { connection in
                let rows = try await connection.query(
                    "SELECT subscription, channel, at_ms, position, rank FROM cueline_subscription_cursors"
                ).rows
                var cursors: [String: [ChannelID: FactKey]] = [:]
                for row in rows {
                    guard let channel = ChannelID(stored: try row.string(1, "channel")) else { continue }
                    cursors[try row.string(0, "subscription"), default: [:]][channel] = FactKey(
                        atMilliseconds: try row.int64(2, "at_ms"), position: try row.int64(3, "position"),
                        rank: Int(try row.int64(4, "rank")))
                }
                return cursors
            }
        }
    }

    /// Takes the delivery lease, or renews it when `holder` has it, for `ttlMilliseconds`.
    ///
    /// - Returns: the fencing token (it grows at every takeover; the same on a renewal), or nil when another
    ///   instance holds an unexpired lease.
    public func acquireLease(holder: String, ttlMilliseconds: Int64) async throws -> Int64? {
        try await storeErrors {
            try await pool.withConnection { connection in
                try await connection.query(
                    """
                    UPDATE cueline_notification_lease SET \
                    token = CASE WHEN holder = \(holder) AND expires_at > clock_timestamp() THEN token ELSE token + 1 END, \
                    holder = \(holder), expires_at = clock_timestamp() + \(ttlMilliseconds) * interval '1 millisecond' \
                    WHERE id = 1 AND (holder = \(holder) OR expires_at <= clock_timestamp()) RETURNING token
                    """
                ).rows.first.map { try $0.int64(0, "token") }
            }
        }
    }

    /// Gives the lease up at shutdown, so that another instance takes over at once rather than after the TTL.
    public func releaseLease(holder: String, token: Int64) async throws {
        _ = try await storeErrors {
            try await pool.withConnection { connection in
                try await connection.query(
                    """
                    UPDATE cueline_notification_lease SET expires_at = '-infinity' \
                    WHERE id = 1 AND holder = \(holder) AND token = \(token)
                    """)
            }
        }
    }

    /// Moves a subscription's cursor on a channel forward to `key`, in the one statement that checks that `holder`
    /// still has the lease with `token`.
    ///
    /// - Returns: false when it did not move: the lease is lost (or expired), the subscription was deleted, or the
    ///   cursor is already at or past `key`. The caller stops and reloads.
    public func advance(
        subscription: String, channel: ChannelID, to key: FactKey, holder: String, token: Int64
    ) async throws -> Bool {
        try await storeErrors {
            do {
                return try await pool.withConnection { connection in
                    try await connection.query(
                        """
                        INSERT INTO cueline_subscription_cursors AS c (subscription, channel, at_ms, position, rank) \
                        SELECT \(subscription), \(channel.rawValue), \(key.atMilliseconds), \(key.position), \
                        \(key.rank) FROM cueline_notification_lease l WHERE l.id = 1 AND l.holder = \(holder) \
                        AND l.token = \(token) AND l.expires_at > clock_timestamp() FOR SHARE OF l \
                        ON CONFLICT (subscription, channel) DO UPDATE SET at_ms = excluded.at_ms, \
                        position = excluded.position, rank = excluded.rank, delivered_at = clock_timestamp() \
                        WHERE (c.at_ms, c.position, c.rank) < (excluded.at_ms, excluded.position, excluded.rank) \
                        RETURNING 1
                        """
                    ).rows.count == 1
                }
            } catch let error as PostgresError where error.sqlState == "23503" {
                return false
            }
        }
    }

    static func decode(_ row: [String?]) throws -> Subscription {
        func list(_ index: Int) -> [String] {
            (row.optionalString(index) ?? "").split(separator: ",").map(String.init)
        }
        let name = try row.string(0, "name")
        var events: [NotificationKind] = []
        for text in list(3) {
            guard let kind = NotificationKind(rawValue: text) else {
                throw StoreError.database("subscription \(name) names an event kind this build does not know: \(text)")
            }
            events.append(kind)
        }
        return Subscription(
            name: name, url: try row.string(1, "url"), channels: list(2).compactMap { ChannelID(stored: $0) },
            events: events,
            secret: try row.string(4, "secret"), createdAt: Timestamp(milliseconds: try row.int64(5, "created_at")),
            createdBy: try row.string(6, "created_by"))
    }

    private func storeErrors<T>(_ body: () async throws -> T) async throws -> T {
        try await StoreErrors.map(logger: logger, body)
    }
}
