import Foundation
import Schedule
import Testing

@testable import Ads

@Suite("The decided asset list: fitted to the break, skip control and tracking in the shapes players read")
struct AdAssetListTests {
    func ad(_ id: String, _ seconds: Int64?, skip: SkipOffset? = nil) -> DecidedAd {
        DecidedAd(
            adID: id, uri: "https://cdn.example.com/\(id).m3u8", durationMilliseconds: seconds.map { $0 * 1000 },
            skipOffset: skip, impressions: ["https://t.example.com/imp?ad=\(id)"],
            tracking: [
                TrackingEvent(event: "start", url: "https://t.example.com/start?ad=\(id)"),
                TrackingEvent(event: "complete", url: "https://t.example.com/complete?ad=\(id)"),
                TrackingEvent(event: "progress", url: "https://t.example.com/p5?ad=\(id)", offset: .milliseconds(5000)),
                TrackingEvent(event: "start", url: "https://t.example.com/start?ad=\(id)"),
            ])
    }

    @Test("what overflows is dropped and said; a later shorter ad still fits; an ad without a duration is dropped")
    func fit() {
        let (fitted, notes) = AdAssetList.fit(
            [ad("a", 15), ad("b", 20), ad("c", nil), ad("d", 10), ad("e", 6)], breakMilliseconds: 30_000)
        #expect(fitted.map(\.ad.adID) == ["a", "d"])
        #expect(fitted.map(\.durationMilliseconds) == [15_000, 10_000])
        #expect(notes.count == 3)
        #expect(notes[0].contains("\"b\" (20.000 s) does not fit in the 15.000 s left of the 30.000 s break"))
        #expect(notes[1].contains("\"c\" has no duration"))
        #expect(notes[2].contains("\"e\" (6.000 s) does not fit"))
    }

    @Test("the media's own length wins when it differs by more than half a second; within it, the longer of the two")
    func measured() {
        let lengths = ["https://cdn.example.com/a.m3u8": Int64(14_000), "https://cdn.example.com/b.m3u8": 10_300]
        let (fitted, notes) = AdAssetList.fit(
            [ad("a", 15), ad("b", 10), ad("c", nil)], breakMilliseconds: 60_000,
            measured: { lengths[$0] ?? ($0.hasSuffix("c.m3u8") ? 7_000 : nil) })
        #expect(fitted.map(\.durationMilliseconds) == [14_000, 10_300, 7_000])
        #expect(notes == ["ad \"a\": VAST says 15.000 s, its media is 14.000 s: listed at the media's length"])
    }

    @Test("the JSON: assets in order with numeric durations, SKIP-CONTROL, SVTA tracking with quartile offsets")
    func json() throws {
        let fitted = [
            AdAssetList.Fitted(ad: ad("a", 20, skip: .milliseconds(4200)), durationMilliseconds: 20_000),
            AdAssetList.Fitted(ad: ad("b", 10), durationMilliseconds: 10_000),
        ]
        // A skippable first ad does not make the second advertiser's ad skippable: no derived SKIP-CONTROL for a pod.
        #expect(AdAssetList.skipControl(fitted, breakSkip: nil) == nil)
        let skip = AdAssetList.skipControl(Array(fitted.prefix(1)), breakSkip: nil)
        #expect(skip == SkipControl(offsetMilliseconds: 5000, durationMilliseconds: 15_000))
        let text = AdAssetList.json(fitted, skip: skip, tracking: true)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        let assets = try #require(object["ASSETS"] as? [[String: Any]])
        #expect(
            assets.map { $0["URI"] as? String } == ["https://cdn.example.com/a.m3u8", "https://cdn.example.com/b.m3u8"])
        #expect(assets.map { ($0["DURATION"] as? NSNumber)?.doubleValue } == [20, 10])
        let skipControl = try #require(object["SKIP-CONTROL"] as? [String: Any])
        #expect((skipControl["OFFSET"] as? NSNumber)?.intValue == 5)
        #expect((skipControl["DURATION"] as? NSNumber)?.intValue == 15)
        let signalling = try #require(assets[0]["X-AD-CREATIVE-SIGNALING"] as? [String: Any])
        #expect((signalling["version"] as? NSNumber)?.intValue == 2)
        #expect(signalling["type"] as? String == "slot")
        let slot = try #require((signalling["payload"] as? [[String: Any]])?.first)
        #expect(slot["type"] as? String == "linear")
        #expect((slot["duration"] as? NSNumber)?.doubleValue == 20)
        let tracking = try #require(slot["tracking"] as? [[String: Any]])
        #expect(tracking.map { $0["type"] as? String } == ["impression", "start", "complete", "progress"])
        #expect(tracking.map { ($0["offset"] as? NSNumber)?.doubleValue } == [nil, 0, 20, 5])
        // The same URL given twice is reported once.
        #expect((tracking[1]["urls"] as? [String]) == ["https://t.example.com/start?ad=a"])
        // Without tracking (the server reports), no signalling; a break's own skip control wins over VAST's.
        let plain = AdAssetList.json(
            fitted,
            skip: AdAssetList.skipControl(fitted, breakSkip: SkipControl(offsetMilliseconds: 0, labelID: "Skip-Ad")),
            tracking: false)
        #expect(
            plain
                == #"{"ASSETS":[{"URI":"https://cdn.example.com/a.m3u8","DURATION":20.000},{"URI":"https://cdn.example.com/b.m3u8","DURATION":10.000}],"SKIP-CONTROL":{"OFFSET":0,"LABEL-ID":"Skip-Ad"}}"#
        )
    }

    @Test("no skip control when the first ad is not skippable, or skippable only at its end")
    func noSkip() {
        let late = [AdAssetList.Fitted(ad: ad("a", 6, skip: .percent(100)), durationMilliseconds: 6000)]
        #expect(AdAssetList.skipControl(late, breakSkip: nil) == nil)
        #expect(
            AdAssetList.skipControl([AdAssetList.Fitted(ad: ad("a", 6), durationMilliseconds: 6000)], breakSkip: nil)
                == nil)
    }

    @Test("a URL with quotes and control characters stays valid JSON")
    func escaping() throws {
        var odd = ad("x", 5)
        odd.uri = "https://cdn.example.com/a\"b\\c\u{1}.m3u8"
        let text = AdAssetList.json(
            [AdAssetList.Fitted(ad: odd, durationMilliseconds: 5000)], skip: nil, tracking: true)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        #expect(((object["ASSETS"] as? [[String: Any]])?.first?["URI"] as? String) == odd.uri)
    }
}
