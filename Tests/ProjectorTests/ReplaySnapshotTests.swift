import EventStore
import Foundation
import HLS
import Postgres
import Projector
import Schedule
import TestSupport
import Testing

/// A deterministic log of a few hours of operation: breaks placed ahead (ids reused after they retire), playout
/// limits, returns, cancellations of the current and of future breaks, rendition updates, and decision times that
/// are not always in version order (several instances, a little clock skew).
enum SnapshotLog {
    typealias Generator = SplitMix64

    static let epoch = Timestamp(iso8601: "2026-03-01T00:00:00Z")!

    static func config(_ channel: ChannelID) -> ChannelConfig {
        ChannelConfig(
            id: channel, segmentDurationMilliseconds: 2000, windowSegments: 10, epoch: epoch,
            renditions: ["1080p", "720p", "360p"].map {
                RenditionConfig(name: $0, bandwidth: 1_000_000, uriTemplate: "\($0)/seg{n}.ts")
            },
            publicBaseURL: "http://127.0.0.1:8080")
    }

    static func make(_ channel: ChannelID, commands: Int, seed: UInt64 = 12) -> [RecordedScheduleEvent] {
        var random = Generator(seed: seed)
        var state = ChannelState(channel: channel, retention: .window)
        var events: [RecordedScheduleEvent] = []
        var now = epoch
        func apply(_ command: ScheduleCommand, skew: Int64 = 0) {
            guard let decided = try? decide(command, state: state, now: now) else { return }
            for event in decided {
                let version = Int64(events.count + 1)
                let recorded = RecordedScheduleEvent(
                    event: event, version: version, position: version,
                    attribution: Attribution(at: now.adding(milliseconds: -skew), actor: "test", source: "test"))
                state.apply(recorded)
                events.append(recorded)
            }
        }
        apply(.createChannel(config(channel)))
        var placed = 0
        for _ in 0..<commands {
            now = now.adding(milliseconds: Int64.random(in: 5_000...40_000, using: &random))
            let skew = Int64.random(in: 0..<4, using: &random) == 0 ? Int64.random(in: 1...40, using: &random) : 0
            let live = state.breaks.filter { !$0.isCancelled && $0.end > now }
            switch Int.random(in: 0..<100, using: &random) {
            case 0..<55:
                placed += 1
                let start = now.adding(milliseconds: Int64.random(in: 10_000...3_600_000, using: &random))
                let id = BreakID("b\(placed % 60)")!  // reused once the earlier break of that id has retired
                let asset: BreakAsset = .uri("https://ads.example.com/\(placed).m3u8")
                apply(
                    .placeBreak(
                        PlaceBreak(
                            id: id, start: .at(start),
                            plannedDurationMilliseconds: Int64.random(in: 6_000...120_000, using: &random), asset: asset
                        )), skew: skew)
            case 55..<65:
                if let item = live.randomElement(using: &random) {
                    apply(
                        .setPlayoutLimit(
                            id: item.id, limitMilliseconds: max(2_000, item.spec.plannedDurationMilliseconds / 2)),
                        skew: skew)
                }
            case 65..<75:
                apply(.cancelCurrentEvent, skew: skew)
            case 75..<88:
                if let item = live.randomElement(using: &random) { apply(.cancelBreak(id: item.id), skew: skew) }
            case 88..<95:
                if let item = live.first(where: { $0.start <= now }) {
                    apply(.returnFromBreak(id: item.id, scte35In: nil), skew: skew)
                }
            default:
                let count = Int.random(in: 1...3, using: &random)
                apply(.updateRenditions(Array(config(channel).renditions.prefix(count))), skew: skew)
            }
        }
        return events
    }

    /// The playlist of every rendition the channel ever had (and the multivariant) at `tick`, or the error's text.
    static func rendered(_ channel: ChannelID, _ state: ChannelState, at tick: Timestamp) -> [String] {
        let names = config(channel).renditions.map(\.name)
        return (names.map { Optional($0) } + [nil]).map { name in
            do {
                return try Replay.playlist(channel, state: state, at: tick, rendition: name, multivariant: name == nil)
            } catch {
                return "error: \(error)"
            }
        }
    }

    /// Instants at and after `from`: the instant itself, the next millisecond, boundaries after it, some later ones.
    static func instants(from: Timestamp, until end: Timestamp, random: inout Generator) -> [Timestamp] {
        let timeline = Timeline(config("x"))
        var instants = [from, from.adding(milliseconds: 1), timeline.nextBoundary(after: from)]
        let span = max(1, end.milliseconds(since: from))
        for _ in 0..<4 { instants.append(from.adding(milliseconds: Int64.random(in: 0...span, using: &random))) }
        instants.append(end.adding(milliseconds: 3_600_000))
        return instants
    }
}

