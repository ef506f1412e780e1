// Render benchmark: a 10-segment, 3-rendition live window with 4 date ranges, rendered by `PlaylistRenderer`,
// against a baseline measured in the same run: a naive renderer that builds the same bytes with Foundation's
// `String(format:)` and `ISO8601DateFormatter`, the way a first version usually does.
//
// Usage: swift run -c release cueline-bench [--seconds N]
import Foundation
import HLS

let epoch = Timestamp(iso8601: "2026-03-01T12:00:00Z")!
let interstitial = DateRange.interstitialClass

func dateRanges() -> [DateRange] {
    let start1 = epoch.adding(milliseconds: 103 * 6000)
    let start2 = epoch.adding(milliseconds: 112 * 6000)
    return [
        DateRange(id: "brk-1", classAttribute: interstitial, startDate: start1, plannedDuration: DecimalNumber(milliseconds: 30_000),
                  assetURI: "https://ads.example.com/pods/brk-1/master.m3u8?_HLS_interstitial_id=brk-1", snap: [.out, .in], restrict: [.skip, .jump]),
        DateRange(id: "brk-1", classAttribute: interstitial, startDate: start1, duration: DecimalNumber(milliseconds: 12_000),
                  playoutLimit: DecimalNumber(milliseconds: 12_000)),
        DateRange(id: "brk-2", classAttribute: interstitial, startDate: start2, plannedDuration: DecimalNumber(milliseconds: 60_000),
                  assetList: "https://cueline.example.com/channels/demo/breaks/brk-2/assets.json?_HLS_interstitial_id=brk-2"),
        DateRange(id: "promo-7", classAttribute: "com.example.promo", startDate: start2.adding(milliseconds: 30_000),
                  duration: DecimalNumber(milliseconds: 10_000), clientAttributes: [ClientAttribute(name: "X-COM-EXAMPLE-ID", value: .string("promo-7"))]),
    ]
}

func playlist(rendition: String) -> MediaPlaylist {
    let ranges = dateRanges()
    let segments = (100..<110).map { n -> Segment in
        var tags: [SegmentTag] = [.programDateTime(epoch.adding(milliseconds: Int64(n) * 6000))]
        if n == 103 { tags += ranges[0...1].map { .dateRange($0) } }
        return Segment(duration: DecimalNumber(milliseconds: 6000), uri: "\(rendition)/seg\(n).ts", tags: tags)
    }
    return MediaPlaylist(version: 3, targetDuration: 6, mediaSequence: 100, segments: segments,
                         trailingTags: ranges[2...3].map { .dateRange($0) })
}

/// The baseline: same bytes, built the naive way.
func naiveRender(_ p: MediaPlaylist) -> String {
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    formatter.timeZone = TimeZone(identifier: "UTC")
    func date(_ t: Timestamp) -> String { formatter.string(from: Date(timeIntervalSince1970: Double(t.milliseconds) / 1000)) }
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
    var out = "#EXTM3U\n#EXT-X-VERSION:\(p.version!)\n#EXT-X-TARGETDURATION:\(p.targetDuration)\n#EXT-X-MEDIA-SEQUENCE:\(p.mediaSequence)\n"
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
let renditions = ["1080p", "720p", "360p"].map(playlist(rendition:))
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
