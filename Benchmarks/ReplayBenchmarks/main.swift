// Replay benchmark: the cost of `replay --at` for a channel log of growing length, against the shortest log
// measured in the same run. A 24-hour channel (2 s segments) with 125, 250, 500 and 1000 breaks (each placed, some
// ended early, some cancelled). Replay folds the events in effect and renders one window: it never re-renders the
// ticks before it, so the cost grows with the number of events, not with the hours of history.
//
// With DATABASE_URL set, it also writes a day (100 breaks) and a year (365 x 100 breaks, ~110,000 events) of one
// channel's history to PostgreSQL and times `cueline replay --at`'s path at random instants: reading the whole log
// and folding it (the year's baseline), and reading from the latest checkpoint (issue 12: < 200 ms on a year).
//
// Usage: swift run -c release cueline-replay-bench
import EventStore
import Foundation
import HLS
import Postgres
import Projector
import Schedule

// REPLAY_BENCH_EPOCH moves the histories' start (bench-history.sh: a year that ended before now).
let epoch =
    ProcessInfo.processInfo.environment["REPLAY_BENCH_EPOCH"].flatMap(Timestamp.init(iso8601:))
    ?? Timestamp(iso8601: "2026-03-01T00:00:00Z")!
let day: Int64 = 86_400_000

func log(breaks: Int, channel: ChannelID = "bench", days: Int64 = 1, tentative: Bool = false) throws
    -> [RecordedScheduleEvent]
{
    var state = ChannelState(channel: channel, retention: .window)
    var events: [RecordedScheduleEvent] = []
    var version: Int64 = 0
    func apply(_ command: ScheduleCommand, at time: Timestamp) throws {
        for event in try decide(command, state: state, now: time) {
            version += 1
            let recorded = RecordedScheduleEvent(
                event: event, version: version, position: version,
                attribution: Attribution(at: time, actor: "bench", source: "bench"))
            state = evolve(state, recorded)
            events.append(recorded)
        }
    }
    let config = ChannelConfig(
        id: channel, segmentDurationMilliseconds: 2000, windowSegments: 10, epoch: epoch,
        renditions: ["1080p", "720p", "360p"].map {
            RenditionConfig(name: $0, bandwidth: 1_000_000, uriTemplate: "\($0)/seg{n}.ts")
        },
        publicBaseURL: "http://127.0.0.1:8080")
    try apply(.createChannel(config), at: epoch)
    let spacing = days * day / Int64(breaks)
    for index in 0..<breaks {
        let start = epoch.adding(milliseconds: Int64(index) * spacing + 60_000)
        if tentative {
            // A year's operation: each break placed and ended early by its return; every other slot also had a
            // break placed ahead and cancelled (3 events a break).
            if index % 2 == 0 {
                let ahead = start.adding(milliseconds: spacing / 2)
                try apply(
                    .placeBreak(
                        PlaceBreak(
                            id: BreakID("t\(index)")!, start: .at(ahead), plannedDurationMilliseconds: 30_000,
                            asset: .uri("https://ads.example.com/t\(index).m3u8"))),
                    at: start.adding(milliseconds: -50_000))
                try apply(.cancelBreak(id: BreakID("t\(index)")!), at: start.adding(milliseconds: -40_000))
            }
            try apply(
                .placeBreak(
                    PlaceBreak(
                        id: BreakID("b\(index)")!, start: .at(start),
                        plannedDurationMilliseconds: min(90_000, spacing / 2),
                        asset: .uri("https://ads.example.com/\(index).m3u8"))), at: start.adding(milliseconds: -30_000))
            try apply(
                .setPlayoutLimit(id: BreakID("b\(index)")!, limitMilliseconds: 25_000),
                at: start.adding(milliseconds: 20_500))
            continue
        }
        try apply(
            .placeBreak(
                PlaceBreak(
                    id: BreakID("b\(index)")!, start: .at(start), plannedDurationMilliseconds: min(90_000, spacing / 2),
                    asset: .uri("https://ads.example.com/\(index).m3u8"))), at: start.adding(milliseconds: -30_000))
        if index % 3 == 1 { try apply(.cancelCurrentEvent, at: start.adding(milliseconds: 20_500)) }
        if index % 7 == 2 {
            try apply(.cancelBreak(id: BreakID("b\(index)")!), at: start.adding(milliseconds: -10_000))
        }
    }
    return events
}

