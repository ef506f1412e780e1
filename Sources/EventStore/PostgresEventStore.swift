import HLS
import Logging

/// The event log in PostgreSQL (schema: `Migrations/`).
///
/// Keeps the rules of `design.md`: per-channel gap-free versions checked under a row lock on the stream;
/// global positions taken from a one-row log head updated last in the transaction, so they become visible in
/// order; command ids with request hashes in the same transaction; NOTIFY as a hint.
public struct PostgresEventStore: EventStore {
    /// The NOTIFY channel; its payload is `<channel> <last position>`.
    public static let notifyChannel = "cueline_events"
    /// The highest migration this build needs.
    public static let requiredMigration = 4

    public let pool: PostgresPool
    let logger: Logger

    public init(pool: PostgresPool, logger: Logger = Logger(label: "cueline.store")) {
        self.pool = pool
        self.logger = logger
    }

    /// Checks that the database is reachable and migrated far enough for this build.
    public func checkSchema() async throws {
        let applied = try await mapErrors {
            try await pool.withConnection { connection in
                let exists = try await connection.query("SELECT to_regclass('cueline_migrations') IS NOT NULL")
                guard exists.scalar() == "t" else { return 0 }
                let rows = try await connection.query("SELECT coalesce(max(version), 0) FROM cueline_migrations")
                return Int(rows.scalar() ?? "0") ?? 0
            }
        }
        guard applied >= Self.requiredMigration else {
            throw StoreError.schemaOutdated(applied: applied, required: Self.requiredMigration)
        }
    }

    public func append(_ request: AppendRequest) async throws -> AppendResult {
        try await mapErrors {
            do {
                return try await pool.withConnection { connection in
                    try await connection.withTransaction { try await Self.append(request, on: $0) }
                }
            } catch let error as PostgresError where error.isUniqueViolation && error.constraint == "cueline_commands_pkey" {
                // The same command id committed concurrently (on another channel, or the stream lock was not
                // shared): answer like a retry.
                return try await pool.withConnection { connection in
                    guard let result = try await Self.previousResult(of: request, on: connection) else { throw error }
                    return result
                }
            }
        }
    }

    /// The append itself, inside a transaction the caller owns. `package` so tests can roll it back.
    package static func append(_ request: AppendRequest, on connection: PostgresConnection) async throws
        -> AppendResult
    {
        // Outside a transaction every statement commits alone: the head would move and release its lock before
        // the events exist, and a position reader could pass them. Refuse rather than break the ordering rule.
        guard connection.isInTransaction else {
            throw StoreError.database("internal error: an append must run inside a transaction; nothing was written")
        }
        let channel = request.channel
        // 1. Lock the stream (creating its row on first use). Concurrent appenders to this channel queue here.
        try await connection.query(
            "INSERT INTO cueline_streams (channel, version) VALUES (\(channel), 0) ON CONFLICT (channel) DO NOTHING")
        let streamRow = try await connection.query(
            "SELECT version, last_hash FROM cueline_streams WHERE channel = \(channel) FOR UPDATE"
        ).rows[0]
        let current = try streamRow.int64(0, "version")
        var previousHash = streamRow.optionalString(1) ?? HashChain.genesis(channel: channel)
        // 2. Under the lock, a committed retry of this command is visible: answer with the original result.
        if let previous = try await previousResult(of: request, on: connection) {
            return previous
        }
        guard request.expectedVersion.admits(current) else {
            throw StoreError.versionConflict(channel: channel, expected: request.expectedVersion, actual: current)
        }
        let command = request.command
        let newVersion = current + Int64(request.events.count)
        var recorded: [RecordedEvent] = []
        if !request.events.isEmpty {
            // 3. Take positions last: the head's row lock is held until COMMIT, so the next appender's
            //    positions cannot become visible before ours.
            let last = try await connection.query(
                "UPDATE cueline_log_head SET position = position + \(request.events.count) RETURNING position"
            ).rows[0].int64(0, "position")
            let first = last - Int64(request.events.count) + 1
            var insert = PostgresQuery(
                sql: """
                    INSERT INTO cueline_events (position, channel, version, type, schema_version, payload, \
                    decided_at, actor, source, command_id, reason, hash) VALUES
                    """)
            for (offset, event) in request.events.enumerated() {
                var stored = RecordedEvent(
                    position: first + Int64(offset), channel: channel, version: current + Int64(offset) + 1,
                    type: event.type, schemaVersion: event.schemaVersion, payload: event.payload,
                    decidedAt: command.decidedAt, actor: command.actor, source: command.source,
                    commandID: command.commandID, reason: command.reason)
                stored.hash = HashChain.hash(previous: previousHash, event: stored)
                previousHash = stored.hash!
                recorded.append(stored)
                let values = [
                    insert.bind(stored.position), insert.bind(stored.channel), insert.bind(stored.version),
                    insert.bind(stored.type), insert.bind(stored.schemaVersion), insert.bind(stored.payload) + "::json",
                    insert.bind(stored.decidedAt.iso8601) + "::timestamptz", insert.bind(stored.actor),
                    insert.bind(stored.source), insert.bind(stored.commandID), insert.bind(stored.reason),
                    insert.bind(stored.hash),
                ]
                insert.sql += (offset == 0 ? " (" : ", (") + values.joined(separator: ", ") + ")"
            }
            try await connection.query(insert)
            try await connection.query(
                "UPDATE cueline_streams SET version = \(newVersion), last_hash = \(previousHash) WHERE channel = \(channel)")
            try await connection.query(
                "SELECT pg_notify(\(notifyChannel), \(channel + " " + String(last)))")
        }
        try await connection.query(
            """
            INSERT INTO cueline_commands (command_id, channel, request_hash, result_version, first_position, \
            last_position) VALUES (\(command.commandID), \(channel), \(request.requestHash), \(newVersion), \
            \(recorded.first?.position), \(recorded.last?.position))
            """)
        return AppendResult(channel: channel, events: recorded, version: newVersion, replayed: false)
    }

