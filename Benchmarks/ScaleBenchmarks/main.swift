// How many channels one instance keeps on time: N clock channels x 3 renditions, 6 s segments, epochs spread over
// a segment (as channels created at different times are), the follower's ticker rendering every channel at every
// boundary. Lateness is what the ticker records (cueline_tick_lateness_seconds: when each window became servable, its
// bytes rendered and the serving time at its boundary), and, from outside, what probe clients see: 20 channels polled
// every 0.5 ms around each of their boundaries, the first answer holding the new window minus the boundary. The
// baseline is the same run with 100 channels. In memory, the store's watermark is not a clock: the serving time is the
// wall clock (with PostgreSQL it also waits for the watermark, polled every 20 ms). With `phases` P > 0 every epoch falls on one of P instants of the segment (1: all boundaries
// aligned), and 200 in-process clients poll media playlists (servedMedia, the public GET's path) meanwhile.
// Usage: cueline-scale-bench [channels] [seconds] [phases]
import EventStore
import Foundation
import HLS
import Metrics
import Projector
import Schedule
import Synchronization

final class LatenessCapture: MetricsFactory, @unchecked Sendable {
    let samples = Mutex<[Int64]>([])

    final class Handler: TimerHandler, CounterHandler, RecorderHandler, FloatingPointCounterHandler, @unchecked Sendable
    {
        let capture: LatenessCapture?
        init(_ capture: LatenessCapture?) { self.capture = capture }
        func recordNanoseconds(_ duration: Int64) { capture?.samples.withLock { $0.append(duration) } }
        func increment(by: Int64) {}
        func increment(by: Double) {}
        func reset() {}
        func record(_ value: Int64) {}
        func record(_ value: Double) {}
    }

    func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler { Handler(nil) }
    func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler {
        Handler(nil)
    }
    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        Handler(nil)
    }
    func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        Handler(label == "cueline_tick_lateness_seconds" ? self : nil)
    }
    func destroyCounter(_ handler: any CounterHandler) {}
    func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) {}
    func destroyRecorder(_ handler: any RecorderHandler) {}
    func destroyTimer(_ handler: any TimerHandler) {}
}

final class PollCount: Sendable { let value = Mutex(0) }

/// What the probe clients saw (ms after each boundary), recorded once measuring starts.
final class ProbeRecord: Sendable {
    let samples = Mutex<[Double]>([])
    let measuring = Mutex(false)
}

func wallClock() -> Timestamp {
    Timestamp(milliseconds: Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)))
}

func residentMiB() -> Double {
    let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
    let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
    return (Double(line.split(separator: " ").dropFirst().first ?? "0") ?? 0) / 1024
}

struct Result {
    var channels: Int
    var ticks: Int
    var p50: Double
    var p99: Double
    var worst: Double
    var late: Int
    var memory: Double
    var probes: [Double]
}

