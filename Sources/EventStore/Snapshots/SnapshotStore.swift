import HLS
import Schedule
import Postgres

/// Replay checkpoints in `cueline_snapshots` (migration 0007): see `ChannelSnapshot` for what one is and when it
/// is used.
extension PostgresEventStore {
    /// The latest checkpoint of `channel` usable for an instant: taken after every event in effect by `tick`
    /// (`latest_decided_ms <= tick`), and still matching the log (the log's hash at its version is the one it
    /// recorded, and re-applying it gives back what it holds). Nil when there is none: the caller folds the log.
    public func snapshot(of channel: ChannelID, forInstant tick: Timestamp) async throws -> ChannelSnapshot? {
        let rows = try await pool.withConnection { connection in
            try await connection.query(
                """
                SELECT s.version, s.chain_hash, s.latest_decided_ms, s.state, e.hash FROM cueline_snapshots s \
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
            return snapshot
        }
        return nil
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
                state = EXCLUDED.state, recorded_at = clock_timestamp() \
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
