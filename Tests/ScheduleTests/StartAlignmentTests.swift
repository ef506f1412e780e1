import Foundation
import HLS
import Schedule
import Testing

/// Break starts move to the next segment boundary on clock channels unless `.exact` is asked for (issue 16): where a
/// start falls inside a segment decides how hls.js plays the break.
@Suite("break starts snap to segment boundaries")
struct StartAlignmentTests {
    private func placed(_ command: ScheduleCommand, on channel: inout Channel, at seconds: Double) throws -> BreakSpec {
        let events = try channel.apply(command, at: at(seconds))
        guard case .breakPlaced(let spec)? = events.first else { throw PlacementMissing() }
        return spec
    }

    private struct PlacementMissing: Error {}

    private func placeIn(_ delay: Int64, id: BreakID = "brk-1", alignment: PlaceBreak.StartAlignment = .segment)
        -> ScheduleCommand
    {
        .placeBreak(
            PlaceBreak(
                id: id, start: .inMilliseconds(delay), plannedDurationMilliseconds: 30_000,
                asset: .uri("https://ads.example.com/a.m3u8"),
                alignment: alignment))
    }

    @Test(
        "boundaries: epoch + n·segment, the start itself when it is one",
        arguments: [
            (90.0, 90.0), (90.001, 96.0), (95.999, 96.0), (0.0, 0.0), (0.5, 6.0), (-0.5, 0.0), (-6.0, -6.0),
            (-7.0, -6.0),
        ])
    func boundaries(time: Double, boundary: Double) {
        #expect(Timeline(demoConfig()).boundary(atOrAfter: at(time)) == at(boundary))
    }

    @Test("an --in start moves to the next boundary, and the answer says from where")
    func inStart() throws {
        var channel = try Channel()
        let command = placeIn(30_000)
        let spec = try placed(command, on: &channel, at: 61.13)
        #expect(spec.start == at(96), "61.13 s + 30 s = 91.13 s, moved to 96 s")
        let note = command.note(for: [.breakPlaced(spec)], decidedAt: at(61.13))
        #expect(
            note
                == "start 2026-03-01T12:01:36.000Z (snapped from 2026-03-01T12:01:31.130Z to the next segment boundary; align exact keeps it)"
        )
    }

    @Test("an --at start moves to the next boundary; one on a boundary stays, with nothing to say")
    func atStart() throws {
        var channel = try Channel()
        #expect(try placed(place("brk-1", start: 95.5, duration: 30), on: &channel, at: 61).start == at(96))
        let onBoundary = place("brk-2", start: 150, duration: 30)
        let spec = try placed(onBoundary, on: &channel, at: 61)
        #expect(spec.start == at(150))
        #expect(onBoundary.note(for: [.breakPlaced(spec)], decidedAt: at(61)) == nil)
    }

    @Test("exact keeps the arrival-time start")
    func exact() throws {
        var channel = try Channel()
        #expect(try placed(placeIn(30_000, alignment: .exact), on: &channel, at: 61.13).start == at(91.13))
        #expect(
            try placed(place("brk-2", start: 155.5, duration: 30, alignment: .exact), on: &channel, at: 61).start
                == at(155.5))
    }

    @Test("overlap is judged on the snapped start")
    func overlapOnSnappedStart() throws {
        var channel = try Channel()
        try channel.apply(place("brk-1", start: 90, duration: 30), at: at(61))
        // 84.5 s for 5.5 s ends at 90 s, but moved to 90 s it covers brk-1.
        #expect(throws: ScheduleError.overlap(id: "brk-2", otherID: "brk-1", otherStart: at(90), otherEnd: at(120))) {
            try decide(place("brk-2", start: 84.5, duration: 5.5), state: channel.state, now: at(62))
        }
        #expect(throws: Never.self) {
            try decide(place("brk-2", start: 84.5, duration: 5.5, alignment: .exact), state: channel.state, now: at(62))
        }
        // 118.5 s for 10 s overlaps brk-1 as asked, not once moved to 120 s.
        #expect(throws: ScheduleError.self) {
            try decide(place("brk-2", start: 118.5, duration: 10, alignment: .exact), state: channel.state, now: at(62))
        }
        let spec = try placed(place("brk-2", start: 118.5, duration: 10), on: &channel, at: 62)
        #expect(spec.start == at(120))
    }

    @Test("relay channels keep the exact start: their segments come from upstream")
    func relayUnsnapped() throws {
        var config = demoConfig(renditions: ["720p"])
        config.source = .relay(upstream: "http://encoder.example/live/{rendition}/index.m3u8")
        config.renditions[0].uriTemplate = ""
        var channel = try Channel(config)
        #expect(try placed(placeIn(30_000), on: &channel, at: 61.13).start == at(91.13))
        #expect(try placed(place("brk-2", start: 155.5, duration: 30), on: &channel, at: 61).start == at(155.5))
    }

    @Test(
        "the idempotency text of a default placement is what it was before alignment existed; old text reads as segment"
    )
    func canonicalRequest() throws {
        let request = PlaceBreak(
            id: "brk-1", start: .at(at(90)), plannedDurationMilliseconds: 30_000,
            asset: .uri("https://ads.example.com/a.m3u8"))
        let text = EventCodec.canonicalRequest(.placeBreak(request))
        #expect(
            text
                == #"{"placeBreak":{"_0":{"asset":{"uri":{"_0":"https:\/\/ads.example.com\/a.m3u8"}},"id":"brk-1","options":{"clientAttributes":[]},"plannedDurationMilliseconds":30000,"start":{"at":{"_0":"2026-03-01T12:01:30.000Z"}}}}}"#
                .replacingOccurrences(of: #"\/"#, with: "/"))
        let exact = EventCodec.canonicalRequest(
            .placeBreak(
                PlaceBreak(
                    id: "brk-1", start: .at(at(90)), plannedDurationMilliseconds: 30_000,
                    asset: .uri("https://ads.example.com/a.m3u8"), alignment: .exact)))
        #expect(exact.contains(#""alignment":"exact""#) && exact != text)
        #expect(try JSONDecoder().decode(ScheduleCommand.self, from: Data(text.utf8)) == .placeBreak(request))
        #expect(try JSONDecoder().decode(ScheduleCommand.self, from: Data(exact.utf8)) != .placeBreak(request))
    }
}
