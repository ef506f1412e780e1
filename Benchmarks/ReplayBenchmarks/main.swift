// Replay benchmark: the cost of `replay --at` for a channel log of growing length, against the shortest log
// measured in the same run. A 24-hour channel (2 s segments) with 125, 250, 500 and 1000 breaks (each placed, some
// ended early, some cancelled). Replay folds the events in effect and renders one window: it never re-renders the
// ticks before it, so the cost grows with the number of events, not with the hours of history.
//
// With DATABASE_URL set, it also writes the 500-break log to PostgreSQL and times the full path (read the channel's
// events, fold, render), as `cueline replay` does it.
//
// Usage: swift run -c release cueline-replay-bench
import EventStore
import Foundation
import HLS
import Postgres
import Projector
import Schedule

let epoch = Timestamp(iso8601: "2026-03-01T00:00:00Z")!
let day: Int64 = 86_400_000

func log(breaks: Int, channel: String = "bench") throws -> [RecordedScheduleEvent] {
    var state = ChannelState(channel: channel)
    var events: [RecordedScheduleEvent] = []
    var version: Int64 = 0
    func apply(_ command: ScheduleCommand, at time: Timestamp) throws {
        for event in try decide(command, state: state, now: time) {
            version += 1
            let recorded = RecordedScheduleEvent(event: event, version: version, position: version, attribution: Attribution(at: time, actor: "bench", source: "bench"))
            state = evolve(state, recorded)
            events.append(recorded)
        }
    }
    let config = ChannelConfig(
        id: channel, segmentDurationMilliseconds: 2000, windowSegments: 10, epoch: epoch,
        renditions: ["1080p", "720p", "360p"].map { RenditionConfig(name: $0, bandwidth: 1_000_000, uriTemplate: "\($0)/seg{n}.ts") },
        publicBaseURL: "http://127.0.0.1:8080")
    try apply(.createChannel(config), at: epoch)
    let spacing = day / Int64(breaks)
    for index in 0..<breaks {
        let start = epoch.adding(milliseconds: Int64(index) * spacing + 60_000)
        try apply(.placeBreak(PlaceBreak(id: "b\(index)", start: .at(start), plannedDurationMilliseconds: min(90_000, spacing / 2), asset: .uri("https://ads.example.com/\(index).m3u8"))), at: start.adding(milliseconds: -30_000))
        if index % 3 == 1 { try apply(.cancelCurrentEvent, at: start.adding(milliseconds: 20_500)) }
        if index % 7 == 2 { try apply(.cancelBreak(id: "b\(index)"), at: start.adding(milliseconds: -10_000)) }
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

print("replay --at, 24-hour channel, 2 s segments, 3 renditions (median of 200 random instants, in memory)")
var baseline: Double?
for breaks in [125, 250, 500, 1000] {
    let events = try log(breaks: breaks)
    let ms = try timeReplay(events)
    baseline = baseline ?? ms
    print(String(format: "  %5d breaks, %5d events: %7.3f ms  (%.2fx the 125-break log)", breaks, events.count, ms, ms / baseline!))
}

if let url = ProcessInfo.processInfo.environment["DATABASE_URL"], !url.isEmpty {
    let store = PostgresEventStore(pool: PostgresPool(url: url))
    let channel = "replay-bench-\(Int.random(in: 0..<1_000_000))"
    let events = try log(breaks: 500, channel: channel)
    for (index, event) in events.enumerated() {
        let encoded = EventCodec.encode(event.event)
        _ = try await store.append(AppendRequest(
            channel: channel, expectedVersion: .exactly(Int64(index)),
            events: [NewEvent(type: encoded.type, schemaVersion: encoded.schemaVersion, payload: encoded.payload)],
            command: CommandMetadata(commandID: UUID().uuidString, request: "bench \(index)", actor: "bench", source: "bench", decidedAt: event.attribution.at)))
    }
    var samples: [Double] = []
    for _ in 0..<30 {
        let at = epoch.adding(milliseconds: Int64.random(in: 60_000..<day))
        let start = DispatchTime.now().uptimeNanoseconds
        let loaded = try await Replay.events(channel, from: store)
        _ = try Replay.playlist(channel, loaded, at: at, rendition: "720p", multivariant: false)
        samples.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6)
    }
    print(String(format: "  from PostgreSQL, 500 breaks (%d events): read + fold + render %.1f ms median, %.1f ms worst of 30", events.count, median(samples), samples.max()!))
    print("  channel \(channel) is left in the database for: time cueline replay \(channel) --at 2026-03-01T12:00:00Z")
}
