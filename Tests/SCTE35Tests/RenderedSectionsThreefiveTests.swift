import Foundation
import HLS
import SCTE35
import Schedule
import Testing

/// Every section a channel's playlists carry, as rendered, read by the independent decoder: the start of each break
/// (`SCTE35-OUT`: the channel's segmentation type, the planned duration, the break's event id and UPID) and the end of
/// an early return (`SCTE35-IN`: the paired end type, the same event id and UPID), for every marker style and type.
@Suite("SCTE-35 in rendered playlists: threefive decodes every section")
struct RenderedSectionsThreefiveTests {
    typealias Decoder = SegmentationSignalThreefiveTests

    /// The sections of one channel's playlist once a 30 s break has aired and a 20 s one was ended after 12 s, with
    /// the signal each should be.
    static func sections(markers: Signalling.Markers, type: SegmentationType) throws -> [(
        section: HexBytes, expected: SegmentationSignal
    )] {
        let epoch = Timestamp(iso8601: "2026-03-01T12:00:00Z")!
        let channel = try #require(ChannelID(stored: "plant-\(markers.rawValue)"))
        let config = ChannelConfig(
            id: channel, segmentDurationMilliseconds: 6000, windowSegments: 20, epoch: epoch,
            renditions: [RenditionConfig(name: "720p", bandwidth: 3_000_000, uriTemplate: "720p/seg{n}.ts")],
            publicBaseURL: "http://127.0.0.1:8080",
            signalling: Signalling(markers: markers, segmentationType: type.rawValue))
        var state = ChannelState(channel: channel)
        func apply(_ command: ScheduleCommand, at seconds: Int64) throws {
            for event in try decide(command, state: state, now: epoch.adding(milliseconds: seconds * 1000)) {
                state = evolve(
                    state,
                    RecordedScheduleEvent(
                        event: event, version: state.version + 1, position: state.version + 1,
                        attribution: Attribution(
                            at: epoch.adding(milliseconds: seconds * 1000), actor: "op", source: "test")))
            }
        }
        try apply(.createChannel(config), at: 0)
        for (id, start, duration) in [("brk-aired", 60, 30), ("brk-early", 120, 20)] as [(BreakID, Int64, Int64)] {
            try apply(
                .placeBreak(
                    PlaceBreak(
                        id: id, start: .at(epoch.adding(milliseconds: start * 1000)),
                        plannedDurationMilliseconds: duration * 1000,
                        asset: .uri("https://ads.example.com/\(id).m3u8"))), at: 30)
        }
        try apply(.cancelCurrentEvent, at: 132)
        let playlist = try #require(
            PlaylistBuilder.mediaPlaylist(
                config: config, state: state, rendition: config.renditions[0], at: epoch.adding(milliseconds: 150_000)))
        let parsed = try PlaylistParser.parseMedia(try PlaylistRenderer.render(playlist))
        var found: [(HexBytes, SegmentationSignal)] = []
        for range in parsed.playlist.dateRanges {
            let planned = range.id == "brk-aired" ? 30 : 20
            let start = try SegmentationSignal(
                channelID: channel.rawValue, breakID: range.id, type: type, durationTicks90k: UInt64(planned) * 90_000)
            if let out = range.scte35Out { found.append((out, start)) }
            if let back = range.scte35In { found.append((back, try start.ending())) }
        }
        return found
    }

    @Test(
        "start and early-return sections: type, duration, event id, UPID and CRC",
        .enabled(
            if: Decoder.threefiveImports,
            "python3 cannot import threefive: pip install threefive (scripts/test.sh does)"),
        arguments: Signalling.Markers.allCases)
    func rendered(markers: Signalling.Markers) throws {
        var all: [(section: HexBytes, expected: SegmentationSignal)] = []
        for type in Signalling.segmentationTypes {
            let sections = try Self.sections(markers: markers, type: type)
            // Each break's start, and the early return's end: three sections.
            #expect(sections.count == 3, "\(markers) \(type): \(sections.map(\.section))")
            all += sections
        }
        for (section, expected) in all {
            #expect(section.bytes == expected.encoded(), "\(section) is not the signal \(expected.hex)")
        }
        let result = try Decoder.run(
            ["python3", Decoder.script], input: all.map(\.section.description).joined(separator: "\n"))
        let lines = String(decoding: result.output, as: UTF8.self).split(separator: "\n")
        try #require(lines.count == all.count, "one JSON line per section")
        for ((_, expected), line) in zip(all, lines) {
            let decoded = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            try SegmentationSignalThreefiveTests().check(expected, decoded)
        }
        #expect(result.status == 0)
    }
}
