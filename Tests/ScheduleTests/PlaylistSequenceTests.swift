import Foundation
import HLS
import Schedule
import Testing

/// A log (commands at times) and a list of ticks; the rendered playlists are compared byte for byte with
/// `Fixtures/sequences/<name>.txt`. Set CUELINE_RECORD_GOLDEN=1 to re-record on purpose.
struct Scenario: CustomStringConvertible, Sendable {
    var name: String
    /// Commands by the second (after the epoch) they are decided at.
    var commands: [(Double, ScheduleCommand)]
    var ticks: [Double]
    var renditions: [Identifier] = ["720p"]
    /// Nil: a channel created before signalling (renderer version 1).
    var signalling: Signalling? = nil
    /// Nil: a channel created before ad settings (no preload ranges).
    var ads: AdSettings? = nil

    var description: String { name }
}

/// A break at 90 s lasting `first` seconds, then a 12 s pod at 120 s.
func backToBack(first: Double) -> [(Double, ScheduleCommand)] {
    [
        (60, place("brk-1", start: 90, duration: first)),
        (
            61,
            place(
                "brk-2", start: 120, duration: 12,
                asset: .pod([PodAsset(uri: "https://ads.example.com/a.m3u8", durationMilliseconds: 12_000)]))
        ),
    ]
}

/// Break brk-1 at 90 s for 30 s, placed with a received section as its SCTE35-OUT.
func placeReceived(_ section: String) -> ScheduleCommand {
    .placeBreak(
        PlaceBreak(
            id: "brk-1", start: .at(at(90)), plannedDurationMilliseconds: 30_000,
            asset: .uri("https://ads.example.com/pods/brk-1/master.m3u8"),
            options: InterstitialOptions(scte35Out: section)))
}

let scenarios: [Scenario] = [
    Scenario(
        name: "future-break", commands: [(60, place("brk-1", start: 90, duration: 30))],
        ticks: [60, 66, 72, 78, 84, 90]),
    Scenario(name: "on-air", commands: [(60, place("brk-1", start: 90, duration: 30))], ticks: [90, 96, 102, 108]),
    Scenario(
        name: "early-return-12s-of-30s",
        commands: [(60, place("brk-1", start: 90, duration: 30)), (103.5, .cancelCurrentEvent)],
        ticks: [96, 102, 103.5, 108, 114, 120, 126, 132]),
    Scenario(
        name: "cancel-before-start",
        commands: [(60, place("brk-1", start: 90, duration: 30)), (73, .cancelBreak(id: "brk-1"))],
        ticks: [66, 72, 73, 78, 90, 96]),
    Scenario(
        name: "natural-end", commands: [(60, place("brk-1", start: 90, duration: 30))],
        ticks: [114, 120, 126, 144, 150]),
    Scenario(name: "back-to-back", commands: backToBack(first: 30), ticks: [84, 96, 120, 126, 132, 138, 150, 156]),
    Scenario(
        name: "three-renditions",
        commands: [(60, place("brk-1", start: 90, duration: 30)), (103.5, .cancelCurrentEvent)],
        ticks: [102, 103.5], renditions: ["720p", "480p", "360p"]),
    // Issue 33: SCTE-35 on every break, and the markers a downstream SSAI reads.
    Scenario(
        name: "signalled-interstitial-early-return",
        commands: [(60, place("brk-1", start: 90, duration: 30)), (103.5, .cancelCurrentEvent)],
        ticks: [84, 90, 96, 102, 103.5, 108, 120], signalling: Signalling(markers: .interstitial)),
    Scenario(
        name: "signalled-scte35-early-return",
        commands: [(60, place("brk-1", start: 90, duration: 30)), (103.5, .cancelCurrentEvent)],
        ticks: [84, 90, 96, 102, 103.5, 108, 114, 120, 126, 132, 150],
        renditions: ["720p", "480p"], signalling: Signalling(markers: .scte35)),
    Scenario(
        name: "signalled-scte35-natural-end", commands: [(60, place("brk-1", start: 90, duration: 20))],
        ticks: [90, 96, 102, 108, 114, 120, 126, 150], signalling: Signalling(markers: .scte35, segmentationType: 0x22)),
    Scenario(
        name: "signalled-both-back-to-back", commands: backToBack(first: 28),
        ticks: [84, 96, 120, 126, 132, 138, 150, 156],
        signalling: Signalling(markers: .both, segmentationType: 0x36)),
    Scenario(
        name: "signalled-received-sections",
        commands: [
            (60, placeReceived("0xFC301100000000000000FFF0000000007A4F0E5B")),
            (103.5, .returnFromBreak(id: "brk-1", scte35In: "0xFC301100000000000000FFF00000000012345678")),
        ],
        ticks: [96, 103.5, 108], signalling: Signalling(markers: .both)),
    // Automation's start (SCTE 35 sample 14.1, a placement opportunity start) ended by an operator: the end paired with
    // automation's own section (same event id and UPID, 0x35), not one of Cueline's.
    Scenario(
        name: "signalled-received-start-operator-end",
        commands: [
            (
                60,
                placeReceived(
                    "0xFC3034000000000000FFFFF00506FE72BD0050001E021C435545494800008E7FCF0001A599B00808000000002CA0A18A3402009AC9D17E"
                )
            ),
            (103.5, .cancelCurrentEvent),
        ],
        ticks: [96, 103.5, 108], signalling: Signalling(markers: .scte35)),
    // Issue 35: preload ranges (20 s, or from the placement when that is later) ending at each break's start, removed
    // with a break cancelled while its preload is in the window; a break filled by an ad server points at this
    // service's asset list and carries skip control and the timeline attributes.
    Scenario(
        name: "ads-preload",
        commands: [
            (60, place("brk-1", start: 90, duration: 30)),
            (61, decidedBreak("brk-2", start: 130, duration: 12)),
            (112, place("brk-3", start: 120, duration: 6)),
            (115, .cancelBreak(id: "brk-2")),
            (121, .cancelCurrentEvent),
        ],
        ticks: [66, 72, 84, 90, 96, 108, 112, 114, 115, 120, 121, 132, 150],
        signalling: Signalling(markers: .both), ads: AdSettings()),
    // Issue 35: a preroll on join, one range at a time. The range starting at the epoch (12:00:00, a multiple of the
    // 600 s period) is published until it ends (15 s) before the window (tick 48), then the next one, 600 s ahead,
    // which stays through the window until it too has ended before it (tick 648); a break in between keeps its tags.
    Scenario(
        name: "preroll-asset",
        commands: [(590, place("brk-1", start: 620, duration: 12))],
        ticks: [30, 42, 48, 54, 594, 600, 606, 642, 648],
        ads: AdSettings(
            preroll: .asset(uri: "https://ads.example.com/preroll/master.m3u8", durationMilliseconds: 15_000))),
    // The same decided by an ad server for each viewer who joins: the range points at this service's asset list.
    Scenario(
        name: "preroll-ad-server", commands: [], ticks: [42, 48],
        signalling: Signalling(markers: .both),
        ads: AdSettings(
            preroll: .adServer(
                try! AdServerTemplate("https://ads.example.com/vast?pre={break_id}&pid={primary_id}", field: "t"),
                durationMilliseconds: 30_000))),
]