func median(_ samples: [Double]) -> Double { samples.sorted()[samples.count / 2] }

func timeReplay(_ events: [RecordedScheduleEvent], queries: Int = 200) throws -> Double {
    var samples: [Double] = []
    var generator = SystemRandomNumberGenerator()
    for _ in 0..<queries {
        let at = epoch.adding(milliseconds: Int64.random(in: 60_000..<day, using: &generator))
        let start = DispatchTime.now().uptimeNanoseconds
        _ = try Replay.playlist("bench", events, at: at, rendition: "720p", multivariant: false)
        samples.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6)
    }
    return median(samples)
}

// `cueline-replay-bench write CHANNEL FIRST LAST`: writes versions FIRST...LAST of a year's log of CHANNEL (the one
// measured below) to DATABASE_URL and stops (scripts/bench/bench-history.sh: a server started on a long log).
if CommandLine.arguments.count == 5, CommandLine.arguments[1] == "write",
    let channel = ChannelID(CommandLine.arguments[2]), let first = Int64(CommandLine.arguments[3]),
    let last = Int64(CommandLine.arguments[4]), let url = ProcessInfo.processInfo.environment["DATABASE_URL"]
{
    let events = try log(breaks: 365 * 100, channel: channel, days: 365, tentative: true)
    try await write(events, channel: channel, url: url, versions: first...min(last, events.last!.version))
    print(events.last!.version)
    exit(0)
}

print("replay --at, 24-hour channel, 2 s segments, 3 renditions (median of 200 random instants, in memory)")
var baseline: Double?
for breaks in [125, 250, 500, 1000] {
    let events = try log(breaks: breaks)
    let ms = try timeReplay(events)
    baseline = baseline ?? ms
    print(
        String(
            format: "  %5d breaks, %5d events: %7.3f ms  (%.2fx the 125-break log)", breaks, events.count, ms,
            ms / baseline!))
}

/// Writes `events` as the log of `channel` with their hash chain, 500 rows a statement, straight into the tables (the
/// events were decided in the past, which `cueline_append` refuses).
func write(
    _ events: [RecordedScheduleEvent], channel: ChannelID, url: String, versions: ClosedRange<Int64>? = nil
) async throws {
    let connection = try await PostgresConnection.connect(url: url)
    defer { connection.close() }
    // Past every position handed out (Migrations/0010: positions come from a sequence), then the sequence moves past these.
    let base = Int64(
        try await connection.query(
            "SELECT greatest(CASE WHEN is_called THEN last_value ELSE 0 END, (SELECT coalesce(max(position), 0) FROM cueline_events)) FROM cueline_positions"
        ).scalar().flatMap { Int64($0) } ?? 0)
    func stored(_ event: RecordedScheduleEvent) -> RecordedEvent {
        let encoded = EventCodec.encode(event.event)
        return RecordedEvent(
            position: base + event.version, channel: channel, version: event.version, type: encoded.type,
            schemaVersion: encoded.schemaVersion, payload: encoded.payload, decidedAt: event.attribution.at,
            actor: event.attribution.actor, source: event.attribution.source,
            commandID: "\(channel)-\(event.version)", reason: nil)
    }
    var previous = HashChain.genesis(channel: channel)
    let versions = versions ?? 1...events.last!.version
    // The chain up to the first version written (written by an earlier call).
    for event in events where event.version < versions.lowerBound {
        previous = HashChain.hash(previous: previous, event: stored(event))
    }
    let events = events.filter { versions.contains($0.version) }
    for chunk in stride(from: 0, to: events.count, by: 500) {
        var query = PostgresQuery(
            sql:
                "INSERT INTO cueline_events (position, channel, version, type, schema_version, payload, decided_at, actor, source, command_id, hash) VALUES "
        )
        for (offset, event) in events[chunk..<min(events.count, chunk + 500)].enumerated() {
            var raw = stored(event)
            raw.hash = HashChain.hash(previous: previous, event: raw)
            previous = raw.hash!
            var row: [String] = []
            row.append(query.bind(raw.position))
            row.append(query.bind(raw.channel))
            row.append(query.bind(raw.version))
            row.append(query.bind(raw.type))
            row.append(query.bind(raw.schemaVersion))
            row.append(query.bind(raw.payload) + "::json")
            row.append(query.bind(raw.decidedAt.iso8601) + "::timestamptz")
            row.append(query.bind(raw.actor))
            row.append(query.bind(raw.source))
            row.append(query.bind(raw.commandID))
            row.append(query.bind(raw.hash))
            query.sql += (offset == 0 ? "" : ", ") + "(" + row.joined(separator: ", ") + ")"
        }
        try await connection.query(query)
    }
    try await connection.query(
        """
        INSERT INTO cueline_streams (channel, version, last_hash) VALUES (\(channel), \(events.last!.version), \(previous)) \
        ON CONFLICT (channel) DO UPDATE SET version = EXCLUDED.version, last_hash = EXCLUDED.last_hash
        """
    )
    try await connection.query("SELECT setval('cueline_positions', \(base + events.last!.version))")
}

