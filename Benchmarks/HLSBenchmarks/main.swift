// Render benchmark: a 10-segment, 3-rendition live window with 4 date ranges, rendered by `PlaylistRenderer`,
// against a baseline measured in the same run: a naive renderer that builds the same bytes with Foundation's
// `String(format:)` and `ISO8601DateFormatter`, the way a first version usually does.
//
// Then one media playlist (10 and 100 segments, 4 date ranges) against copying its bytes line by line (issue 12's
// acceptance: at most 4x the copy, at most 10 allocations): see `measureRenderAgainstCopy`.
//
// Usage: swift run -c release cueline-bench [--seconds N]
import Foundation
import HLS
import Schedule

let epoch = Timestamp(iso8601: "2026-03-01T12:00:00Z")!
let interstitial = DateRange.interstitialClass

func dateRanges() -> [DateRange] {
    let start1 = epoch.adding(milliseconds: 103 * 6000)
    let start2 = epoch.adding(milliseconds: 112 * 6000)
    return [
        DateRange(
            id: "brk-1", classAttribute: interstitial, startDate: start1,
            plannedDuration: DecimalNumber(milliseconds: 30_000),
            assetURI: "https://ads.example.com/pods/brk-1/master.m3u8?_HLS_interstitial_id=brk-1", snap: [.out, .in],
            restrict: [.skip, .jump]),
        DateRange(
            id: "brk-1", classAttribute: interstitial, startDate: start1, duration: DecimalNumber(milliseconds: 12_000),
            playoutLimit: DecimalNumber(milliseconds: 12_000)),
        DateRange(
            id: "brk-2", classAttribute: interstitial, startDate: start2,
            plannedDuration: DecimalNumber(milliseconds: 60_000),
            assetList: "https://cueline.example.com/channels/demo/breaks/brk-2/assets.json?_HLS_interstitial_id=brk-2"),
        DateRange(
            id: "promo-7", classAttribute: "com.example.promo", startDate: start2.adding(milliseconds: 30_000),
            duration: DecimalNumber(milliseconds: 10_000),
            clientAttributes: [ClientAttribute(name: "X-COM-EXAMPLE-ID", value: .string("promo-7"))]),
    ]
}

func playlist(rendition: String, segments count: Int = 10) -> MediaPlaylist {
    let ranges = dateRanges()
    let segments = (100..<(100 + count)).map { n -> Segment in
        var tags: [SegmentTag] = [.programDateTime(epoch.adding(milliseconds: Int64(n) * 6000))]
        if n == 103 { tags += ranges[0...1].map { .dateRange($0) } }
        return Segment(duration: DecimalNumber(milliseconds: 6000), uri: "\(rendition)/seg\(n).ts", tags: tags)
    }
    return MediaPlaylist(
        version: 3, targetDuration: 6, mediaSequence: 100, segments: segments,
        trailingTags: ranges[2...3].map { .dateRange($0) })
}

/// The baseline: same bytes, built the naive way.
func naiveRender(_ p: MediaPlaylist) -> String {
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    formatter.timeZone = TimeZone(identifier: "UTC")
    func date(_ t: Timestamp) -> String {
        formatter.string(from: Date(timeIntervalSince1970: Double(t.milliseconds) / 1000))
    }
    func seconds(_ d: DecimalNumber) -> String { String(format: "%.3f", Double(d.milliseconds) / 1000) }
    func range(_ r: DateRange) -> String {
        var attrs: [String] = ["ID=\"\(r.id)\""]
        if let c = r.classAttribute { attrs.append("CLASS=\"\(c)\"") }
        if let s = r.startDate { attrs.append("START-DATE=\"\(date(s))\"") }
        if let d = r.duration { attrs.append("DURATION=\(seconds(d))") }
        if let d = r.plannedDuration { attrs.append("PLANNED-DURATION=\(seconds(d))") }
        if let u = r.assetURI { attrs.append("X-ASSET-URI=\"\(u)\"") }
        if let u = r.assetList { attrs.append("X-ASSET-LIST=\"\(u)\"") }
        if let l = r.playoutLimit { attrs.append("X-PLAYOUT-LIMIT=\(seconds(l))") }
        if let s = r.snap { attrs.append("X-SNAP=\"\(s.map(\.rawValue).joined(separator: ","))\"") }
        if let s = r.restrict { attrs.append("X-RESTRICT=\"\(s.map(\.rawValue).joined(separator: ","))\"") }
        for a in r.clientAttributes { if case .string(let v) = a.value { attrs.append("\(a.name)=\"\(v)\"") } }
        return "#EXT-X-DATERANGE:" + attrs.joined(separator: ",") + "\n"
    }
    var out =
        "#EXTM3U\n#EXT-X-VERSION:\(p.version!)\n#EXT-X-TARGETDURATION:\(p.targetDuration)\n#EXT-X-MEDIA-SEQUENCE:\(p.mediaSequence)\n"
    for s in p.segments {
        for t in s.tags {
            switch t {
            case .programDateTime(let d): out += "#EXT-X-PROGRAM-DATE-TIME:\(date(d))\n"
            case .dateRange(let r): out += range(r)
            default: break
            }
        }
        out += "#EXTINF:\(seconds(s.duration)),\n\(s.uri)\n"
    }
    for case .dateRange(let r) in p.trailingTags { out += range(r) }
    return out
}