func run(channels count: Int, seconds: Int, phases: Int, capture: LatenessCapture) async throws -> Result {
    let memoryBefore = residentMiB()
    let store = InMemoryEventStore()
    let handler = CommandHandler(store: store, clock: wallClock)
    let segment: Int64 = 6000
    let start = wallClock().adding(milliseconds: -60_000)
    for index in 0..<count {
        let id = ChannelID("ch\(index)")!
        let config = ChannelConfig(
            id: id, segmentDurationMilliseconds: segment, windowSegments: 10,
            epoch: start.adding(
                milliseconds: phases > 0
                    ? Int64(index % phases) * segment / Int64(phases) : Int64(index) * segment / Int64(count)),
            renditions: ["1080p", "720p", "360p"].map {
                RenditionConfig(
                    name: $0, bandwidth: 1_000_000, uriTemplate: "https://cdn.example/\(id)/\($0)/seg{n}.ts")
            },
            source: .clock, publicBaseURL: "https://cueline.example")
        _ = try await handler.handle(
            .createChannel(config), channel: id,
            context: CommandContext(commandID: "c\(index)", actor: "bench", source: "bench"))
        // Every channel carries a break in its window, so each render has interstitial tags to write.
        _ = try await handler.handle(
            .placeBreak(
                PlaceBreak(
                    id: "brk", start: .inMilliseconds(20_000 + Int64(index % 30) * 1000),
                    plannedDurationMilliseconds: 30_000, asset: .uri("https://ads.example/a.m3u8"))),
            channel: id, context: CommandContext(commandID: "b\(index)", actor: "bench", source: "bench"))
    }
    let follower = ChannelFollower(store: store, wakeups: { AsyncStream { _ in } }, clock: wallClock)
    try await follower.catchUp()
    let ticker = Task { try await follower.tickAtSegmentBoundaries() }
    let polls = PollCount()
    let pollers =
        phases == 0
        ? nil
        : Task {
            await withTaskGroup(of: Void.self) { group in
                for client in 0..<200 {
                    group.addTask {
                        var n = client
                        while !Task.isCancelled {
                            n = (n &* 1_103_515_245 &+ 12345) & 0x7fff_ffff
                            _ = try? follower.servedMedia(ChannelID("ch\(n % count)")!, rendition: "720p")
                            polls.value.withLock { $0 += 1 }
                            try? await Task.sleep(for: .milliseconds(10))
                        }
                    }
                }
            }
        }
    // Probes: the first answer holding each new window, minus its boundary (ms), measured by a client.
    let record = ProbeRecord()
    let probes =
        phases == 0
        ? nil
        : Task {
            await withTaskGroup(of: Void.self) { group in
                for index in 0..<min(20, count) {
                    group.addTask {
                        let epoch = start.adding(milliseconds: Int64(index % phases) * segment / Int64(phases))
                        while !Task.isCancelled {
                            let now = wallClock()
                            let boundary = epoch.adding(
                                milliseconds: (now.milliseconds(since: epoch) / segment + 1) * segment)
                            try? await Task.sleep(for: .milliseconds(max(0, boundary.milliseconds(since: now) - 3)))
                            while !Task.isCancelled {
                                if let served = try? follower.servedMedia(ChannelID("ch\(index)")!, rendition: "720p"),
                                    served.tick >= boundary
                                {
                                    let seen = Date().timeIntervalSince1970 * 1000 - Double(boundary.milliseconds)
                                    if record.measuring.withLock({ $0 }) {
                                        record.samples.withLock { $0.append(max(0, seen)) }
                                    }
                                    break
                                }
                                try? await Task.sleep(for: .microseconds(500))
                            }
                        }
                    }
                }
            }
        }
    try await Task.sleep(for: .seconds(7))  // one segment of warm-up: every channel rendered once
    record.measuring.withLock { $0 = true }
    capture.samples.withLock { $0.removeAll() }
    try await Task.sleep(for: .seconds(seconds))
    let samples = capture.samples.withLock { $0 }.sorted()
    let memory = residentMiB() - memoryBefore
    ticker.cancel()
    _ = await ticker.result
    pollers?.cancel()
    _ = await pollers?.value
    probes?.cancel()
    _ = await probes?.value
    if phases > 0 {
        print("  (\(count) channels: \(polls.value.withLock { $0 } / (seconds + 7)) polls/s by 200 clients)")
    }
    func ms(_ p: Double) -> Double {
        samples.isEmpty ? 0 : Double(samples[min(samples.count - 1, Int(Double(samples.count) * p))]) / 1e6
    }
    return Result(
        channels: count, ticks: samples.count, p50: ms(0.5), p99: ms(0.99), worst: ms(1.0),
        late: samples.filter { $0 > 50_000_000 }.count, memory: memory, probes: record.samples.withLock { $0 }.sorted())
}

let arguments = CommandLine.arguments.dropFirst().compactMap { Int($0) }
let channels = arguments.first ?? 10_000
let seconds = arguments.dropFirst().first ?? 30
let phases = arguments.dropFirst(2).first ?? 0
let capture = LatenessCapture()
MetricsSystem.bootstrap(capture)
print(
    "scale: \(ProcessInfo.processInfo.activeProcessorCount) cores, 6 s segments, 3 renditions, a break in every window, \(seconds) s measured after 7 s of warm-up, \(phases == 0 ? "epochs spread over the segment" : phases == 1 ? "all boundaries aligned, 200 clients polling" : "epochs on \(phases) phases, 200 clients polling")"
)
print(
    "| channels | ticks rendered | p50 lateness | p99 lateness | worst | ticks later than 50 ms | resident memory added | probes: windows seen | probes p50 | probes p99 | probes worst |"
)
print("|---|---|---|---|---|---|---|---|---|---|---|")
for count in [100, channels] {
    let result = try await run(channels: count, seconds: seconds, phases: phases, capture: capture)
    let probes = result.probes
    func probe(_ p: Double) -> String {
        probes.isEmpty ? "-" : String(format: "%.1f ms", probes[min(probes.count - 1, Int(Double(probes.count) * p))])
    }
    print(
        String(
            format: "| %d | %d | %.1f ms | %.1f ms | %.1f ms | %d (%.2f%%) | %.0f MiB ", result.channels, result.ticks,
            result.p50, result.p99, result.worst, result.late,
            result.ticks == 0 ? 0 : Double(result.late) * 100 / Double(result.ticks), result.memory)
            + "| \(probes.count) | \(probe(0.5)) | \(probe(0.99)) | \(probe(1.0)) |")
}