func milliseconds(_ body: () async throws -> Void) async rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try await body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6
}

if let url = ProcessInfo.processInfo.environment["DATABASE_URL"], !url.isEmpty {
    let store = PostgresEventStore(pool: PostgresPool(url: url))
    let suffix = Int.random(in: 0..<1_000_000)
    print(
        "replay --at from PostgreSQL, one channel (2 s segments, 3 renditions), random instants, checkpoints every 1,000 events"
    )
    print(
        "| history | events | full log: read + fold + render | from the latest checkpoint: median | worst | checkpointing once |"
    )
    print("|---|---|---|---|---|---|")
    var dayMedian: Double?
    for (name, days) in [("a day", Int64(1)), ("a year", Int64(365))] {
        let channel = ChannelID("replay-bench-\(days)d-\(suffix)")!
        let events = try log(breaks: Int(days) * 100, channel: channel, days: days, tentative: true)
        try await write(events, channel: channel, url: url)
        let span = days * day
        // Baseline: what replay did before checkpoints (whole log read, decoded and folded), 3 instants.
        var full: [Double] = []
        for _ in 0..<3 {
            let at = epoch.adding(milliseconds: Int64.random(in: 60_000..<span))
            full.append(
                try await milliseconds {
                    let loaded = try await Replay.events(channel, from: store)
                    _ = try Replay.playlist(channel, loaded, at: at, rendition: "720p", multivariant: false)
                })
        }
        let checkpointing = try await milliseconds { try await Replay.checkpoint(channel, store: store) }
        var samples: [Double] = []
        for _ in 0..<30 {
            let at = epoch.adding(milliseconds: Int64.random(in: 60_000..<span))
            samples.append(
                try await milliseconds {
                    let served = try await Replay.playlist(
                        channel, store: store, at: at, rendition: "720p", multivariant: false)
                    precondition(served.hasPrefix("#EXTM3U"))
                })
        }
        // Exactness, spot-checked: the same bytes as the full fold at a few of those instants.
        let loaded = try await Replay.events(channel, from: store)
        for _ in 0..<5 {
            let at = epoch.adding(milliseconds: Int64.random(in: 60_000..<span))
            let fast = try await Replay.playlist(channel, store: store, at: at, rendition: "720p", multivariant: false)
            let folded = try Replay.playlist(channel, loaded, at: at, rendition: "720p", multivariant: false)
            precondition(fast == folded, "checkpoint replay differs at \(at)")
        }
        let middle = median(samples)
        dayMedian = dayMedian ?? middle
        print(
            String(
                format: "| %@ | %d | %.1f ms median of 3 | %.1f ms (%.2fx a day's) | %.1f ms of 30 | %.0f ms |",
                name, events.count, median(full), middle, middle / dayMedian!, samples.max()!, checkpointing))
    }
}
