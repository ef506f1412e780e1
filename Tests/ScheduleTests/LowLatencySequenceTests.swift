import Foundation
import HLS
import Schedule
import Testing

/// A channel with 1 s segments of four 0.25 s parts, fMP4, a window of 8 segments (so that delta updates, whose skip
/// boundary is 6 target durations, skip some).
func lowLatencyConfig(renditions: [Identifier] = ["720p", "480p"]) -> ChannelConfig {
    ChannelConfig(
        id: "demo", segmentDurationMilliseconds: 1000, windowSegments: 8, epoch: epoch,
        renditions: renditions.enumerated().map { index, name in
            RenditionConfig(
                name: name, bandwidth: 3_000_000 / (index + 1), codecs: ["avc1.64001f", "mp4a.40.2"],
                uriTemplate: "\(name)/seg{n}.m4s",
                mapURI: "\(name)/init.mp4", partURITemplate: "\(name)/seg{n}.{p}.m4s")
        },
        publicBaseURL: "http://127.0.0.1:8080", partDurationMilliseconds: 250)
}

let lowLatencyScenarios: [Scenario] = [
    Scenario(
        name: "ll-future-break", commands: [(60, place("brk-1", start: 63, duration: 4))],
        ticks: [60, 60.25, 61, 62.75, 63, 63.25, 63.5], renditions: ["720p", "480p"]),
    // Decided at 64.4 s: the live edge is the end of part 1 of segment 64 (64.25 s), so the break played 1.25 s.
    Scenario(
        name: "ll-early-return-mid-part",
        commands: [(60, place("brk-1", start: 63, duration: 10)), (64.4, .cancelCurrentEvent)],
        ticks: [64.25, 64.4, 64.5, 64.75, 65, 71.25], renditions: ["720p", "480p"]),
    Scenario(
        name: "ll-cancel-delta",
        commands: [(60, place("brk-1", start: 70, duration: 4)), (62.3, .cancelBreak(id: "brk-1"))],
        ticks: [62, 62.25, 62.5, 66, 68.25, 68.5], renditions: ["720p", "480p"]),
    Scenario(
        name: "ll-natural-end", commands: [(55, place("brk-1", start: 58, duration: 2))],
        ticks: [59.75, 60, 60.25, 65.75, 66, 66.25, 72, 72.25], renditions: ["720p", "480p"]),
    // Issue 33: the CUE markers on parts' segments, an early return mid-part ending at the next segment.
    Scenario(
        name: "ll-signalled-both-early-return-mid-part",
        commands: [(60, place("brk-1", start: 63, duration: 10)), (64.4, .cancelCurrentEvent)],
        ticks: [63, 63.25, 64.25, 64.4, 64.5, 64.75, 65, 65.25, 66, 71.25], renditions: ["720p", "480p"],
        signalling: Signalling(markers: .both)),
    // Issue 35: a preroll replaced (60 s), removed (63.1 s) and set again (64.2 s): each range that left is listed in
    // RECENTLY-REMOVED-DATERANGES, so a client on v2 deltas drops it; then the range at 12:01:40 hands over to the next
    // once it has ended (5 s) before the window (113 s).
    Scenario(
        name: "ll-preroll-replaced",
        commands: [
            (
                60,
                .setAdSettings(
                    AdSettingsChange(
                        preroll: .some(.asset(uri: "https://ads.example.com/b.m3u8", durationMilliseconds: 5000))))
            ),
            (63.1, .setAdSettings(AdSettingsChange(preroll: .some(nil)))),
            (
                64.2,
                .setAdSettings(
                    AdSettingsChange(
                        preroll: .some(.asset(uri: "https://ads.example.com/a.m3u8", durationMilliseconds: 5000))))
            ),
        ],
        ticks: [59.75, 60, 60.25, 61, 63, 63.25, 64.25, 64.5, 65, 112.5, 112.75, 113, 113.25, 113.5],
        renditions: ["720p", "480p"],
        ads: AdSettings(preroll: .asset(uri: "https://ads.example.com/a.m3u8", durationMilliseconds: 5000))),
]