/// A break filled for each viewer by an ad server, with no assets of its own (the fallback is the slate, or nothing).
func decidedBreak(_ id: BreakID, start: Double, duration: Double) -> ScheduleCommand {
    var place = PlaceBreak(
        id: id, start: .at(at(start)), plannedDurationMilliseconds: Int64(duration * 1000), asset: .pod([]),
        options: InterstitialOptions(
            cue: InterstitialOptions.defaultCue, timelineOccupies: .range, timelineStyle: .highlight,
            contentMayVary: true,
            skipControl: SkipControl(offsetMilliseconds: 5000, durationMilliseconds: 5000, labelID: "Skip-Ad")))
    place.adServer = try! AdServerTemplate(
        "https://ads.example.com/vast?b={break_id}&d={duration}&pid={primary_id}", field: "ad_server")
    return .placeBreak(place)
}

@Suite("Playlist sequences")
struct PlaylistSequenceTests {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
        "Fixtures/sequences")

    @Test("rendered sequence equals the golden file; every step passes lint", arguments: scenarios)
    func sequence(scenario: Scenario) throws {
        var config = demoConfig()
        config.signalling = scenario.signalling
        config.ads = scenario.ads
        var channel = try Channel(config)
        var pending = scenario.commands
        var transcript = ""
        var previous: [Identifier: String] = [:]
        for tick in scenario.ticks {
            while let (time, command) = pending.first, time <= tick {
                try channel.apply(command, at: at(time))
                pending.removeFirst()
            }
            var parsed: [(name: String, parsed: ParsedMediaPlaylist)] = []
            for rendition in scenario.renditions {
                let text = try channel.render(rendition, at: at(tick))
                transcript += "=== \(at(tick).iso8601) \(rendition)\n" + text
                let current = try PlaylistParser.parseMedia(text)
                #expect(Lint.check(current).isEmpty, "\(scenario.name) \(rendition) at \(tick): \(Lint.check(current))")
                if let before = previous[rendition] {
                    let findings = Lint.checkUpdate(previous: try PlaylistParser.parseMedia(before), current: current)
                    #expect(findings.isEmpty, "\(scenario.name) \(rendition) \(tick): \(findings)")
                }
                previous[rendition] = text
                parsed.append((rendition.rawValue, current))
            }
            let across = Lint.checkRenditions(parsed)
            #expect(across.isEmpty, "\(across)")
        }
        try Self.expectGolden(scenario.name, transcript)
    }

    /// Compares a transcript with `Fixtures/sequences/<name>.txt` (written instead with CUELINE_RECORD_GOLDEN=1).
    static func expectGolden(_ name: String, _ transcript: String) throws {
        let file = directory.appendingPathComponent(name + ".txt")
        if ProcessInfo.processInfo.environment["CUELINE_RECORD_GOLDEN"] == "1" {
            try Data(transcript.utf8).write(to: file)
        }
        let golden = try String(contentsOf: file, encoding: .utf8)
        #expect(transcript == golden, "re-record with CUELINE_RECORD_GOLDEN=1 only if the change is intended")
    }

    @Test("the early return publishes DURATION and X-PLAYOUT-LIMIT equal to the time played at the live edge")
    func earlyReturnValues() throws {
        var channel = try Channel()
        try channel.apply(place("brk-1", start: 90, duration: 30), at: at(60))
        let events = try channel.apply(.cancelCurrentEvent, at: at(103.5))
        #expect(events == [.playoutLimitSet(id: "brk-1", limitMilliseconds: 12_000, kind: .cancelCurrent)])
        let text = try channel.render("720p", at: at(103.5))
        #expect(
            text.contains(
                #"#EXT-X-DATERANGE:ID="brk-1",CLASS="com.apple.hls.interstitial",START-DATE="2026-03-01T12:01:30.000Z",DURATION=12.000,X-PLAYOUT-LIMIT=12.000"#
            ))
    }

    @Test("all tags of a break are dropped together once it ends before the window")
    func garbageCollection() throws {
        var channel = try Channel()
        try channel.apply(place("brk-1", start: 90, duration: 30), at: at(60))
        // Ends at 120 s; the 5-segment window starts at 120 s from the tick at 150 s.
        #expect(try channel.render("720p", at: at(149.9)).contains("brk-1"))
        #expect(try !channel.render("720p", at: at(150)).contains("brk-1"))
    }

    @Test("a cancelled break's asset list is empty; a pod's lists its assets")
    func assetLists() throws {
        var channel = try Channel()
        let pod = [
            PodAsset(uri: "https://ads.example.com/a.m3u8", durationMilliseconds: 15_000),
            PodAsset(uri: "https://ads.example.com/b.m3u8", durationMilliseconds: 15_000),
        ]
        try channel.apply(place("brk-1", start: 90, duration: 30, asset: .pod(pod)), at: at(60))
        try channel.apply(place("brk-2", start: 200, duration: 30, asset: .pod(pod)), at: at(60))
        #expect(
            PlaylistBuilder.assetList(state: channel.state, breakID: "brk-1")
                == #"{"ASSETS":[{"URI":"https://ads.example.com/a.m3u8","DURATION":15.000},{"URI":"https://ads.example.com/b.m3u8","DURATION":15.000}]}"#
        )
        try channel.apply(.cancelBreak(id: "brk-2"), at: at(61))
        #expect(PlaylistBuilder.assetList(state: channel.state, breakID: "brk-2") == #"{"ASSETS":[]}"#)
        #expect(PlaylistBuilder.assetList(state: channel.state, breakID: "nope") == nil)
        #expect(
            try channel.render("720p", at: at(96)).contains(
                #"X-ASSET-LIST="http://127.0.0.1:8080/channels/demo/breaks/brk-1/assets.json?_HLS_interstitial_id=brk-1""#
            ))
    }

    @Test("a looping channel marks each loop with a discontinuity and counts them")
    func loop() throws {
        var config = demoConfig()
        config.loopSegments = 4
        let channel = try Channel(config)
        let text = try channel.render("720p", at: at(60))  // window 5...9
        #expect(text.contains("#EXT-X-DISCONTINUITY-SEQUENCE:1\n"))
        #expect(text.components(separatedBy: "#EXT-X-DISCONTINUITY\n").count == 2)  // before segment 8
        let next = try channel.render("720p", at: at(66))  // window 6...10
        #expect(
            Lint.checkUpdate(
                previous: try PlaylistParser.parseMedia(text), current: try PlaylistParser.parseMedia(next)
            ).isEmpty)
    }
}
