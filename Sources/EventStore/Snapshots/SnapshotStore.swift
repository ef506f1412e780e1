import HLS
import Schedule
import Postgres

/// Replay checkpoints in `cueline_snapshots` (migration 0007): see `ChannelSnapshot` for what one is and when it
/// is used.
extension PostgresEventStore {
    /// A checkpoint as stored: what it holds and the database role that wrote it (`written_by`, migration 0014).
    public struct StoredSnapshot: Sendable, Hashable {
        public var snapshot: ChannelSnapshot
        /// The role of the session that inserted it: the service's own (`cueline serve`) or the operator's tools.
        public var writtenBy: String
    }

    /// The latest checkpoint of `channel` usable for an instant: taken after every event in effect by `tick`
    /// (`latest_decided_ms <= tick`), and still matching the log (the log's hash at its version is the one it
    /// recorded, and re-applying it gives back what it holds). Nil when there is none: the caller folds the log.
    public func snapshot(of channel: ChannelID, forInstant tick: Timestamp) async throws -> ChannelSnapshot? {
        try await storedSnapshot(of: channel, forInstant: tick)?.snapshot
    }

    /// `snapshot(of:forInstant:)` with the role that wrote it, for replay to name where it started.
    public func storedSnapshot(of channel: ChannelID, forInstant tick: Timestamp) async throws -> StoredSnapshot? {
        let rows = try await pool.withConnection { connection in
            try await connection.query(
                """
                SELECT s.version, s.chain_hash, s.latest_decided_ms, s.state, e.hash, s.written_by FROM cueline_snapshots s \
                LEFT JOIN cueline_events e ON e.channel = s.channel AND e.version = s.version \
                WHERE s.channel = \(channel) AND s.latest_decided_ms <= \(tick.milliseconds) AND s.format = \(ChannelSnapshot.formatVersion) \
                ORDER BY s.version DESC LIMIT 3
                """
            ).rows
        }
        for row in rows {
            guard let hash = row.optionalString(1), hash == row.optionalString(4),
                let snapshot = try? ChannelSnapshot.decode(try row.string(3, "state")),
                snapshot.fold == ChannelSnapshot.foldVersion,
                snapshot.channel == channel, snapshot.version == (try row.int64(0, "version")),
                snapshot.chainHash == hash,
                snapshot.latestDecided.milliseconds == (try row.int64(2, "latest_decided_ms")),
                snapshot.restoresExactly()
            else {
                logger.warning(
                    "replay checkpoint does not match the log; not used", metadata: ["channel": "\(channel)"])
                continue
            }
            return StoredSnapshot(snapshot: snapshot, writtenBy: try row.string(5, "written_by"))
        }
        return nil
    }

    /// Every checkpoint of `channel` in version order, as stored (unverified: `cueline verify` compares each with the
    /// fold of the log). A row this build cannot decode is listed with a nil snapshot.
    public func storedSnapshots(of channel: ChannelID) async throws -> [(
        version: Int64, writtenBy: String, snapshot: ChannelSnapshot?
    )] {
        try await pool.withConnection { connection in
            try await connection.query(
                """
                SELECT version, written_by, state FROM cueline_snapshots WHERE channel = \(channel) \
                AND format = \(ChannelSnapshot.formatVersion) ORDER BY version
                """
            ).rows.map { row in
                (
                    try row.int64(0, "version"), try row.string(1, "written_by"),
                    try? ChannelSnapshot.decode(try row.string(2, "state"))
                )
            }
        }
    }

    /// The highest version checkpointed of every channel that has a checkpoint this build can use (its format and
    /// fold version).
    public func latestSnapshotVersions() async throws -> [ChannelID: Int64] {
        try await pool.withConnection { connection in
            var versions: [ChannelID: Int64] = [:]
            for row in try await connection.query(
                """
                SELECT channel, max(version) FROM cueline_snapshots WHERE format = \(ChannelSnapshot.formatVersion) \
                AND (state::json ->> 'fold') = \(String(ChannelSnapshot.foldVersion)) GROUP BY channel
                """
            ).rows {
                guard let channel = ChannelID(stored: try row.string(0, "channel")) else { continue }
                versions[channel] = try row.int64(1, "max")
            }
            return versions
        }
    }

    /// The highest version checkpointed for `channel` (0 when none).
    public func latestSnapshotVersion(of channel: ChannelID) async throws -> Int64 {
        try await pool.withConnection { connection in
            try await connection.query(
                "SELECT coalesce(max(version), 0) FROM cueline_snapshots WHERE channel = \(channel)"
            )
            .scalar().flatMap { Int64($0) } ?? 0
        }
    }

    /// The newest checkpoint of `channel` whatever the instant, verified as `snapshot(of:forInstant:)` verifies.
    public func latestSnapshot(of channel: ChannelID) async throws -> ChannelSnapshot? {
        try await snapshot(of: channel, forInstant: Timestamp(milliseconds: .max))
    }

    /// Stores a checkpoint as the service role may (migration 0014: it inserts, it never replaces): one already stored
    /// at that version is kept. The database records the writing role in `written_by`.
    public func insertSnapshot(_ snapshot: ChannelSnapshot) async throws {
        try await pool.withConnection { connection in
            try await connection.query(
                """
                INSERT INTO cueline_snapshots (channel, version, chain_hash, latest_decided_ms, format, state) \
                VALUES (\(snapshot.channel), \(snapshot.version), \(snapshot.chainHash), \(snapshot.latestDecided.milliseconds), \
                \(snapshot.format), \(snapshot.encoded())) ON CONFLICT (channel, version) DO NOTHING
                """)
        }
    }

    /// Stores a checkpoint (one already stored at that version is kept, unless another fold version wrote it: a build
    /// that folds differently could not use it, and would otherwise never get its own there).
    public func saveSnapshot(_ snapshot: ChannelSnapshot) async throws {
        try await pool.withConnection { connection in
            try await connection.query(
                """
                INSERT INTO cueline_snapshots (channel, version, chain_hash, latest_decided_ms, format, state) \
                VALUES (\(snapshot.channel), \(snapshot.version), \(snapshot.chainHash), \(snapshot.latestDecided.milliseconds), \
                \(snapshot.format), \(snapshot.encoded())) ON CONFLICT (channel, version) DO UPDATE SET \
                chain_hash = EXCLUDED.chain_hash, latest_decided_ms = EXCLUDED.latest_decided_ms, format = EXCLUDED.format, \
                state = EXCLUDED.state, recorded_at = clock_timestamp(), written_by = current_user \
                WHERE (cueline_snapshots.state::json ->> 'fold') IS DISTINCT FROM (EXCLUDED.state::json ->> 'fold')
                """)
        }
    }

    /// The events of `channel` after `version` that were decided at or before `tick`, in version order, `limit` at
    /// most (pass the last one's version to read on). The filter runs in the database: events decided later are
    /// neither sent nor decoded.
    public func readStream(
        _ channel: ChannelID, after version: Int64, decidedAtOrBefore tick: Timestamp, limit: Int
    ) async throws -> [RecordedEvent] {
        try await pool.withConnection { connection in
            try await connection.query(
                """
                \(unescaped: Self.selectEvents) WHERE channel = \(channel) AND version > \(version) \
                AND floor(extract(epoch FROM decided_at) * 1000)::bigint <= \(tick.milliseconds) \
                ORDER BY version LIMIT \(limit)
                """
            ).rows.map(Self.decodeEvent)
        }
    }
}