func measure(seconds: Double, _ body: () -> Int) -> (perSecond: Double, checksum: Int) {
    var count = 0
    var checksum = 0
    let start = DispatchTime.now().uptimeNanoseconds
    var elapsed: Double = 0
    while elapsed < seconds {
        for _ in 0..<100 { checksum &+= body() }
        count += 100
        elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    }
    return (Double(count) / elapsed, checksum)
}

var seconds = 3.0
if let index = CommandLine.arguments.firstIndex(of: "--seconds"), index + 1 < CommandLine.arguments.count {
    seconds = Double(CommandLine.arguments[index + 1]) ?? seconds
}
// `--profile N`: only render the 10-segment playlist for N seconds (to run under `perf record`).
if let index = CommandLine.arguments.firstIndex(of: "--profile"), index + 1 < CommandLine.arguments.count {
    let one = playlist(rendition: "720p", segments: Int(ProcessInfo.processInfo.environment["SEGMENTS"] ?? "") ?? 10)
    let rate = measure(seconds: Double(CommandLine.arguments[index + 1]) ?? 5) {
        (try! PlaylistRenderer.renderBytes(one)).count
    }
    print(String(format: "%.0f ns per render", 1e9 / rate.perSecond))
    exit(0)
}
let renditions = ["1080p", "720p", "360p"].map { playlist(rendition: $0) }
for p in renditions {
    let ours = try! PlaylistRenderer.render(p)
    precondition(ours == naiveRender(p), "the baseline must produce the same bytes:\n\(ours)\n---\n\(naiveRender(p))")
}
// One "render" = all three renditions of the channel at one tick.
let baseline = measure(seconds: seconds) { renditions.reduce(0) { $0 &+ naiveRender($1).utf8.count } }
let cueline = measure(seconds: seconds) { renditions.reduce(0) { $0 &+ (try! PlaylistRenderer.render($1)).utf8.count } }
let bytes = renditions.reduce(0) { $0 + (try! PlaylistRenderer.render($1)).utf8.count }
print("render: 10 segments x 3 renditions, 4 date ranges (\(bytes) bytes per tick)")
print(String(format: "  baseline (Foundation formatters): %10.0f ticks/s", baseline.perSecond))
print(String(format: "  PlaylistRenderer:                 %10.0f ticks/s", cueline.perSecond))
print(String(format: "  ratio: %.2fx the baseline", cueline.perSecond / baseline.perSecond))

// MARK: - One media playlist against copying its bytes (issue 12)

