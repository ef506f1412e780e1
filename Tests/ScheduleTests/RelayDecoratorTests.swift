import Foundation
import HLS
@testable import Schedule
import Testing

@Suite("Relay source")
struct RelayDecoratorTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
        "Fixtures/relay")

    private func relayChannel() throws -> Channel {
        var config = demoConfig(renditions: ["720p"])
        config.source = .relay(upstream: "http://encoder.example/live/{rendition}/index.m3u8")
        config.renditions[0].uriTemplate = ""
        var channel = try Channel(config)
        // On air at the upstream live edge (12:01:50): started 12:01:20 (the discontinuity), planned 60 s.
        try channel.apply(place("brk-1", start: 80, duration: 60), at: at(62))
        return channel
    }

    @Test(
        "upstream segments decorated: dates on every segment, URIs absolute, our ranges placed, upstream interstitials dropped"
    )
    func decorate() throws {
        let channel = try relayChannel()
        let upstream = try PlaylistParser.parseMedia(
            String(contentsOf: Self.fixtures.appendingPathComponent("upstream.m3u8"), encoding: .utf8))
        let decorated = try RelayDecorator.decorate(
            upstream.playlist, upstreamURL: "http://encoder.example/live/720p/index.m3u8",
            config: channel.state.config!, state: channel.state)
        let text = try PlaylistRenderer.render(decorated)
        let golden = Self.fixtures.appendingPathComponent("decorated.m3u8")
        if ProcessInfo.processInfo.environment["CUELINE_RECORD_GOLDEN"] == "1" { try Data(text.utf8).write(to: golden) }
        #expect(text == (try String(contentsOf: golden, encoding: .utf8)))

        #expect(Lint.check(text).isEmpty, "\(Lint.check(text))")
        let segments = decorated.segments
        #expect(segments.allSatisfy { $0.programDateTime != nil })
        #expect(
            segments.map(\.programDateTime!.iso8601) == [
                "2026-03-01T12:01:00.000Z", "2026-03-01T12:01:06.000Z", "2026-03-01T12:01:20.000Z",
                "2026-03-01T12:01:26.000Z", "2026-03-01T12:01:32.000Z",
            ])
        #expect(
            segments.map(\.uri) == [
                "http://encoder.example/live/720p/seg300.m4s", "http://encoder.example/live/720p/seg301.m4s",
                "http://encoder.example/live/720p/seg302.m4s", "https://cdn.example/other/seg303.m4s",
                "http://encoder.example/live/720p/seg304.m4s",
            ])
        #expect(segments[2].map?.uri == "http://encoder.example/live/init-v2.mp4")
        #expect(!text.contains("encoder-ad"))
        #expect(text.contains(#"ID="chapter-2""#))
        #expect(text.contains("#EXT-X-ENCODER-HEARTBEAT:42"))
        #expect(decorated.dateRanges.filter { $0.id == "brk-1" }.count == 1)
        #expect(decorated.mediaSequence == 300 && decorated.discontinuitySequence == 2)
    }

    @Test(
        "an LL-HLS upstream: parts and hint resolved, reports pointed at our playlists, our server control, a range in the segment in progress before its parts"
    )
    func decorateLowLatency() throws {
        var config = demoConfig(renditions: ["720p", "480p"])
        config.source = .relay(upstream: "http://encoder.example/live/{rendition}/index.m3u8")
        for index in config.renditions.indices { config.renditions[index].uriTemplate = "" }
        var channel = try Channel(config)
        // Starts at 12:01:20, in the segment in progress upstream (its parts 0 and 1 are listed).
        try channel.apply(place("brk-1", start: 80, duration: 60), at: at(62))
        let upstream = try PlaylistParser.parseMedia(
            String(contentsOf: Self.fixtures.appendingPathComponent("upstream-ll.m3u8"), encoding: .utf8))
        // Our copy of 480p is a part behind what upstream reported: the report says where our copy is.
        let positions: [Identifier: RelayDecorator.PartsPosition] = [
            "480p": RelayDecorator.PartsPosition(
                lastSegment: 79, partial: 1, partTargetMilliseconds: 250, lastSegmentParts: 4)
        ]
        let decorated = try RelayDecorator.decorate(
            upstream.playlist, upstreamURL: "http://encoder.example/live/720p/index.m3u8",
            config: channel.state.config!, state: channel.state,
            positions: positions)
        let text = try PlaylistRenderer.render(decorated)
        let golden = Self.fixtures.appendingPathComponent("decorated-ll.m3u8")
        if ProcessInfo.processInfo.environment["CUELINE_RECORD_GOLDEN"] == "1" { try Data(text.utf8).write(to: golden) }
        #expect(text == (try String(contentsOf: golden, encoding: .utf8)))
        #expect(Lint.check(text).isEmpty, "\(Lint.check(text))")
        // Server control is ours: blocking reload, upstream's hold-back, no delta updates (we make none).
        #expect(text.contains("#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,PART-HOLD-BACK=0.750\n"))
        #expect(text.contains(#"#EXT-X-PART:DURATION=0.250,URI="http://encoder.example/live/720p/seg80.1.m4s""#))
        #expect(text.contains(#"#EXT-X-PRELOAD-HINT:TYPE=PART,URI="http://encoder.example/live/720p/seg80.2.m4s""#))
        // The report of 480p names our 480p playlist, at our copy's last part; one of a rendition this channel does not
        // have is dropped, and so is one of a rendition whose copy has no parts yet.
        #expect(text.contains(#"#EXT-X-RENDITION-REPORT:URI="480p.m3u8",LAST-MSN=80,LAST-PART=0"#))
        let unknown = try RelayDecorator.decorate(
            upstream.playlist, upstreamURL: "http://encoder.example/live/720p/index.m3u8",
            config: channel.state.config!, state: channel.state)
        #expect(!(try PlaylistRenderer.render(unknown)).contains("RENDITION-REPORT"))
        #expect(!text.contains("1080p") && !text.contains("upstream-ad-"))
        // The break starting in the segment in progress: its range before that segment's parts, not after the hint.
        let range = try #require(text.range(of: #"ID="brk-1""#)),
            firstPart = try #require(text.range(of: "seg80.0.m4s"))
        #expect(range.lowerBound < firstPart.lowerBound)
        #expect(
            !text.contains("#EXT-X-PROGRAM-DATE-TIME:2026-03-01T12:01:20"),
            "no date on the segment in progress (README: hls.js)")

        let position = try #require(RelayDecorator.partsPosition(upstream.playlist))
        #expect(
            position
                == RelayDecorator.PartsPosition(
                    lastSegment: 79, partial: 2, partTargetMilliseconds: 250, lastSegmentParts: 4))
        typealias Position = RelayDecorator.PartsPosition
        #expect(
            Position.ordinal(segment: 80, part: 1) <= position.ordinal
                && Position.ordinal(segment: 80, part: 2) > position.ordinal)
        #expect(
            Position.ordinal(segment: 79, part: nil) <= position.ordinal
                && Position.ordinal(segment: 80, part: nil) > position.ordinal)
        #expect(Position.ordinal(segment: 79, part: 999_999) <= position.ordinal)
        #expect(position.lastSegmentParts == 4 && position.lastPart! == (80, 1))
        // Without blocking reload upstream there is nothing to hold a request on: relayed as segments, without parts
        // (parts need blocking reload and PART-HOLD-BACK).
        var polled = upstream.playlist
        polled.serverControl = ServerControl(canBlockReload: false, partHoldBack: DecimalNumber(milliseconds: 750))
        #expect(RelayDecorator.partsPosition(polled) == nil)
        #expect(RelayDecorator.serverControl(polled) == nil)
        let segmentsOnly = try PlaylistRenderer.render(
            try RelayDecorator.decorate(
                polled, upstreamURL: "http://encoder.example/live/720p/index.m3u8", config: channel.state.config!,
                state: channel.state))
        #expect(
            !segmentsOnly.contains("#EXT-X-PART") && !segmentsOnly.contains("PRELOAD-HINT")
                && segmentsOnly.contains(#"ID="brk-1""#))
        #expect(Lint.check(segmentsOnly).isEmpty, "\(Lint.check(segmentsOnly))")
    }

    @Test(
        "an upstream whose numbers would overflow or stall the server is not relayed",
        arguments: [
            ("#EXT-X-TARGETDURATION:9223372036854775807", "EXT-X-TARGETDURATION"),
            ("#EXT-X-TARGETDURATION:0", "EXT-X-TARGETDURATION"),
            ("#EXT-X-MEDIA-SEQUENCE:9223372036854775800", "EXT-X-MEDIA-SEQUENCE"),
            ("#EXT-X-PART-INF:PART-TARGET=9999999999999999", "PART-TARGET"),
            ("#EXT-X-PART:DURATION=9223372036854775,URI=\"a.m4s\"", "a part lasts"),
        ])
    func hostileNumbers(line: String, named: String) throws {
        var lines = [
            "#EXTM3U", "#EXT-X-TARGETDURATION:1", "#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES",
            "#EXT-X-PART-INF:PART-TARGET=0.25",
        ]
        lines = lines.filter { !$0.hasPrefix(String(line.prefix { $0 != ":" }) + ":") }
        lines.append(line.hasPrefix("#EXT-X-PART:") ? "#EXT-X-MEDIA-SEQUENCE:1" : line)
        for n in 0..<7 {
            lines += ["#EXT-X-PROGRAM-DATE-TIME:2026-03-01T12:01:0\(n).000Z", "#EXTINF:1.0,", "s\(n).m4s"]
        }
        if line.hasPrefix("#EXT-X-PART:") { lines += [line, line] }
        let upstream = try PlaylistParser.parseMedia(lines.joined(separator: "\n") + "\n").playlist
        #expect {
            try RelayDecorator.check(upstream)
        } throws: { error in
            "\(error)".contains(named)
        }
        #expect(RelayDecorator.partsPosition(upstream) == nil)
        let channel = try relayChannel()
        #expect(throws: RelayDecorator.Failure.self) {
            try RelayDecorator.decorate(
                upstream, upstreamURL: "http://x/a.m3u8", config: channel.state.config!, state: channel.state)
        }
    }

    @Test("an upstream without program date-times cannot be decorated")
    func noDates() throws {
        let channel = try relayChannel()
        let upstream = MediaPlaylist(
            targetDuration: 6, segments: [Segment(duration: DecimalNumber(integer: 6), uri: "a.ts")])
        #expect(throws: RelayDecorator.Failure.noProgramDateTime) {
            try RelayDecorator.decorate(
                upstream, upstreamURL: "http://x/a.m3u8", config: channel.state.config!, state: channel.state)
        }
    }

    @Test("a relay channel with several renditions needs {rendition} in the upstream")
    func validation() {
        var config = demoConfig()
        config.source = .relay(upstream: "http://encoder.example/live/index.m3u8")
        #expect(
            throws: ScheduleError.invalidField("relay", "with several renditions the upstream must contain {rendition}")
        ) { try config.validate() }
    }
}
