import Foundation
import Schedule
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
    func refusals(of channel: ChannelID) async throws -> [Refusal]

    /// One page of a channel's refused commands in the order they were recorded: those recorded after the cursor
    /// `after` (0: from the first), at most `limit`, and only those naming the break `breakID` when it is given (the
    /// `id` of the command's stored request, see ``Refusal/breakID``). The page's `next` is the cursor of its last
    /// refusal (the `after` of the next page), nil when the page is empty. Returns at most `limit` refusals: a
    /// channel with many refusals is read a page at a time.
    func refusals(of channel: ChannelID, breakID: BreakID?, after: Int64, limit: Int) async throws -> RefusalBatch

    /// Every channel's refusals known after `after` and at or before `through`, in the order of their marks, at most
    /// `limit` (docs/notifications.md): the refusals a notification feed releases with the log up to a watermark's
    /// `knownUntil`. A refusal's known instant is later than every watermark answered before it was recorded, so the
    /// refusals known up to an instant are all there once a watermark has passed it.
    func knownRefusals(after: RefusalMark, through: Timestamp, limit: Int) async throws -> [KnownRefusal]
}

/// Where a reader of ``RefusalStore/knownRefusals(after:through:limit:)`` stands: the last refusal's known instant and
/// id (refusals are read in that order).
public struct RefusalMark: Sendable, Hashable, Comparable {
    public var knownMilliseconds: Int64
    public var id: Int64

    public init(knownMilliseconds: Int64, id: Int64) {
        self.knownMilliseconds = knownMilliseconds
        self.id = id
    }

    public static let start = RefusalMark(knownMilliseconds: .min, id: .min)

    public static func < (lhs: RefusalMark, rhs: RefusalMark) -> Bool {
        (lhs.knownMilliseconds, lhs.id) < (rhs.knownMilliseconds, rhs.id)
    }
}

/// A refusal with the instant it is known at and its id, as a notification feed reads it.
public struct KnownRefusal: Sendable, Hashable {
    public var id: Int64
    public var knownAt: Timestamp
    /// The refusal, without its stored request (`request` is empty): its break is `breakID`.
    public var refusal: Refusal
    /// The break the refused command named (``Refusal/breakID``).
    public var breakID: String?

    public init(id: Int64, knownAt: Timestamp, refusal: Refusal, breakID: String?) {
        self.id = id
        self.knownAt = knownAt
        self.refusal = refusal
        self.breakID = breakID
    }

    public var mark: RefusalMark { RefusalMark(knownMilliseconds: knownAt.milliseconds, id: id) }
}

/// A page of refusals read by ``RefusalStore/refusals(of:breakID:after:limit:)``.
public struct RefusalBatch: Sendable, Hashable {
    public var refusals: [Refusal]
    /// The cursor of the last refusal in the page (its row id in the database), nil when the page is empty.
    public var next: Int64?

    public init(refusals: [Refusal], next: Int64?) {
        self.refusals = refusals
        self.next = next
    }
}

/// A command that was refused: kept for the audit trail, never part of the schedule.
public struct Refusal: Sendable, Hashable, Codable {
    public var channel: ChannelID
    public var commandID: String
    /// The command's name (`place-break`…).
    public var command: String
    /// The canonical request, JSON.
    public var request: String
    public var actor: String
    public var source: String
    public var reason: String
    public var decidedAt: Timestamp

    public init(
        channel: ChannelID, commandID: String, command: String, request: String, actor: String, source: String,
        reason: String, decidedAt: Timestamp
    ) {
        self.channel = channel
        self.commandID = commandID
        self.command = command
        self.request = request
        self.actor = actor
        self.source = source
        self.reason = reason
        self.decidedAt = decidedAt
    }

    /// The break the refused command named: the `id` of its request (`{"cancelBreak":{"id":…}}`,
    /// `{"placeBreak":{"_0":{"id":…}}}`…); nil for a command that names none (`cancelCurrentEvent`) or a request
    /// that is not such JSON. The PostgreSQL store filters on the same two paths.
    public var breakID: String? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(request.utf8)) as? [String: Any],
            object.count == 1,
            let body = object.values.first as? [String: Any]
        else { return nil }
        if let id = body["id"] as? String { return id }
        return (body["_0"] as? [String: Any])?["id"] as? String
    }
}

/// Refusals in memory, for tests and in-process servers.
public final class InMemoryRefusalStore: RefusalStore {
    private let refused = Mutex<[Refusal]>([])

    public init() {}

    public func recordRefusal(_ refusal: Refusal) {
        refused.withLock { $0.append(refusal) }
    }

    /// A refusal's id is its position in the order recorded, from 1; it is known at its decision, or at the one
    /// before it when that is later (appends here take effect at once: the in-memory watermark knows every instant).
    public func knownRefusals(after: RefusalMark, through: Timestamp, limit: Int) -> [KnownRefusal] {
        refused.withLock { all in
            var known: [KnownRefusal] = []
            var latest = Int64.min
            for (index, refusal) in all.enumerated() {
                latest = max(latest, refusal.decidedAt.milliseconds)
                var read = refusal
                read.request = ""
                let item = KnownRefusal(
                    id: Int64(index + 1), knownAt: Timestamp(milliseconds: latest), refusal: read,
                    breakID: refusal.breakID)
                guard latest <= through.milliseconds else { break }
                guard item.mark > after else { continue }
                known.append(item)
                if known.count >= limit { break }
            }
            return known
        }
    }

