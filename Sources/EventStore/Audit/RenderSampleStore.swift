import HLS
import Schedule
import Postgres
import Synchronization

/// Digests of served playlists, for `cueline verify`: written by the follower as it serves, read by verify.
/// Kept apart from the event log (a sample changes no schedule).
///
/// Implementations: `PostgresRenderSampleStore` (`cueline_render_samples`) and `InMemoryRenderSampleStore`; both
/// pass the same contract tests.
public protocol RenderSampleStore: Sendable {
    /// Records digests of served playlists; a sample already recorded (same channel, tick, rendition) is kept.
    func recordRenderSamples(_ samples: [RenderSample]) async throws

    /// A channel's recorded samples, oldest first (then by rendition), at most `limit`.
    func renderSamples(of channel: ChannelID, limit: Int) async throws -> [RenderSample]
}

/// The digest of one playlist as a server rendered it, for `cueline verify`.
public struct RenderSample: Sendable, Hashable, Codable {
    public var channel: ChannelID
    public var tick: Timestamp
    public var rendition: Identifier
    public var rendererVersion: Int
    public var sha256: String

    public init(channel: ChannelID, tick: Timestamp, rendition: Identifier, rendererVersion: Int, sha256: String) {
        self.channel = channel
        self.tick = tick
        self.rendition = rendition
        self.rendererVersion = rendererVersion
        self.sha256 = sha256
    }
}

/// Render samples in memory, for tests and in-process servers.
public final class InMemoryRenderSampleStore: RenderSampleStore {
    private let samples = Mutex<[RenderSample]>([])

    public init() {}

    public func recordRenderSamples(_ new: [RenderSample]) {
        samples.withLock { samples in
            for sample in new
            where !samples.contains(where: {
                $0.channel == sample.channel && $0.tick == sample.tick && $0.rendition == sample.rendition
            }) {
                samples.append(sample)
            }
        }
    }

    public func renderSamples(of channel: ChannelID, limit: Int) -> [RenderSample] {
        Array(
            samples.withLock { $0.filter { $0.channel == channel } }
                .sorted { ($0.tick, $0.rendition) < ($1.tick, $1.rendition) }.prefix(max(0, limit)))
    }
}

/// Render samples in `cueline_render_samples` (written through `cueline_record_samples`, Migrations/0005).
public struct PostgresRenderSampleStore: RenderSampleStore {
    let pool: PostgresPool

    public init(pool: PostgresPool) {
        self.pool = pool
    }

    public func recordRenderSamples(_ samples: [RenderSample]) async throws {
        guard !samples.isEmpty else { return }
        try await StoreErrors.map {
            try await pool.withConnection { connection in
                // Through the database function (Migrations/0005): ticks within 10 minutes of its clock only.
                struct Wire: Encodable {
                    var channel: ChannelID
                    var tick_ms: Int64
                    var rendition: Identifier
                    var renderer_version: Int
                    var sha256: String
                }
                let json = EventStoreJSON.encode(
                    samples.map {
                        Wire(
                            channel: $0.channel, tick_ms: $0.tick.milliseconds, rendition: $0.rendition,
                            renderer_version: $0.rendererVersion, sha256: $0.sha256)
                    })
                try await connection.query("SELECT cueline_record_samples(\(json)::json)")
            }
        }
    }

    public func renderSamples(of channel: ChannelID, limit: Int) async throws -> [RenderSample] {
        try await StoreErrors.map {
            try await pool.withConnection { connection in
                try await connection.query(
                    """
                    SELECT channel, floor(extract(epoch FROM tick) * 1000)::bigint, rendition, renderer_version, sha256 \
                    FROM cueline_render_samples WHERE channel = \(channel) \
                    AND tick BETWEEN '2000-01-01T00:00:00Z' AND '2200-01-01T00:00:00Z' ORDER BY tick, rendition LIMIT \(limit)
                    """
                ).rows.map { row in
                    RenderSample(
                        channel: try row.identifier(0, "channel"),
                        tick: Timestamp(milliseconds: try row.int64(1, "tick")),
                        rendition: try row.identifier(2, "rendition"),
                        rendererVersion: Int(try row.int64(3, "renderer_version")), sha256: try row.string(4, "sha256"))
                }
            }
        }
    }
}