/// Nanoseconds per call of `body`, timed over batches for `seconds`.
func nanoseconds(seconds: Double, _ body: () -> Int) -> Double {
    let (perSecond, checksum) = measure(seconds: seconds, body)
    precondition(checksum != 0)
    return 1e9 / perSecond
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.count % 2 == 1
        ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

/// Renders `playlist` and copies its bytes line by line (the baseline: the least any renderer must do), in alternating
/// rounds so that both see the same machine load; prints the medians, the median of the per-round ratios and the
/// allocations per call.
func measureRenderAgainstCopy(_ name: String, _ playlist: MediaPlaylist, seconds: Double) {
    let text = try! PlaylistRenderer.render(playlist)
    let total = text.utf8.count
    let lines = text.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map { String($0) + "\n" }
    let lineBytes = lines.map { Array($0.utf8) }
    precondition(lines.joined() == text && lineBytes.joined().elementsEqual(text.utf8))

    // Same output types as the renderer's two entry points: a String, and one [UInt8].
    let copyString = { () -> Int in
        var out = ""
        out.reserveCapacity(total)
        for line in lines { out += line }
        return out.utf8.count
    }
    let copyBytes = { () -> Int in
        var out: [UInt8] = []
        out.reserveCapacity(total)
        for line in lineBytes { out.append(contentsOf: line) }
        return out.count
    }
    let renderString = { () -> Int in (try! PlaylistRenderer.render(playlist)).utf8.count }
    let renderBytes = { () -> Int in (try! PlaylistRenderer.renderBytes(playlist)).count }

    let rounds = 7
    let slice = seconds / Double(rounds * 4)
    var samples: [[Double]] = Array(repeating: [], count: 4)
    for _ in 0..<rounds {
        for (index, body) in [copyString, renderString, copyBytes, renderBytes].enumerated() {
            samples[index].append(nanoseconds(seconds: slice, body))
        }
    }
    let stringRatio = median(zip(samples[1], samples[0]).map { $0 / $1 })
    let bytesRatio = median(zip(samples[3], samples[2]).map { $0 / $1 })
    func count(_ body: () -> Int) -> String {
        allocations(iterations: 1000, body).map { String(format: "%.1f", $0) } ?? "n/a"
    }
    print("  \(name) (\(total) bytes)")
    print(
        String(
            format: "    String:  copy %7.0f ns   render %7.0f ns   ratio %5.2f   allocations: copy %@, render %@",
            median(samples[0]), median(samples[1]), stringRatio, count(copyString), count(renderString)))
    print(
        String(
            format: "    [UInt8]: copy %7.0f ns   render %7.0f ns   ratio %5.2f   allocations: copy %@, render %@",
            median(samples[2]), median(samples[3]), bytesRatio, count(copyBytes), count(renderBytes)))
}

print(
    "render: one media playlist vs copying its bytes line by line (medians of 7 alternating rounds; ratio = median of per-round ratios)"
)
measureRenderAgainstCopy("10 segments, 4 date ranges", playlist(rendition: "720p"), seconds: seconds)
measureRenderAgainstCopy("100 segments, 4 date ranges", playlist(rendition: "720p", segments: 100), seconds: seconds)

// MARK: - Builder + renderer per tick (what a follower does per rendition and tick)

/// A 6 s-segment channel at a tick with two breaks in its window (one ended early by a playout limit) and two ahead
/// within the horizon: `PlaylistBuilder.mediaPlaylist` + `renderBytes`, against copying the bytes it produces. The
/// breaks' tags are kept between ticks (`PlaylistBuilder.keptTagsShards`), as they are for a follower rendering tick after tick.
func builderChannel() throws -> (ChannelConfig, ChannelState) {
    let config = ChannelConfig(
        id: "bench", segmentDurationMilliseconds: 6000, windowSegments: 10, epoch: epoch,
        renditions: [RenditionConfig(name: "720p", bandwidth: 1_000_000, uriTemplate: "720p/seg{n}.ts")],
        publicBaseURL: "https://cueline.example.com", horizonMilliseconds: 120_000)
    var state = ChannelState(channel: "bench", retention: .window)
    var version: Int64 = 0
    func apply(_ command: ScheduleCommand, at time: Timestamp) throws {
        for event in try decide(command, state: state, now: time) {
            version += 1
            state.apply(
                RecordedScheduleEvent(
                    event: event, version: version, position: version,
                    attribution: Attribution(at: time, actor: "bench", source: "bench")))
        }
    }
    try apply(.createChannel(config), at: epoch)
    let starts: [Int64] = [103, 106, 112, 116]
    for (index, segment) in starts.enumerated() {
        let start = epoch.adding(milliseconds: segment * 6000)
        let asset: BreakAsset =
            index == 2
            ? .list("https://ads.example.com/pods/\(index).json") : .uri("https://ads.example.com/\(index)/master.m3u8")
        try apply(
            .placeBreak(
                PlaceBreak(
                    id: BreakID("brk-\(index)")!, start: .at(start), plannedDurationMilliseconds: 12_000, asset: asset)),
            at: start.adding(milliseconds: -60_000))
    }
    try apply(
        .setPlayoutLimit(id: "brk-0", limitMilliseconds: 8_000), at: epoch.adding(milliseconds: 103 * 6000 + 7_000))
    return (config, state)
}

func measureBuilderAgainstCopy(seconds: Double) throws {
    let (config, state) = try builderChannel()
    let tick = epoch.adding(milliseconds: 110 * 6000)
    let rendition = config.renditions[0]
    let build = { () -> [UInt8] in
        try! PlaylistRenderer.renderBytes(
            PlaylistBuilder.mediaPlaylist(config: config, state: state, rendition: rendition, at: tick)!)
    }
    let bytes = build()
    let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        .dropLast().map { Array(($0 + "\n").utf8) }
    precondition(lines.joined().elementsEqual(bytes))
    let ranges = String(decoding: bytes, as: UTF8.self).components(separatedBy: "#EXT-X-DATERANGE").count - 1
    precondition(ranges >= 4)
    let copy = { () -> Int in
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        for line in lines { out.append(contentsOf: line) }
        return out.count
    }
    let builderAndRender = { () -> Int in build().count }
    let rounds = 7
    var samples: [[Double]] = [[], []]
    for _ in 0..<rounds {
        samples[0].append(nanoseconds(seconds: seconds / Double(rounds * 2), copy))
        samples[1].append(nanoseconds(seconds: seconds / Double(rounds * 2), builderAndRender))
    }
    let ratio = median(zip(samples[1], samples[0]).map { $0 / $1 })
    let count = allocations(iterations: 1000, builderAndRender).map { String(format: "%.1f", $0) } ?? "n/a"
    print(
        "builder + renderer: one media playlist per tick, 10 segments, \(ranges) date ranges of 4 breaks (\(bytes.count) bytes)"
    )
    print(
        String(
            format:
                "    [UInt8]: copy %7.0f ns   builder + render %7.0f ns   ratio %5.2f   allocations: build + render %@",
            median(samples[0]), median(samples[1]), ratio, count))
}
try measureBuilderAgainstCopy(seconds: seconds)
