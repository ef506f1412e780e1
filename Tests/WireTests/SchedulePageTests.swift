import Foundation
import HLS
import Schedule
import Testing
import Wire

/// A page of the schedule is bounded in breaks and in bytes whatever the breaks hold, its JSON is what the wire
/// encoder writes for it, and its cursor reads back.
@Suite("Schedule pages: bounded in breaks and bytes")
struct SchedulePageTests {
    static let epoch = Timestamp(iso8601: "2026-03-01T12:00:00Z")!

    /// `count` of the largest breaks a command can place: a pod of 100 URIs of 2048 bytes whose every byte is escaped
    /// in JSON (a backslash), 32 attributes of 1024 such bytes, an actor of 200; small ones unless `largest`.
    static func breaks(_ count: Int, largest: Bool = true) throws -> ChannelState {
        var state = ChannelState(channel: "demo")
        var version: Int64 = 0
        let actor = largest ? String(repeating: "\\", count: Limits.labelBytes) : "ops"
        func apply(_ command: ScheduleCommand) throws {
            for event in try decide(command, state: state, now: epoch) {
                version += 1
                state = evolve(
                    state,
                    RecordedScheduleEvent(
                        event: event, version: version, position: version,
                        attribution: Attribution(at: epoch, actor: actor, source: "http")))
            }
        }
        try apply(.createChannel(WireTests.config))
        let prefix = "https://ads.example/"
        let uri = prefix + String(repeating: "\\", count: largest ? Limits.uriBytes - prefix.utf8.count : 1)
        let value = String(repeating: "\\", count: largest ? Limits.textBytes : 1)
        for index in 0..<count {
            var place = PlaceBreak(
                id: BreakID("big-\(index)")!, start: .at(epoch.adding(milliseconds: 60_000 + 120_000 * Int64(index))),
                plannedDurationMilliseconds: 100_000,
                asset: .pod((0..<Limits.maximumPodAssets).map { _ in PodAsset(uri: uri, durationMilliseconds: 1000) }),
                options: InterstitialOptions(
                    clientAttributes: (0..<32).map { ClientAttribute(name: "X-A\($0)", value: .string(value)) }),
                alignment: .exact)
            place.wholeAssets = true
            try apply(.placeBreak(place))
        }
        return state
    }

    @Test("pages of the largest breaks stay within 1 MiB, the JSON is the encoder's, and next reads every break once")
    func largestBreaks() throws {
        let state = try Self.breaks(7)
        let liveEdge = Self.epoch
        let one = try WireJSON.encode(BreakView(state.breaks[0], liveEdge: liveEdge))
        #expect(one.count > 400_000 && one.count < SchedulePage.maximumBytes / 2, "one break: \(one.count) bytes")
        var after: ScheduleCursor?
        var ids: [String] = []
        var pages = 0
        repeat {
            let page = SchedulePage(
                state: state, liveEdge: liveEdge, window: .init(after: after, limit: SchedulePage.maximumLimit))
            #expect(page.json.count <= SchedulePage.maximumBytes + 1024, "\(page.json.count) bytes")
            #expect(page.json == (try WireJSON.encode(page.view)))
            #expect(try WireJSON.decode(ScheduleView.self, from: page.json, answers: true) == page.view)
            ids += page.view.breaks.map(\.id.rawValue)
            after = try page.view.next.map { try #require(ScheduleCursor($0)) }
            pages += 1
        } while after != nil && pages < 10
        #expect(ids == (0..<7).map { "big-\($0)" })
        #expect(pages == 4, "two breaks of about 0.45 MiB a page")
    }

    @Test("a page by count: limit breaks and a next; the last page has none; a small schedule is one page, as before")
    func byCount() throws {
        let state = try Self.breaks(3, largest: false)
        let all = SchedulePage(state: state, liveEdge: Self.epoch, window: .init())
        #expect(all.view.breaks.count == 3 && all.view.next == nil)
        #expect(
            all.view == ScheduleView(state: state, liveEdge: Self.epoch),
            "the default page of a small schedule is the whole schedule")
        let first = SchedulePage(state: state, liveEdge: Self.epoch, window: .init(limit: 2))
        #expect(first.view.breaks.map(\.id) == ["big-0", "big-1"])
        #expect(first.view.next == "\(state.breaks[1].start.iso8601),big-1")
        let empty = SchedulePage(
            state: state, liveEdge: Self.epoch, window: .init(from: Self.epoch.adding(milliseconds: 86_400_000)))
        #expect(try empty.view.breaks.isEmpty && empty.view.next == nil && empty.json == WireJSON.encode(empty.view))
    }

    @Test(
        "cursors read back as written, and nothing else reads as one",
        arguments: [
            "2026-03-01T12:00:00.000Z", "brk-1", ",brk-1", "2026-03-01T12:00:00.000Z,", "2026-03-01T12:00:00.000Z,BRK",
            "x,brk-1",
        ])
    func cursors(text: String) {
        #expect(ScheduleCursor(text) == nil)
        let cursor = ScheduleCursor(start: Self.epoch, id: BreakID(stored: "_old-id")!)
        #expect(
            ScheduleCursor(cursor.description) == cursor && cursor.description == "2026-03-01T12:00:00.000Z,_old-id")
    }
}
