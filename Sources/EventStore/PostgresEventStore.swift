import HLS
import Schedule
import Logging
import Postgres

/// The event log in PostgreSQL (schema: `Migrations/`).
///
/// Keeps the rules of `design.md`: per-channel gap-free versions checked under a row lock on the stream;
/// global positions taken from a one-row log head updated last in the transaction, so they become visible in
/// order; command ids with request hashes in the same transaction; NOTIFY as a hint, sent after the commit.
public struct PostgresEventStore: EventStore {
    /// The NOTIFY channel; its payload is `<channel> <last position>`.
    public static let notifyChannel = "cueline_events"
    /// The highest migration this build needs.
    public static let requiredMigration = 17

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
                    try await Self.append(request, on: connection, hinting: true)
                }
            } catch let error as PostgresError where error.kind == .connectionLost {
                // The call was sent and the connection broke before its answer: it may have committed. The
                // idempotency record tells, so the answer is never "nothing was written" for a write that happened.
                if let recorded = try await recordedAfterLostCall(request, error) { return recorded }
                // Not written yet (a server process ended under it, a restart): sent once more on another connection.
                // The same command id makes that safe even if the first call's transaction were still to commit:
                // the append waits for its lock and answers with its record.
                do {
                    var result = try await pool.withConnection { connection in
                        try await Self.append(request, on: connection, hinting: true)
                    }
                    // The first call committed after it was looked for: the database answers this request's own write
                    // as a replay. Its events carry this request's decision time.
                    if result.replayed, let first = result.events.first, first.decidedAt == request.command.decidedAt {
                        result.replayed = false
                    }
                    return result
                } catch StoreError.streamLocked {
                    // The row is still held: perhaps by the first call itself, still to commit.
                    throw StoreError.unknownOutcome("\(error); then, sent again, the channel's row was still locked")
                } catch let error as StoreError {
                    // Decided by the database under the stream's lock, after any first call had ended: final.
                    throw error
                } catch let error as PostgresError where error.kind == .connectionLost {
                    if let recorded = try await recordedAfterLostCall(request, error) { return recorded }
                    throw StoreError.unknownOutcome("\(error)")
                } catch {
                    // Not sent, or not answered: the first call may still commit (it may be waiting for a lock).
                    throw StoreError.unknownOutcome("\(error)")
                }
            }
        }
    }

    /// After a call lost with its connection: the command's idempotency record, if it is in the log. Its events are
    /// this request's own when they carry this request's decision time (the lost call committed): `replayed` false;
    /// an earlier request's with the same command id otherwise: `replayed` true, as the database would have answered.
    /// A record of another request under this command id is `commandIDReused`: this request wrote nothing.
    private func recordedAfterLostCall(_ request: AppendRequest, _ lost: PostgresError) async throws -> AppendResult? {
        let recorded: AppendResult?
        do {
            recorded = try await pool.withConnection { try await Self.previousResult(of: request, on: $0) }
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreError.unknownOutcome("\(lost); then, asking whether it was written: \(error)")
        }
        guard var result = recorded else { return nil }
        result.replayed = result.events.first.map { $0.decidedAt != request.command.decidedAt } ?? false
        return result
    }

    /// The hint that tells listeners (`notifyChannel`) that `channel` has events up to `position`, sent after the
    /// append's commit without waiting for its answer (`PostgresConnection.query(_:preparedAs:thenSend:)`).
    ///
    /// In a transaction of its own that does not wait for its commit record to be flushed: a NOTIFY holds a
    /// cluster-wide lock from before its commit to the end of it, so sent inside the append it made every append of
    /// every channel wait for the previous one's fsync (Migrations/0011). A hint lost (a crash, a broken connection)
    /// costs a listener one poll interval, never an event: listeners catch up by position.
    static func hint(channel: ChannelID, position: Int64) -> PostgresQuery {
        "SELECT pg_notify(\(notifyChannel), \("\(channel.rawValue) \(position)")), set_config('synchronous_commit', 'off', true)"
    }

    /// The append: one call of `cueline_append` (Migrations/functions/cueline_append.sql), which locks, checks, links the hash
    /// and records the command in the database, in its own transaction or the caller's. `hinting`: the NOTIFY hint
    /// follows a committed append on the same connection, unawaited; inside a caller's transaction none is sent (the
    /// caller sends it after its commit, or leaves it to the listeners' polls).
    /// `package` so tests can run it as another role or roll it back.
    package static func append(_ request: AppendRequest, on connection: PostgresConnection, hinting: Bool = false)
        async throws
        -> AppendResult
    {
        let command = request.command
        let expected: Int64
        switch request.expectedVersion {
        case .any: expected = -1
        case .noStream: expected = 0
        case .exactly(let version): expected = version
        }
        // The payloads travel inside a JSON array: check them here so the refusal names the NUL, as for values.
        if request.events.contains(where: { $0.payload.utf8.contains(0) }) {
            throw StoreError.invalidValue(
                "an event payload holds a NUL character (U+0000), which PostgreSQL text cannot store")
        }
        let rows: PostgresRows
        do {
            let call: PostgresQuery = """
                SELECT result_version, replayed, first_position, last_position, hashes, positions FROM cueline_append(\
                \(request.channel), \(expected), \(command.commandID), \(request.requestHash), \(command.actor), \
                \(command.source), \(command.reason), \(command.decidedAt.milliseconds), \(eventsJSON(request.events))::json)
                """
            if hinting {
                let channel = request.channel
                rows = try await connection.query(
                    call, preparedAs: "cueline_append",
                    thenSend: { rows in
                        // The last position of an applied command (a retry's events were hinted when first appended).
                        guard let row = rows.rows.first, row.optionalString(1) == "f", let last = row.optionalInt64(3)
                        else { return nil }
                        return Self.hint(channel: channel, position: last)
                    })
            } else {
                rows = try await connection.query(call, preparedAs: "cueline_append")
            }
        } catch let error as PostgresError where error.kind == .statementFailed {
            switch error.sqlState {
            case "CL001":
                let actual = error.detail.flatMap { Int64($0) } ?? -1
                throw StoreError.versionConflict(
                    channel: request.channel, expected: request.expectedVersion, actual: actual)
            case "CL002":
                throw StoreError.commandIDReused(commandID: command.commandID)
            case "CL003":
                throw StoreError.lateDecision(
                    decidedAt: command.decidedAt,
                    databaseClock: Timestamp(milliseconds: error.detail.flatMap { Int64($0) } ?? 0))
            case "22023", "22P02", "22P05", "22021", "54000", "22007", "22008", "22003":
                throw StoreError.invalidValue(error.message)
            case "55P03":
                // A lock wait passed its deadline (Migrations/0013): the channel's row for 2 s (another transaction
                // holds it) or the log head for 5 s. The statement failed before writing anything.
                throw StoreError.streamLocked(channel: request.channel.rawValue)
            default:
                throw error
            }
        }
        guard let row = rows.rows.first else {
            throw PostgresError(kind: .statementFailed, message: "cueline_append returned no row")
        }
        let version = try row.int64(0, "result_version")
        let first = row.optionalInt64(2)
        if row.optionalString(1) == "t" {
            // A retry: the original events, as stored.
            var events: [RecordedEvent] = []
            if let first, let last = row.optionalInt64(3) {
                events = try await commandEvents(request.channel, first: first, last: last, on: connection)
            }
            return AppendResult(channel: request.channel, events: events, version: version, replayed: true)
        }
        // The database assigned positions, versions and hashes; the rest is what it was given and stored as is.
        let hashes = parseTextArray(try row.string(4, "hashes"))
        // Each event's own position: a command's positions grow but need not be consecutive (Migrations/0010).
        let positions = parseTextArray(try row.string(5, "positions")).compactMap { Int64($0) }
        guard hashes.count == request.events.count, positions.count == request.events.count else {
            throw PostgresError(
                kind: .statementFailed,
                message:
                    "cueline_append returned \(hashes.count) hashes and \(positions.count) positions for \(request.events.count) events"
            )
        }
        let recorded = request.events.enumerated().map { offset, event in
            RecordedEvent(
                position: positions[offset], channel: request.channel,
                version: version - Int64(request.events.count) + Int64(offset) + 1,
                type: event.type, schemaVersion: event.schemaVersion, payload: event.payload,
                decidedAt: command.decidedAt,
                actor: command.actor, source: command.source, commandID: command.commandID, reason: command.reason,
                hash: hashes[offset])
        }
        return AppendResult(channel: request.channel, events: recorded, version: version, replayed: false)
    }

    /// The events as the JSON array `cueline_append` takes: `[{"type":…, "schema_version":…, "payload": "<text>"}]`.
    static func eventsJSON(_ events: [NewEvent]) -> String {
        struct Wire: Encodable {
            var type: String
            var schema_version: Int
            var payload: String
        }
        return EventStoreJSON.encode(
            events.map { Wire(type: $0.type, schema_version: $0.schemaVersion, payload: $0.payload) })
    }

    /// A one-dimensional `text[]` of unquoted tokens (hex digests): `{a,b}`.
    static func parseTextArray(_ text: String) -> [String] {
        let inner = text.dropFirst().dropLast()
        return inner.isEmpty ? [] : inner.split(separator: ",").map(String.init)
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
            SELECT request_hash, result_version, first_position, last_position FROM cueline_commands \
            WHERE channel = \(request.channel) AND actor = \(request.command.actor) AND command_id = \(request.command.commandID)
            """)
        guard let row = rows.rows.first else { return nil }
        guard try row.string(0, "request_hash") == request.requestHash else {
            throw StoreError.commandIDReused(commandID: request.command.commandID)
        }
        var events: [RecordedEvent] = []
        if let first = row.optionalInt64(2), let last = row.optionalInt64(3) {
            events = try await commandEvents(request.channel, first: first, last: last, on: connection)
        }
        return AppendResult(
            channel: request.channel, events: events, version: try row.int64(1, "result_version"), replayed: true)
    }

    /// The events a command appended, from its idempotency record's first and last position: the channel's events
    /// between them (other channels' appends may have taken positions in between; the channel's own were serialized).
    private static func commandEvents(
        _ channel: ChannelID, first: Int64, last: Int64, on connection: PostgresConnection
    ) async throws -> [RecordedEvent] {
        try await connection.query(
            "\(unescaped: selectEvents) WHERE channel = \(channel) AND position BETWEEN \(first) AND \(last) ORDER BY position"
        ).rows.map(decodeEvent)
    }

    public func watermark() async throws -> Watermark {
        try await mapErrors {
            do {
                return try await pool.withConnection { connection in
                    let row = try await connection.query("SELECT head, known_until_ms FROM cueline_watermark()").rows[0]
                    return Watermark(
                        head: try row.int64(0, "head"),
                        knownUntil: Timestamp(milliseconds: try row.int64(1, "known_until_ms")))
                }
            } catch let error as PostgresError where error.sqlState == "55P03" {
                // The function waited its 5 s lock_timeout (Migrations/0005) for a transaction holding the log head.
                throw StoreError.logHeadBusy("\(error)")
            }
        }
    }

    public func read(after position: Int64, through head: Int64, limit: Int) async throws -> [RecordedEvent] {
        try await mapErrors {
            try await pool.withConnection { connection in
                try await connection.query(
                    """
                    \(unescaped: Self.selectEvents) WHERE position > \(position) AND position <= \(head) \
                    ORDER BY position LIMIT \(limit)
                    """
                ).rows.map(Self.decodeEvent)
            }
        }
    }

    public func readStream(_ channel: ChannelID, after version: Int64, limit: Int) async throws -> [RecordedEvent] {
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

    public func version(of channel: ChannelID) async throws -> Int64 {
        try await mapErrors {
            try await pool.withConnection { connection in
                try await connection.query("SELECT version FROM cueline_streams WHERE channel = \(channel)")
                    .scalar().flatMap { Int64($0) } ?? 0
            }
        }
    }

    /// Every channel with at least one event, sorted: for the operator's listings (`cueline channel list`,
    /// `cueline verify`). Not part of `EventStore`: nothing that follows the log needs it (the follower learns
    /// channels from the events it reads).
    public func channelIDs() async throws -> [ChannelID] {
        try await mapErrors {
            try await pool.withConnection { connection in
                try await connection.query("SELECT channel FROM cueline_streams WHERE version > 0 ORDER BY channel")
                    .rows.map { try $0.identifier(0, "channel") }
            }
        }
    }

    public func headPosition() async throws -> Int64 {
        try await mapErrors {
            try await pool.withConnection { connection in
                try await connection.query("SELECT coalesce(max(position), 0) FROM cueline_events").scalar().flatMap {
                    Int64($0)
                } ?? 0
            }
        }
    }

    static let selectEvents = """
        SELECT position, channel, version, type, schema_version, payload, \
        floor(extract(epoch FROM decided_at) * 1000)::bigint, actor, source, command_id, reason, hash \
        FROM cueline_events
        """

    static func decodeEvent(_ row: [String?]) throws -> RecordedEvent {
        // Milliseconds since the epoch: readable back whatever the year (a rendering could fail to parse).
        let decidedAt = Timestamp(milliseconds: try row.int64(6, "decided_at"))
        return RecordedEvent(
            position: try row.int64(0, "position"), channel: try row.identifier(1, "channel"),
            version: try row.int64(2, "version"), type: try row.string(3, "type"),
            schemaVersion: Int(try row.int64(4, "schema_version")), payload: try row.string(5, "payload"),
            decidedAt: decidedAt, actor: try row.string(7, "actor"), source: try row.string(8, "source"),
            commandID: try row.string(9, "command_id"), reason: row.optionalString(10), hash: row.optionalString(11))
    }

    /// Turns driver errors into store errors an operator can act on; store errors pass through.
    private func mapErrors<T>(_ body: () async throws -> T) async throws -> T {
        try await StoreErrors.map(logger: logger, body)
    }
}

// Ids are bound as query parameters like any text (never spliced into SQL).
extension Identifier: PostgresEncodable {
    public var postgresText: String { rawValue }
}

extension Array where Element == String? {
    /// The column `index` as an id, read by the rule it was created with (`Identifier(stored:)`), or a decoding
    /// error naming the column.
    func identifier(_ index: Int, _ name: String) throws -> Identifier {
        let text = try string(index, name)
        guard let id = Identifier(stored: text) else {
            throw PostgresError(
                kind: .statementFailed,
                message: "column \(name) is not an id: \(text.debugDescription.escapingControlCharacters)")
        }
        return id
    }
}
