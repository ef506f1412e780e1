// Retention benchmark (issue 12): what a channel's history costs the hot state, each figure against its baseline
// measured in the same run.
//   tick   : one tick (settle + build + render every rendition and the multivariant, as the follower does it) of a
//            channel with 5,000 past and 5,000 future breaks (the next one beyond the horizon) vs an empty channel;
//            the playlist bytes of both.
//   memory : heap bytes held by the folded state (the follower's `Entry.state`, hot form) after 100,000 events on
//            one channel vs after 100 (glibc's heap bytes in use, from malloc_stats), and the full form for contrast.
//
// Usage: swift run -c release cueline-retention-bench
import Foundation
import Glibc
import HLS
import Projector
import Schedule

let epoch = Timestamp(iso8601: "2026-03-01T00:00:00Z")!
let config = ChannelConfig(
    id: "bench", segmentDurationMilliseconds: 6000, windowSegments: 10, epoch: epoch,
    renditions: ["720p", "480p", "360p"].enumerated().map { index, name in
        RenditionConfig(
            name: name, bandwidth: 3_000_000 / (index + 1), codecs: ["avc1.64001f", "mp4a.40.2"],
            uriTemplate: "\(name)/seg{n}.ts")
    },
    publicBaseURL: "http://127.0.0.1:8080", horizonMilliseconds: 120_000)

func recorded(_ event: ScheduleEvent, version: Int64, at time: Timestamp) -> RecordedScheduleEvent {
    RecordedScheduleEvent(
        event: event, version: version, position: version,
        attribution: Attribution(at: time, actor: "bench", source: "bench"))
}

func placed(_ n: Int, start: Timestamp, seconds: Int64 = 30) -> ScheduleEvent {
    .breakPlaced(
        BreakSpec(
            id: BreakID("brk-\(n)")!, start: start, plannedDurationMilliseconds: seconds * 1000,
            asset: .uri("https://ads.example.com/pods/\(n)/master.m3u8"),
            options: InterstitialOptions(restrict: [.skip, .jump], snap: [.out, .in], cue: [.once])))
}

/// A channel at `now` with `past` aired breaks (one every 2 minutes, each placed a minute ahead) and `future` ones
/// (placed at `now`, one every 2 minutes from an hour ahead: beyond the 120 s horizon during the measured ticks).
func channel(past: Int, future: Int, now: Timestamp, retention: ChannelState.Retention) -> ChannelState {
    var state = ChannelState(channel: "bench", retention: retention)
    var version: Int64 = 1
    state.apply(recorded(.channelCreated(config), version: 1, at: epoch))
    for n in 0..<past {
        let start = now.adding(milliseconds: -Int64(past - n) * 120_000 - 3_600_000)
        version += 1
        state.apply(recorded(placed(n, start: start), version: version, at: start.adding(milliseconds: -60_000)))
    }
    for n in 0..<future {
        version += 1
        state.apply(
            recorded(
                placed(past + n, start: now.adding(milliseconds: 3_600_000 + Int64(n) * 120_000)), version: version,
                at: now))
    }
    return state
}

func nanos(_ body: () throws -> Void) rethrows -> UInt64 {
    let start = DispatchTime.now().uptimeNanoseconds
    try body()
    return DispatchTime.now().uptimeNanoseconds - start
}

/// Median of 7 runs of `ticks` ticks, in microseconds per tick, and the bytes of the last media playlists.
func tickCost(_ state: ChannelState, from now: Timestamp, ticks: Int = 2000) throws -> (
    microseconds: Double, bytes: Int
) {
    var bytes = 0
    var runs: [Double] = []
    for _ in 0..<7 {
        let elapsed = try nanos {
            for i in 0..<ticks {
                let tick = now.adding(milliseconds: Int64(i % 20) * 6000)
                // Settle: the follower copies the settled state when nothing is pending.
                let settled = state
                let rendered = try ChannelFollower.render(config: config, state: settled, tick: tick)
                bytes = rendered.playlists.values.reduce(0) { $0 + $1.utf8.count }
            }
        }
        runs.append(Double(elapsed) / Double(ticks) / 1000)
    }
    return (runs.sorted()[3], bytes)
}