@Suite("Replay checkpoints")
struct ReplaySnapshotTests {
    @Test("a checkpoint restores the fold it was taken from, through its JSON, at every 20th event of a long log")
    func restoresTheFold() throws {
        let events = SnapshotLog.make("snap", commands: 1500)
        #expect(events.count > 500)
        var checked = 0
        var retiredSeen = false
        for cut in stride(from: 20, to: events.count, by: 20) {
            let full = fold("snap", Array(events[..<cut]), asOf: Timestamp(milliseconds: .max), retention: .window)
            let all = fold("snap", Array(events[..<cut]), asOf: Timestamp(milliseconds: .max), retention: .all)
            retiredSeen = retiredSeen || all.breaks.count > full.breaks.count
            let snapshot = try #require(ChannelSnapshot(full, chainHash: "h\(cut)"))
            let decoded = try ChannelSnapshot.decode(snapshot.encoded())
            #expect(decoded == snapshot)
            let restored = decoded.restore()
            #expect(restored == full, "checkpoint at \(cut)")
            #expect(restored.latestDecided == full.latestDecided)
            #expect(decoded.restoresExactly())
            checked += 1
        }
        #expect(checked > 25)
        #expect(retiredSeen, "the log must be long enough for breaks to retire, or the checkpoints hold every break")
    }

    @Test(
        "replay from a checkpoint and the events after it renders the same bytes as the fold of the whole log, at many instants"
    )
    func sameBytesAsTheFullFold() throws {
        let events = SnapshotLog.make("snap", commands: 1500, seed: 99)
        var random = SnapshotLog.Generator(seed: 7)
        let end = events.last!.attribution.at
        var compared = 0
        var playlists = 0
        for cut in stride(from: 30, to: events.count, by: 45) {
            let snapshot = try #require(
                ChannelSnapshot(
                    fold("snap", Array(events[..<cut]), asOf: Timestamp(milliseconds: .max), retention: .window),
                    chainHash: nil))
            for tick in SnapshotLog.instants(from: snapshot.latestDecided, until: end, random: &random) {
                var state = snapshot.restore()
                for event in events[cut...] where event.attribution.at <= tick { state.apply(event) }
                let full = fold("snap", events, asOf: tick, retention: .window)
                #expect(state == full, "checkpoint at \(cut), instant \(tick.iso8601)")
                let expected = SnapshotLog.rendered("snap", full, at: tick)
                #expect(
                    SnapshotLog.rendered("snap", state, at: tick) == expected,
                    "checkpoint at \(cut), instant \(tick.iso8601)")
                playlists += expected.filter { $0.hasPrefix("#EXTM3U") }.count
                compared += 1
            }
        }
        #expect(compared > 80)
        #expect(playlists > compared, "most instants must render playlists, not errors")
    }

    @Test("a checkpoint whose breaks a fold would not keep is refused")
    func refusesWhatDoesNotRestore() throws {
        let events = SnapshotLog.make("snap", commands: 200)
        let snapshot = try #require(
            ChannelSnapshot(
                fold("snap", events, asOf: Timestamp(milliseconds: .max), retention: .window), chainHash: nil))
        #expect(snapshot.restoresExactly())
        let index = try #require(snapshot.breaks.firstIndex { $0.playoutLimitMilliseconds == nil })
        var edited = snapshot
        edited.breaks[index].playoutLimitMilliseconds = 1000  // a limit no event set (no attribution)
        #expect(!edited.restoresExactly())
        edited = snapshot
        edited.latestDecided = edited.latestDecided.adding(milliseconds: 86_400_000)  // every break has retired by then
        #expect(!edited.restoresExactly())
    }
}

@Suite(
    "Replay checkpoints in PostgreSQL", .enabled(if: TestDatabase.isConfigured, "needs DATABASE_URL (scripts/test.sh)"))