@Suite("Low-latency playlist sequences")
struct LowLatencySequenceTests {
    @Test(
        "full and delta playlists equal the golden file; each passes lint; each delta applied to earlier playlists gives the full one",
        arguments: lowLatencyScenarios)
    func sequence(scenario: Scenario) throws {
        var config = lowLatencyConfig(renditions: scenario.renditions)
        config.signalling = scenario.signalling
        config.ads = scenario.ads
        var channel = try Channel(config)
        var pending = scenario.commands
        var transcript = ""
        var previous: [Identifier: [String]] = [:]
        for tick in scenario.ticks {
            while let (time, command) = pending.first, time <= tick {
                try channel.apply(command, at: at(time))
                pending.removeFirst()
            }
            var parsed: [(name: String, parsed: ParsedMediaPlaylist)] = []
            for rendition in scenario.renditions {
                let full = try channel.render(rendition, at: at(tick))
                let delta = try channel.renderDelta(rendition, at: at(tick), update: .segmentsAndDateRanges)
                transcript += "=== \(at(tick).iso8601) \(rendition)\n" + full + "--- _HLS_skip=v2\n" + delta
                let current = try PlaylistParser.parseMedia(full)
                #expect(Lint.check(current).isEmpty, "\(scenario.name) \(rendition) at \(tick): \(Lint.check(current))")
                let parsedDelta = try PlaylistParser.parseMedia(delta)
                #expect(
                    Lint.check(parsedDelta).isEmpty,
                    "\(scenario.name) \(rendition) delta at \(tick): \(Lint.check(parsedDelta))")
                let deltaYES = try channel.renderDelta(rendition, at: at(tick), update: .segments)
                let parsedYES = try PlaylistParser.parseMedia(deltaYES)
                #expect(
                    Lint.check(parsedYES).isEmpty,
                    "\(scenario.name) \(rendition) YES at \(tick): \(Lint.check(parsedYES))")
                for (name, checked) in [("v2", parsedDelta), ("YES", parsedYES)] {
                    let findings = Lint.checkDelta(full: current, delta: checked)
                    #expect(findings.isEmpty, "\(scenario.name) \(rendition) \(name) at \(tick): \(findings)")
                }
                if let last = previous[rendition]?.last {
                    let findings = Lint.checkUpdate(previous: try PlaylistParser.parseMedia(last), current: current)
                    #expect(findings.isEmpty, "\(scenario.name) \(rendition) \(tick): \(findings)")
                }
                for earlier in previous[rendition] ?? [] {
                    // Any full playlist served within the skip boundary (6 s) is a base a client may apply a delta to.
                    guard PlayerView(earlier).end.milliseconds(since: PlayerView(full).end) > -6000 else { continue }
                    #expect(
                        PlayerView(earlier).applying(delta) == PlayerView(full),
                        "\(scenario.name) \(rendition) v2 at \(tick)")
                    #expect(
                        PlayerView(earlier).applying(deltaYES) == PlayerView(full),
                        "\(scenario.name) \(rendition) YES at \(tick)")
                }
                previous[rendition, default: []].append(full)
                parsed.append((rendition.rawValue, current))
            }
            #expect(Lint.checkRenditions(parsed).isEmpty, "\(Lint.checkRenditions(parsed))")
        }
        try PlaylistSequenceTests.expectGolden(scenario.name, transcript)
    }

    @Test("parts, preload hint, rendition reports and server control at a tick inside a segment")
    func shape() throws {
        let channel = try Channel(lowLatencyConfig())
        let text = try channel.render("720p", at: at(60.5))  // segment 60 in progress, its parts 0 and 1 ended
        #expect(
            text.contains(
                "#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,CAN-SKIP-UNTIL=6.000,CAN-SKIP-DATERANGES=YES,PART-HOLD-BACK=0.750\n"
            ))
        #expect(text.contains("#EXT-X-PART-INF:PART-TARGET=0.250\n"))
        // The segment in progress has no program date-time of its own (see `mediaPlaylist`).
        #expect(
            text.hasSuffix(
                """
                720p/seg59.m4s
                #EXT-X-PART:DURATION=0.250,URI="720p/seg60.0.m4s",INDEPENDENT=YES
                #EXT-X-PART:DURATION=0.250,URI="720p/seg60.1.m4s"
                #EXT-X-PRELOAD-HINT:TYPE=PART,URI="720p/seg60.2.m4s"
                #EXT-X-RENDITION-REPORT:URI="480p.m3u8",LAST-MSN=60,LAST-PART=1

                """))
        // Parts only for the segments within 3 target durations (3 s) of the end (60.5 s): 58 and 59, not 57.
        #expect(text.contains(#"URI="720p/seg58.3.m4s""#) && !text.contains("seg57.0.m4s"))
        // On a segment boundary: no partial segment; the hint is part 0 of the next one.
        let boundary = try channel.render("720p", at: at(61))
        #expect(boundary.contains(#"#EXT-X-PRELOAD-HINT:TYPE=PART,URI="720p/seg61.0.m4s""#))
        #expect(boundary.contains(#"LAST-MSN=60,LAST-PART=3"#))
        #expect(boundary.contains("#EXTINF:1.000,\n720p/seg60.m4s\n#EXT-X-PRELOAD-HINT"))
    }

    @Test("a channel without parts renders as it always did: no LL-HLS tag")
    func withoutParts() throws {
        let channel = try Channel()
        let text = try channel.render("720p", at: at(60.5))
        for tag in ["SERVER-CONTROL", "PART", "PRELOAD-HINT", "RENDITION-REPORT"] {
            #expect(!text.contains("#EXT-X-\(tag)"))
        }
    }

    @Test("the cancel of a future break is listed in RECENTLY-REMOVED-DATERANGES for 6 target durations, then not")
    func recentlyRemoved() throws {
        var channel = try Channel(lowLatencyConfig())
        try channel.apply(place("brk-1", start: 70, duration: 4), at: at(60))
        try channel.apply(.cancelBreak(id: "brk-1"), at: at(62.3))
        #expect(
            try channel.renderDelta("720p", at: at(62.5), update: .segmentsAndDateRanges).contains(
                #"RECENTLY-REMOVED-DATERANGES="brk-1""#))
        #expect(
            try channel.renderDelta("720p", at: at(68.25), update: .segmentsAndDateRanges).contains(
                #"RECENTLY-REMOVED-DATERANGES="brk-1""#))
        #expect(
            try channel.renderDelta("720p", at: at(68.5), update: .segmentsAndDateRanges).contains(
                #"RECENTLY-REMOVED-DATERANGES="""#))
        // `YES` lists none and skips no date range.
        #expect(try !channel.renderDelta("720p", at: at(62.5), update: .segments).contains("RECENTLY-REMOVED"))
    }

    @Test("part duration and part templates are validated with the field named")
    func validation() throws {
        var config = lowLatencyConfig()
        config.partDurationMilliseconds = 300
        #expect(
            throws: ScheduleError.invalidField(
                "part-duration",
                "must be between 0.1 s and the segment duration and divide it into whole parts (got 0.300 s for 1.000 s segments)"
            )
        ) { try config.validate() }
        config = lowLatencyConfig()
        config.renditions[1].partURITemplate = "480p/seg{n}.m4s"
        #expect(
            throws: ScheduleError.invalidField(
                "rendition", "480p: the part URI template must contain {n} (or {n%K}) and {p}")
        ) { try config.validate() }
        config.renditions[1].partURITemplate = nil
        #expect(
            throws: ScheduleError.invalidField(
                "rendition", "480p: a channel with parts needs a part URI template with {n} and {p} for every rendition"
            )
        ) { try config.validate() }
        config = demoConfig()
        config.renditions[0].partURITemplate = "x{n}.{p}.m4s"
        #expect(
            throws: ScheduleError.invalidField(
                "rendition", "720p: a part URI template needs --part-duration on the channel")
        ) { try config.validate() }
        try lowLatencyConfig().validate()
    }

    @Test("an early return decided mid-part ends the break at the end of the last part served")
    func earlyReturnAtPartEdge() throws {
        var channel = try Channel(lowLatencyConfig())
        try channel.apply(place("brk-1", start: 63, duration: 10), at: at(60))
        let events = try channel.apply(.cancelCurrentEvent, at: at(64.4))
        #expect(events == [.playoutLimitSet(id: "brk-1", limitMilliseconds: 1250, kind: .cancelCurrent)])
        // In the playlist of the next part, as its first response to a client blocked on that part.
        #expect(try channel.render("720p", at: at(64.5)).contains("DURATION=1.250,X-PLAYOUT-LIMIT=1.250"))
    }
}