@_silgen_name("malloc_stats") private func mallocStats()

/// glibc's heap bytes in use (every arena and mmapped chunks): `malloc_stats` prints them on stderr, read back from a
/// file (`mallinfo2` is not in the Glibc module).
func heapInUse() -> Int {
    let path = "/tmp/cueline-retention-bench.\(getpid())"
    fflush(nil)
    let saved = dup(2)
    let file = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0o600)
    dup2(file, 2)
    mallocStats()
    fflush(nil)
    dup2(saved, 2)
    close(file)
    close(saved)
    let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
    unlink(path)
    // The last "in use bytes" line is the total.
    let line = text.split(separator: "\n").last { $0.contains("in use bytes") } ?? ""
    return Int(line.split(separator: "=").last?.trimmingCharacters(in: .whitespaces) ?? "") ?? 0
}

/// Heap bytes held by a state folded from `events` events: breaks placed a minute apart (30 s each, decided 30 s
/// ahead), the state kept, the events generated one at a time and not kept.
func memory(events: Int, retention: ChannelState.Retention) -> (bytes: Int, breaks: Int) {
    let before = heapInUse()
    var state = ChannelState(channel: "bench", retention: retention)
    state.apply(recorded(.channelCreated(config), version: 1, at: epoch))
    for n in 1..<events {
        let start = epoch.adding(milliseconds: 600_000 + Int64(n) * 60_000)
        state.apply(recorded(placed(n, start: start), version: Int64(n + 1), at: start.adding(milliseconds: -30_000)))
    }
    let held = heapInUse() - before
    return withExtendedLifetime(state) { (held, state.breaks.count) }
}

let now = epoch.adding(milliseconds: 400 * 86_400_000)
func ratio(_ a: Double, _ b: Double) -> String { String(format: "%.3f", a / b) }

print(
    "load: \(String(decoding: try! Data(contentsOf: URL(fileURLWithPath: "/proc/loadavg")), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) (1, 5, 15 min), \(ProcessInfo.processInfo.activeProcessorCount) cores"
)
print("| tick (3 renditions + multivariant) | µs/tick | ratio | media playlist bytes (3) | ratio | breaks held |")
print("|---|---|---|---|---|---|")
let empty = channel(past: 0, future: 0, now: now, retention: .window)
let base = try tickCost(empty, from: now)
print("| empty channel (baseline) | \(String(format: "%.1f", base.microseconds)) | 1.000 | \(base.bytes) | 1.000 | 0 |")
for retention in [ChannelState.Retention.window, .all] {
    let state = channel(past: 5000, future: 5000, now: now, retention: retention)
    let cost = try tickCost(state, from: now)
    print(
        "| 5,000 past + 5,000 future breaks, \(retention == .window ? "hot state (follower, replay)" : "full state (as-run)") | \(String(format: "%.1f", cost.microseconds)) | \(ratio(cost.microseconds, base.microseconds)) | \(cost.bytes) | \(ratio(Double(cost.bytes), Double(base.bytes))) | \(state.breaks.count) |"
    )
}
print()
print("| folded state memory | heap bytes held | ratio | breaks held |")
print("|---|---|---|---|")
_ = memory(events: 1000, retention: .window)  // warm up the allocator
for retention in [ChannelState.Retention.window, .all] {
    let small = memory(events: 100, retention: retention)
    let large = memory(events: 100_000, retention: retention)
    let name = retention == .window ? "hot" : "full"
    print("| \(name), 100 events (baseline) | \(small.bytes) | 1.000 | \(small.breaks) |")
    print(
        "| \(name), 100,000 events | \(large.bytes) | \(ratio(Double(large.bytes), Double(small.bytes))) | \(large.breaks) |"
    )
}