struct ReplaySnapshotStoreTests {
    /// Writes `events` as the log of `channel`, with their hash chain, directly (they were decided in the past,
    /// which `cueline_append` refuses).
    static func write(_ events: [RecordedScheduleEvent], channel: ChannelID, url: String) async throws
        -> [RecordedEvent]
    {
        let connection = try await PostgresConnection.connect(url: url)
        defer { connection.close() }
        // Past every position handed out (Migrations/0010: positions come from a sequence), then the sequence moves past these.
        let base = Int64(
            try await connection.query(
                "SELECT greatest(CASE WHEN is_called THEN last_value ELSE 0 END, (SELECT coalesce(max(position), 0) FROM cueline_events)) FROM cueline_positions"
            ).scalar().flatMap { Int64($0) } ?? 0)
        var previous = HashChain.genesis(channel: channel)
        var written: [RecordedEvent] = []
        for event in events {
            let encoded = EventCodec.encode(event.event)
            var raw = RecordedEvent(
                position: base + event.version, channel: channel, version: event.version, type: encoded.type,
                schemaVersion: encoded.schemaVersion, payload: encoded.payload, decidedAt: event.attribution.at,
                actor: event.attribution.actor, source: event.attribution.source,
                commandID: "c\(channel)-\(event.version)", reason: nil)
            raw.hash = HashChain.hash(previous: previous, event: raw)
            previous = raw.hash!
            try await connection.query(
                """
                INSERT INTO cueline_events (position, channel, version, type, schema_version, payload, decided_at, actor, source, command_id, reason, hash) \
                VALUES (\(raw.position), \(raw.channel), \(raw.version), \(raw.type), \(raw.schemaVersion), \(raw.payload)::json, \
                \(raw.decidedAt.iso8601)::timestamptz, \(raw.actor), \(raw.source), \(raw.commandID), \(raw.reason), \(raw.hash))
                """)
            written.append(raw)
        }
        try await connection.query(
            "INSERT INTO cueline_streams (channel, version, last_hash) VALUES (\(channel), \(events.last!.version), \(previous))"
        )
        try await connection.query("SELECT setval('cueline_positions', \(base + events.last!.version))")
        return written
    }

    @Test(
        "checkpoints written every 100 events; replay through them equals the fold of the log; a checkpoint not matching the log is not used"
    )
    func throughTheDatabase() async throws {
        let url = try await TestDatabase.makeFreshDatabase()
        _ = try await Migrator.load(directory: TestDatabase.migrationsDirectory).migrate(url: url)
        let store = PostgresEventStore(pool: PostgresPool(url: url, maximumConnections: 4))
        let events = SnapshotLog.make("snapdb", commands: 500, seed: 5)
        _ = try await Self.write(events, channel: "snapdb", url: url)

        #expect(try await store.snapshot(of: "snapdb", forInstant: Timestamp(milliseconds: .max)) == nil)
        let written = try await Replay.checkpoint("snapdb", store: store, every: 100)
        #expect(written == events.count / 100)
        #expect(try await Replay.checkpoint("snapdb", store: store, every: 100) == 0, "nothing new to checkpoint")
        let latest = try #require(try await store.latestSnapshot(of: "snapdb"))
        #expect(latest.version == Int64(events.count / 100 * 100))

        var random = SnapshotLog.Generator(seed: 3)
        let end = events.last!.attribution.at
        var usedCheckpoint = 0
        for _ in 0..<40 {
            let tick = SnapshotLog.epoch.adding(
                milliseconds: Int64.random(in: 0...end.milliseconds(since: SnapshotLog.epoch) + 600_000, using: &random)
            )
            if try await store.snapshot(of: "snapdb", forInstant: tick) != nil { usedCheckpoint += 1 }
            let state = try await Replay.state("snapdb", store: store, asOf: tick)
            let full = fold("snapdb", events, asOf: tick, retention: .window)
            #expect(state == full, "instant \(tick.iso8601)")
            #expect(SnapshotLog.rendered("snapdb", state, at: tick) == SnapshotLog.rendered("snapdb", full, at: tick))
        }
        #expect(usedCheckpoint > 20)

        // A checkpoint recording another hash than the log's at its version is passed over for the one before it.
        let connection = try await PostgresConnection.connect(url: url)
        defer { connection.close() }
        try await connection.query(
            "UPDATE cueline_snapshots SET chain_hash = 'forged' WHERE channel = 'snapdb' AND version = \(latest.version)"
        )
        let previous = try #require(try await store.latestSnapshot(of: "snapdb"))
        #expect(previous.version == latest.version - 100)
        let tick = end.adding(milliseconds: 1)
        let state = try await Replay.state("snapdb", store: store, asOf: tick)
        #expect(state == fold("snapdb", events, asOf: tick, retention: .window))

        // Checkpoints written by a build that folded differently (another fold version) are not used, and a
        // checkpointing run of this build writes its own over them.
        let (ours, theirs) = (#""fold":\#(ChannelSnapshot.foldVersion)"#, #""fold":999"#)
        try await connection.query(
            "UPDATE cueline_snapshots SET state = replace(state, \(ours), \(theirs)) WHERE channel = 'snapdb'")
        #expect(try await store.latestSnapshot(of: "snapdb") == nil)
        let refolded = try await Replay.state("snapdb", store: store, asOf: tick)
        #expect(refolded == fold("snapdb", events, asOf: tick, retention: .window))
        #expect(try await Replay.checkpoint("snapdb", store: store, every: 100) == events.count / 100)
        #expect(try await store.latestSnapshot(of: "snapdb")?.version == latest.version)
    }
}