@Suite("LL-HLS lint rules")
struct LowLatencyLintTests {
    @Test(
        "a part longer than PART-TARGET, a short part mid-segment, parts far from the end, parts without blocking reload"
    )
    func partRules() throws {
        let text = """
            #EXTM3U
            #EXT-X-VERSION:6
            #EXT-X-TARGETDURATION:1
            #EXT-X-MEDIA-SEQUENCE:0
            #EXT-X-PART-INF:PART-TARGET=0.250
            #EXT-X-PART:DURATION=0.300,URI="s0.0.m4s"
            #EXT-X-PART:DURATION=0.100,URI="s0.1.m4s"
            #EXT-X-PART:DURATION=0.600,URI="s0.2.m4s"
            #EXTINF:1.000,
            s0.m4s
            #EXTINF:1.000,
            s1.m4s
            #EXTINF:1.000,
            s2.m4s
            #EXTINF:1.000,
            s3.m4s
            #EXT-X-PRELOAD-HINT:TYPE=PART,URI="s0.1.m4s"

            """
        let rules = Set(Lint.check(text).map(\.rule))
        for rule in [
            "parts.over-target", "parts.under-target", "parts.far-from-edge", "parts.blocking-reload",
            "server-control.part-hold-back-missing", "preload-hint.listed",
        ] {
            #expect(rules.contains(rule), "\(rule) in \(rules)")
        }
        #expect(!rules.contains("parts.segment-sum"))  // 1.000 s in all
    }