    public func previousResult(of request: AppendRequest) async throws -> AppendResult? {
        try await mapErrors {
            try await pool.withConnection { try await Self.previousResult(of: request, on: $0) }
        }
    }

    private static func previousResult(of request: AppendRequest, on connection: PostgresConnection) async throws
        -> AppendResult?
    {
        let rows = try await connection.query(
            """
            SELECT channel, request_hash, result_version FROM cueline_commands \
            WHERE command_id = \(request.command.commandID)
            """)
        guard let row = rows.rows.first else { return nil }
        guard try row.string(1, "request_hash") == request.requestHash else {
            throw StoreError.commandIDReused(commandID: request.command.commandID)
        }
        let events = try await connection.query(
            "\(unescaped: selectEvents) WHERE command_id = \(request.command.commandID) ORDER BY position")
        return AppendResult(
            channel: try row.string(0, "channel"), events: try events.rows.map(decodeEvent),
            version: try row.int64(2, "result_version"), replayed: true)
    }

    public func read(after position: Int64, limit: Int) async throws -> [RecordedEvent] {
        try await mapErrors {
            try await pool.withConnection { connection in
                try await connection.query(
                    "\(unescaped: Self.selectEvents) WHERE position > \(position) ORDER BY position LIMIT \(limit)"
                ).rows.map(Self.decodeEvent)
            }
        }
    }

    public func readStream(_ channel: String, after version: Int64, limit: Int) async throws -> [RecordedEvent] {
        try await mapErrors {
            try await pool.withConnection { connection in
                try await connection.query(
                    """
                    \(unescaped: Self.selectEvents) WHERE channel = \(channel) AND version > \(version) \
                    ORDER BY version LIMIT \(limit)
                    """
                ).rows.map(Self.decodeEvent)
            }
        }
    }

    public func version(of channel: String) async throws -> Int64 {
        try await mapErrors {
            try await pool.withConnection { connection in
                try await connection.query("SELECT version FROM cueline_streams WHERE channel = \(channel)")
                    .scalar().flatMap { Int64($0) } ?? 0
            }
        }
    }

    public func recordRefusal(_ refusal: Refusal) async throws {
        try await mapErrors {
            try await pool.withConnection { connection in
                try await connection.query(
                    """
                    INSERT INTO cueline_refusals (channel, command_id, command, request, actor, source, reason, decided_at) \
                    VALUES (\(refusal.channel), \(refusal.commandID), \(refusal.command), \(refusal.request)::json, \(refusal.actor), \
                    \(refusal.source), \(refusal.reason), \(refusal.decidedAt.iso8601)::timestamptz)
                    """)
            }
        }
    }