    public func refusals(of channel: ChannelID) -> [Refusal] {
        // Stable: refusals decided at the same instant stay in the order recorded, as the database's id orders them.
        refused.withLock { $0.filter { $0.channel == channel } }.enumerated()
            .sorted { ($0.element.decidedAt, $0.offset) < ($1.element.decidedAt, $1.offset) }.map(\.element)
    }

    /// The cursor of a refusal is its position in the order recorded, from 1.
    public func refusals(of channel: ChannelID, breakID: BreakID?, after: Int64, limit: Int) -> RefusalBatch {
        refused.withLock { all in
            var page: [Refusal] = []
            var next: Int64?
            var index = Int(clamping: max(0, after))
            while index < all.count && page.count < limit {
                let refusal = all[index]
                index += 1
                guard refusal.channel == channel, breakID == nil || refusal.breakID == breakID?.rawValue else {
                    continue
                }
                page.append(refusal)
                next = Int64(index)
            }
            return RefusalBatch(refusals: page, next: next)
        }
    }
}

/// Refusals in `cueline_refusals` (Migrations/0003, written through `cueline_record_refusal`, Migrations/0005).
public struct PostgresRefusalStore: RefusalStore {
    let pool: PostgresPool

    public init(pool: PostgresPool) {
        self.pool = pool
    }

    public func recordRefusal(_ refusal: Refusal) async throws {
        _ = try await StoreErrors.map {
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

    public func refusals(of channel: ChannelID) async throws -> [Refusal] {
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
                        channel: try row.identifier(0, "channel"), commandID: try row.string(1, "command_id"),
                        command: try row.string(2, "command"),
                        request: try row.string(3, "request"), actor: try row.string(4, "actor"),
                        source: try row.string(5, "source"),
                        reason: try row.string(6, "reason"),
                        decidedAt: Timestamp(milliseconds: try row.int64(7, "decided_at")))
                }
            }
        }
    }

    /// `known_ms` (Migrations/0016) is set by `cueline_record_refusal` under the log head; refusals recorded before
    /// that migration have none and are not read here (index `cueline_refusals_known`).
    public func knownRefusals(after: RefusalMark, through: Timestamp, limit: Int) async throws -> [KnownRefusal] {
        let limit = Int64(max(0, limit))
        return try await StoreErrors.map {
            try await pool.withConnection { connection in
                // Not the stored request (up to a command's body), only the break it named, on the two paths of
                // `Refusal.breakID`; a row whose channel no id can name (written past the service) is not read.
                try await connection.query(
                    """
                    SELECT id, known_ms, channel, command_id, command, actor, source, reason, \
                    floor(extract(epoch FROM decided_at) * 1000)::bigint, \
                    CASE WHEN json_typeof(request) = 'object' THEN (SELECT coalesce(v ->> 'id', v -> '_0' ->> 'id') \
                    FROM json_each(request) AS e(k, v) WHERE json_typeof(v) = 'object' LIMIT 1) END \
                    FROM cueline_refusals \
                    WHERE known_ms IS NOT NULL AND (known_ms, id) > (\(after.knownMilliseconds), \(after.id)) \
                    AND known_ms <= \(through.milliseconds) AND isfinite(decided_at) \
                    AND channel ~ \(Identifier.storedPattern) \
                    ORDER BY known_ms, id LIMIT \(limit)
                    """
                ).rows.map { row in
                    KnownRefusal(
                        id: try row.int64(0, "id"), knownAt: Timestamp(milliseconds: try row.int64(1, "known_ms")),
                        refusal: Refusal(
                            channel: try row.identifier(2, "channel"), commandID: try row.string(3, "command_id"),
                            command: try row.string(4, "command"), request: "", actor: try row.string(5, "actor"),
                            source: try row.string(6, "source"), reason: try row.string(7, "reason"),
                            decidedAt: Timestamp(milliseconds: try row.int64(8, "decided_at"))),
                        breakID: row.optionalString(9))
                }
            }
        }
    }

    /// The cursor is the row id (index `cueline_refusals_channel_id`, Migrations/0008). The break filter reads the
    /// stored request's `id` on the same two paths as ``Refusal/breakID``, the id a bound parameter.
    public func refusals(of channel: ChannelID, breakID: BreakID?, after: Int64, limit: Int) async throws
        -> RefusalBatch
    {
        let limit = Int64(max(0, limit))
        return try await StoreErrors.map {
            try await pool.withConnection { connection in
                let rows = try await connection.query(
                    """
                    SELECT id, channel, command_id, command, request, actor, source, reason, \
                    floor(extract(epoch FROM decided_at) * 1000)::bigint FROM cueline_refusals \
                    WHERE channel = \(channel) AND id > \(after) AND isfinite(decided_at) \
                    AND (\(breakID)::text IS NULL \
                    OR jsonb_path_exists(request::jsonb, '$.*.id ? (@ == $id)', jsonb_build_object('id', \(breakID)::text)) \
                    OR jsonb_path_exists(request::jsonb, '$.*._0.id ? (@ == $id)', jsonb_build_object('id', \(breakID)::text))) \
                    ORDER BY id LIMIT \(limit)
                    """
                ).rows
                var next: Int64?
                let refusals = try rows.map { row in
                    next = try row.int64(0, "id")
                    return Refusal(
                        channel: try row.identifier(1, "channel"), commandID: try row.string(2, "command_id"),
                        command: try row.string(3, "command"),
                        request: try row.string(4, "request"), actor: try row.string(5, "actor"),
                        source: try row.string(6, "source"),
                        reason: try row.string(7, "reason"),
                        decidedAt: Timestamp(milliseconds: try row.int64(8, "decided_at")))
                }
                return RefusalBatch(refusals: refusals, next: next)
            }
        }
    }
}
