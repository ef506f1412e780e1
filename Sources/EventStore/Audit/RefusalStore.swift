import HLS
import Postgres
import Synchronization

/// Refused commands: the audit trail of who tried what and why not, kept apart from the event log (a refusal
/// changes no schedule). Written by the command handler, read by `cueline log`.
///
/// Implementations: `PostgresRefusalStore` (`cueline_refusals`) and `InMemoryRefusalStore`; both pass the same
/// contract tests.
public protocol RefusalStore: Sendable {
    /// Records a refused command (append-only).
    func recordRefusal(_ refusal: Refusal) async throws

    /// A channel's refused commands in decision order.
    func refusals(of channel: String) async throws -> [Refusal]
}

/// A command that was refused: kept for the audit trail, never part of the schedule.
public struct Refusal: Sendable, Hashable, Codable {
    public var channel: String
    public var commandID: String
    /// The command's name (`place-break`…).
    public var command: String
    /// The canonical request, JSON.
    public var request: String
    public var actor: String
    public var source: String
    public var reason: String
    public var decidedAt: Timestamp

    public init(channel: String, commandID: String, command: String, request: String, actor: String, source: String, reason: String, decidedAt: Timestamp) {
        self.channel = channel
        self.commandID = commandID
        self.command = command
        self.request = request
        self.actor = actor
        self.source = source
        self.reason = reason
        self.decidedAt = decidedAt
    }
}

/// Refusals in memory, for tests and in-process servers.
public final class InMemoryRefusalStore: RefusalStore {
    private let refused = Mutex<[Refusal]>([])

    public init() {}

    public func recordRefusal(_ refusal: Refusal) {
        refused.withLock { $0.append(refusal) }
    }

    public func refusals(of channel: String) -> [Refusal] {
        // Stable: refusals decided at the same instant stay in the order recorded, as the database's id orders them.
        refused.withLock { $0.filter { $0.channel == channel } }.enumerated()
            .sorted { ($0.element.decidedAt, $0.offset) < ($1.element.decidedAt, $1.offset) }.map(\.element)
    }
}

/// Refusals in `cueline_refusals` (Migrations/0003, written through `cueline_record_refusal`, Migrations/0005).
public struct PostgresRefusalStore: RefusalStore {
    let pool: PostgresPool

    public init(pool: PostgresPool) {
        self.pool = pool
    }

    public func recordRefusal(_ refusal: Refusal) async throws {
        try await StoreErrors.map {
            try await pool.withConnection { connection in
                // Dated by the database clock (Migrations/0005): the service role cannot backdate a refusal.
                try await connection.query(
                    """
                    SELECT cueline_record_refusal(\(refusal.channel), \(refusal.commandID), \(refusal.command), \
                    \(refusal.request)::json, \(refusal.actor), \(refusal.source), \(refusal.reason), \(refusal.decidedAt.milliseconds))
                    """)
            }
        }
    }

    public func refusals(of channel: String) async throws -> [Refusal] {
        try await StoreErrors.map {
            try await pool.withConnection { connection in
                try await connection.query(
                    """
                    SELECT channel, command_id, command, request, actor, source, reason, \
                    floor(extract(epoch FROM decided_at) * 1000)::bigint FROM cueline_refusals \
                    WHERE channel = \(channel) AND isfinite(decided_at) ORDER BY decided_at, id
                    """
                ).rows.map { row in
                    Refusal(
                        channel: try row.string(0, "channel"), commandID: try row.string(1, "command_id"), command: try row.string(2, "command"),
                        request: try row.string(3, "request"), actor: try row.string(4, "actor"), source: try row.string(5, "source"),
                        reason: try row.string(6, "reason"), decidedAt: Timestamp(milliseconds: try row.int64(7, "decided_at")))
                }
            }
        }
    }
}