    public func refusals(of channel: String) async throws -> [Refusal] {
        try await mapErrors {
            try await pool.withConnection { connection in
                try await connection.query(
                    """
                    SELECT channel, command_id, command, request, actor, source, reason, \
                    to_char(decided_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') FROM cueline_refusals \
                    WHERE channel = \(channel) ORDER BY decided_at, id
                    """
                ).rows.map { row in
                    Refusal(
                        channel: try row.string(0, "channel"), commandID: try row.string(1, "command_id"), command: try row.string(2, "command"),
                        request: try row.string(3, "request"), actor: try row.string(4, "actor"), source: try row.string(5, "source"),
                        reason: try row.string(6, "reason"), decidedAt: Timestamp(iso8601: try row.string(7, "decided_at")) ?? Timestamp(milliseconds: 0))
                }
            }
        }
    }

    public func recordRenderSamples(_ samples: [RenderSample]) async throws {
        guard !samples.isEmpty else { return }
        try await mapErrors {
            try await pool.withConnection { connection in
                var query = PostgresQuery(sql: "INSERT INTO cueline_render_samples (channel, tick, rendition, renderer_version, sha256) VALUES ")
                for (index, sample) in samples.enumerated() {
                    let values = [
                        query.bind(sample.channel), query.bind(sample.tick.iso8601) + "::timestamptz", query.bind(sample.rendition),
                        query.bind(sample.rendererVersion), query.bind(sample.sha256),
                    ]
                    query.sql += (index == 0 ? "(" : ", (") + values.joined(separator: ", ") + ")"
                }
                query.sql += " ON CONFLICT (channel, tick, rendition) DO NOTHING"
                try await connection.query(query)
            }
        }
    }

    public func renderSamples(of channel: String, limit: Int) async throws -> [RenderSample] {
        try await mapErrors {
            try await pool.withConnection { connection in
                try await connection.query(
                    """
                    SELECT channel, to_char(tick AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), rendition, renderer_version, sha256 \
                    FROM cueline_render_samples WHERE channel = \(channel) ORDER BY tick, rendition LIMIT \(limit)
                    """
                ).rows.map { row in
                    RenderSample(
                        channel: try row.string(0, "channel"), tick: Timestamp(iso8601: try row.string(1, "tick")) ?? Timestamp(milliseconds: 0),
                        rendition: try row.string(2, "rendition"), rendererVersion: Int(try row.int64(3, "renderer_version")), sha256: try row.string(4, "sha256"))
                }
            }
        }
    }

    public func channelIDs() async throws -> [String] {
        try await mapErrors {
            try await pool.withConnection { connection in
                try await connection.query("SELECT channel FROM cueline_streams WHERE version > 0 ORDER BY channel")
                    .rows.map { try $0.string(0, "channel") }
            }
        }
    }

    public func headPosition() async throws -> Int64 {
        try await mapErrors {
            try await pool.withConnection { connection in
                try await connection.query("SELECT position FROM cueline_log_head").scalar().flatMap { Int64($0) } ?? 0
            }
        }
    }

    static let selectEvents = """
        SELECT position, channel, version, type, schema_version, payload, \
        to_char(decided_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), actor, source, command_id, reason, hash \
        FROM cueline_events
        """

    static func decodeEvent(_ row: [String?]) throws -> RecordedEvent {
        let decided = try row.string(6, "decided_at")
        guard let decidedAt = Timestamp(iso8601: decided) else {
            throw PostgresError(kind: .statementFailed, message: "decided_at is not a timestamp: \(decided)")
        }
        return RecordedEvent(
            position: try row.int64(0, "position"), channel: try row.string(1, "channel"),
            version: try row.int64(2, "version"), type: try row.string(3, "type"),
            schemaVersion: Int(try row.int64(4, "schema_version")), payload: try row.string(5, "payload"),
            decidedAt: decidedAt, actor: try row.string(7, "actor"), source: try row.string(8, "source"),
            commandID: try row.string(9, "command_id"), reason: row.optionalString(10), hash: row.optionalString(11))
    }

    /// Turns driver errors into store errors an operator can act on; store errors pass through.
    private func mapErrors<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as StoreError {
            throw error
        } catch let error as PostgresError {
            if error.isUnavailable {
                logger.warning("database unavailable", metadata: ["error": "\(error)"])
                throw StoreError.unavailable("\(error)")
            }
            logger.error("database error", metadata: ["error": "\(error)", "statement": "\(error.statement ?? "")"])
            throw StoreError.database("\(error)")
        }
    }
}