    @Test("a delta that skips a break still running, or keeps too little, is a finding against its full playlist")
    func deltaRules() throws {
        var channel = try Channel(lowLatencyConfig())
        try channel.apply(place("brk-1", start: 54, duration: 30), at: at(50))
        let full = try PlaylistParser.parseMedia(try channel.render("720p", at: at(62.5)))
        var delta = try PlaylistParser.parseMedia(
            try channel.renderDelta("720p", at: at(62.5), update: .segmentsAndDateRanges))
        #expect(Lint.checkDelta(full: full, delta: delta).isEmpty)
        // Drop the running break's tags from the delta, as a server skipping every range on a skipped segment would.
        delta.playlist.segments = delta.playlist.segments.map { segment in
            var segment = segment
            segment.tags = segment.tags.filter { if case .dateRange = $0 { false } else { true } }
            return segment
        }
        #expect(Lint.checkDelta(full: full, delta: delta).map(\.rule) == ["delta.daterange-still-running"])
        var greedy = try PlaylistParser.parseMedia(try channel.renderDelta("720p", at: at(62.5), update: .segments))
        greedy.playlist.skip!.skippedSegments += 2
        greedy.playlist.segments.removeFirst(2)
        #expect(Lint.checkDelta(full: full, delta: greedy).map(\.rule).contains("delta.skipped-too-much"))
    }
}

extension Channel {
    func renderDelta(_ rendition: Identifier, at tick: Timestamp, update: PlaylistBuilder.DeltaUpdate) throws -> String
    {
        let config = state.config!
        let full = PlaylistBuilder.mediaPlaylist(
            config: config, state: state, rendition: config.renditions.first { $0.name == rendition }!, at: tick)!
        return try PlaylistRenderer.render(
            PlaylistBuilder.deltaPlaylist(full, config: config, state: state, at: tick, update: update)!)
    }
}

