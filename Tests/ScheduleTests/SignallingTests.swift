import Foundation
import HLS
import SCTE35
import Schedule
import Testing

/// Issue 33: a channel's signalling (SCTE-35 on every break, the markers a downstream SSAI reads), and channels created
/// before it, which render as they always did.
@Suite("Signalling")
struct SignallingTests {
    static func signalled(_ markers: Signalling.Markers, type: UInt8 = 0x34) -> ChannelConfig {
        var config = demoConfig(renditions: ["720p"])
        config.signalling = Signalling(markers: markers, segmentationType: type)
        return config
    }

    @Test("a ChannelCreated written before signalling reads back without it (renderer version 1) and encodes as it was")
    func oldChannels() throws {
        let old = EventCodec.encode(.channelCreated(demoConfig()))
        #expect(!old.payload.contains("signalling"), "a channel without signalling writes no key for it")
        let decoded = try EventCodec.decode(type: old.type, schemaVersion: old.schemaVersion, payload: old.payload)
        guard case .channelCreated(let config) = decoded else {
            Issue.record("decoded \(decoded)")
            return
        }
        #expect(config.signalling == nil)
        #expect(config.rendererVersion == 1)
        #expect(Self.signalled(.both).rendererVersion == 2)
        let new = EventCodec.encode(.channelCreated(Self.signalled(.scte35, type: 0x22)))
        let back = try EventCodec.decode(type: new.type, schemaVersion: new.schemaVersion, payload: new.payload)
        #expect(back == .channelCreated(Self.signalled(.scte35, type: 0x22)))
    }

    @Test("a segmentation type other than a break's start, and CUE markers on a relay channel, are refused by name")
    func validation() throws {
        for type: UInt8 in [0x35, 0x00, 0x38, 0x10] {
            var config = Self.signalled(.interstitial, type: type)
            #expect(throws: ScheduleError.self) { try config.validate() }
            do {
                try config.validate()
            } catch {
                guard case .invalidField(let field, let reason) = error else {
                    Issue.record("\(error)")
                    continue
                }
                #expect(field == "segmentation-type")
                #expect(reason.contains(Signalling.name(type)) && reason.contains("0x34"), "\(reason)")
            }
            config.signalling?.segmentationType = 0x36
            try config.validate()
        }
        for markers in [Signalling.Markers.scte35, .both] {
            var relay = Self.signalled(markers)
            relay.source = .relay(upstream: "https://origin.example/{rendition}.m3u8")
            relay.renditions[0].uriTemplate = ""
            do {
                try relay.validate()
                Issue.record("\(markers) on a relay channel was accepted")
            } catch {
                #expect(Self.fieldOnly(error) == .invalidField("markers", ""), "\(error)")
            }
            relay.signalling?.markers = .interstitial
            try relay.validate()
        }
    }

    private static func fieldOnly(_ error: ScheduleError) -> ScheduleError {
        if case .invalidField(let field, _) = error { return .invalidField(field, "") }
        return error
    }

    @Test("the placing tag carries this channel's section; scte35 markers drop the interstitial class and asset")
    func placingTags() throws {
        for markers in Signalling.Markers.allCases {
            var channel = try Channel(Self.signalled(markers, type: 0x30))
            try channel.apply(place("brk-1", start: 90, duration: 30), at: at(60))
            let text = try channel.render("720p", at: at(96))
            let range = try #require(try PlaylistParser.parseMedia(text).playlist.dateRanges.first)
            let expected = try SegmentationSignal(
                channelID: "demo", breakID: "brk-1", type: .providerAdvertisementStart,
                durationTicks90k: 30 * 90_000)
            #expect(range.scte35Out?.bytes == expected.encoded(), "\(markers)")
            #expect(range.isInterstitial == markers.interstitials, "\(markers)")
            #expect((range.assetURI != nil) == markers.interstitials, "\(markers)")
            #expect(text.contains("#EXT-X-CUE-OUT:DURATION=30.000\n") == markers.cueMarkers, "\(markers)")
        }
    }

    @Test("the kept-tags cache keys on the signalling: the same break of two channels that differ only in it")
    func cacheKeysOnSignalling() throws {
        var rendered: [String] = []
        for markers in [Signalling.Markers.interstitial, .scte35, .interstitial] {
            var channel = try Channel(Self.signalled(markers))
            try channel.apply(place("brk-1", start: 90, duration: 30), at: at(60))
            rendered.append(try channel.render("720p", at: at(96)))
        }
        #expect(rendered[0] != rendered[1])
        #expect(rendered[0] == rendered[2])
        var legacy = try Channel()
        try legacy.apply(place("brk-1", start: 90, duration: 30), at: at(60))
        #expect(!(try legacy.render("720p", at: at(96))).contains("SCTE35-OUT"))
    }

    @Test("a break that covers no whole segment gets no CUE markers; its date range still carries SCTE35-OUT")
    func shortBreak() throws {
        var channel = try Channel(Self.signalled(.scte35))
        // 91 s to 95 s: inside segment 90–96 s.
        try channel.apply(place("brk-1", start: 91, duration: 4, alignment: .exact), at: at(60))
        let text = try channel.render("720p", at: at(108))
        #expect(!text.contains("#EXT-X-CUE"))
        #expect(text.contains("SCTE35-OUT=0x"))
        #expect(Lint.check(text).isEmpty, "\(Lint.check(text))")
    }

    @Test("CUE markers: OUT on the break's first segment, CONT with the time since it, IN where the early return ends")
    func cueMarkers() throws {
        var channel = try Channel(Self.signalled(.scte35))
        try channel.apply(place("brk-1", start: 90, duration: 30), at: at(60))
        try channel.apply(.cancelCurrentEvent, at: at(103.5))  // the live edge then: 102 s
        let text = try channel.render("720p", at: at(120))  // window 90…114
        let cues = try PlaylistParser.parseMedia(text).playlist.segments.map { segment in
            segment.tags.compactMap { tag -> String? in if case .cue(let cue) = tag { cue.line } else { nil } }
        }
        #expect(
            cues == [
                ["#EXT-X-CUE-OUT:DURATION=30.000"], ["#EXT-X-CUE-OUT-CONT:ElapsedTime=6.000,Duration=30.000"],
                ["#EXT-X-CUE-IN"], [], [],
            ])
        #expect(text.contains("SCTE35-IN=0x"), "the early return's end section")
        #expect(!text.contains("X-PLAYOUT-LIMIT"), "a client attribute of interstitials only")
    }
}