/// What a player holds of a media playlist: segments by media sequence number (URI, duration, date, discontinuity, the
/// initialization section in effect, parts), what follows the last one, and date ranges by id with their attributes
/// merged in playlist order (hls.js `mergeDateRanges`). Applying a delta update fills the skipped segments from the
/// earlier playlist and, for `v2`, keeps its date ranges less those recently removed.
struct PlayerView: Equatable {
    struct Item: Equatable {
        var msn: Int64
        var uri: String
        var duration: DecimalNumber
        var date: Timestamp?
        var discontinuity: Bool
        var map: String?
        var parts: [Part]
    }

    var items: [Item] = []
    var trailing: [String] = []
    var dateRanges: [String: [String: String]] = [:]
    var end: Timestamp = Timestamp(milliseconds: 0)

    init(_ text: String) {
        let playlist = try! PlaylistParser.parseMedia(text).playlist
        var map: String?
        for (offset, segment) in playlist.segments.enumerated() {
            if let uri = segment.map?.uri { map = uri }
            let parts = segment.tags.compactMap { tag -> Part? in if case .part(let part) = tag { part } else { nil } }
            items.append(
                Item(
                    msn: playlist.sequenceNumbers.lowerBound + Int64(offset), uri: segment.uri,
                    duration: segment.duration,
                    date: segment.programDateTime, discontinuity: segment.hasDiscontinuity, map: map, parts: parts))
        }
        if let last = items.last, let date = last.date { end = date.adding(milliseconds: last.duration.milliseconds) }
        for line in text.split(separator: "\n") {
            if line.hasPrefix("#EXT-X-DATERANGE:") {
                let attributes = Self.attributes(line.dropFirst("#EXT-X-DATERANGE:".count))
                dateRanges[String(attributes["ID"]!.dropFirst().dropLast()), default: [:]].merge(attributes) { _, new in
                    new
                }
            }
        }
        // After the last segment: parts in progress, hints, reports (not date ranges, compared above).
        if let lastURI = text.range(of: "\n" + (playlist.segments.last?.uri ?? "") + "\n", options: .backwards) {
            trailing = text[lastURI.upperBound...].split(separator: "\n").filter { !$0.hasPrefix("#EXT-X-DATERANGE:") }
                .map(String.init)
        }
        skipped = playlist.skip
    }

    private var skipped: Skip?

    static func attributes(_ list: Substring) -> [String: String] {
        var result: [String: String] = [:]
        var name = "", value = "", inName = true, quoted = false
        for character in list + "," {
            if inName {
                if character == "=" { inName = false } else { name.append(character) }
            } else if character == "\"" {
                quoted.toggle()
                value.append(character)
            } else if character == "," && !quoted {
                result[name] = value
                name = ""
                value = ""
                inName = true
            } else {
                value.append(character)
            }
        }
        return result
    }

    /// The view after applying `deltaText`, a delta update, to this one.
    func applying(_ deltaText: String) -> PlayerView {
        var next = PlayerView(deltaText)
        guard let skip = next.skipped else { return next }
        let first = try! PlaylistParser.parseMedia(deltaText).playlist.mediaSequence
        // A skipped segment lies beyond the skip boundary (6 target durations), where no playlist lists parts.
        let filled = (first..<first + Int64(skip.skippedSegments)).map { msn in
            var item = items.first { $0.msn == msn }!
            item.parts = []
            return item
        }
        next.items = filled + next.items
        // The initialization section in effect carries over the skipped segments.
        var map: String?
        for index in next.items.indices {
            if let uri = next.items[index].map { map = uri } else { next.items[index].map = map }
        }
        if let removed = skip.recentlyRemovedDateRanges {
            var kept = dateRanges
            for id in removed { kept[id] = nil }
            for (id, attributes) in next.dateRanges { kept[id, default: [:]].merge(attributes) { _, new in new } }
            next.dateRanges = kept
        }
        next.skipped = nil
        return next
    }

    static func == (a: PlayerView, b: PlayerView) -> Bool {
        a.items == b.items && a.trailing == b.trailing && a.dateRanges == b.dateRanges && a.end == b.end
    }
}
