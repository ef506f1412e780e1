import API
import Foundation
import HTTPTypes
import Schedule
import Testing

/// `GET …/schedule` a page at a time (issue 34, defect 3): every answer is bounded however many breaks a channel
/// holds, and following `next` reads each break once, in order.
@Suite("Schedule pages: from/to, limit, next")
struct ScheduleRouteTests {
    /// Demo with `count` breaks of 10 s, one every 12 s from 30 s ahead (b-000, b-001, …), and b-010 cancelled and
    /// replaced by a-010 at the same start (two breaks that start together, ordered by id).
    static func withBreaks(_ count: Int) async throws -> APIFixture {
        let fixture = try await APIFixture()
        try await fixture.test { [fixture] client in
            for index in 0..<count {
                let body =
                    #"{"command":"place_break","id":"b-\#(String(format: "%03d", index))","in":\#(30 + 12 * index),"duration":10,"asset_list":"https://ads.example/list"}"#
                let placed = try await client.post("/channels/demo/commands", body, fixture.auth("desk"))
                #expect(placed.status == .created, "\(placed.text)")
            }
            let cancelled = try await client.post(
                "/channels/demo/commands", #"{"command":"cancel_break","id":"b-010"}"#, fixture.auth("desk"))
            #expect(cancelled.status == .created, "\(cancelled.text)")
            let replaced = try await client.post(
                "/channels/demo/commands",
                #"{"command":"place_break","id":"a-010","in":150,"duration":10,"asset_list":"https://ads.example/list"}"#,
                fixture.auth("desk"))
            #expect(replaced.status == .created, "\(replaced.text)")
        }
        return fixture
    }

    static func ids(_ answer: TestResponse) -> [String] {
        (answer.json["breaks"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
    }

    static func query(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
    }

    @Test(
        "pages of 100 by default, next until the last; every break once, in order of start then id; limit=1000 in one")
    func pages() async throws {
        let fixture = try await Self.withBreaks(250)
        let expected = (0..<250).flatMap { $0 == 10 ? ["a-010", "b-010"] : [String(format: "b-%03d", $0)] }
        try await fixture.test { [fixture] client in
            var ids: [String] = []
            var pages: [Int] = []
            var path = "/channels/demo/schedule"
            while true {
                let page = try await client.get(path, fixture.auth("wall"))
                #expect(
                    page.status == .ok && page.json["channel"] as? String == "demo" && page.json["live_edge"] != nil,
                    "\(page.text)")
                ids += Self.ids(page)
                pages.append(Self.ids(page).count)
                guard let next = page.json["next"] as? String else { break }
                #expect(next.hasSuffix("," + Self.ids(page).last!))
                path = "/channels/demo/schedule?after=\(Self.query(next))"
                if pages.count > 5 { break }
            }
            #expect(pages == [100, 100, 51])
            #expect(ids == expected)

            let whole = try await client.get("/channels/demo/schedule?limit=1000", fixture.auth("wall"))
            #expect(whole.status == .ok && Self.ids(whole) == expected && whole.json["next"] == nil)
            let ten = try await client.get("/channels/demo/schedule?limit=10", fixture.auth("wall"))
            #expect(Self.ids(ten) == Array(expected.prefix(10)) && ten.json["next"] as? String != nil)
        }
    }

    @Test("from and to keep the breaks planned to start in [from, to); next stays within them")
    func window() async throws {
        let fixture = try await Self.withBreaks(30)
        try await fixture.test { [fixture] client in
            let whole = try await client.get("/channels/demo/schedule", fixture.auth("wall"))
            let breaks = try #require(whole.json["breaks"] as? [[String: Any]])
            let starts = breaks.compactMap { $0["start_date"] as? String }
            #expect(whole.json["next"] == nil, "a channel of few breaks is answered whole, as before")
            // b-020 … b-024 (five breaks); `to` is the start of b-025, left out.
            let from = try #require(starts.first { breaks[starts.firstIndex(of: $0)!]["id"] as? String == "b-020" })
            let to = try #require(starts.first { breaks[starts.firstIndex(of: $0)!]["id"] as? String == "b-025" })
            let window = "/channels/demo/schedule?from=\(Self.query(from))&to=\(Self.query(to))"
            let answer = try await client.get(window, fixture.auth("wall"))
            #expect(
                Self.ids(answer) == ["b-020", "b-021", "b-022", "b-023", "b-024"] && answer.json["next"] == nil,
                "\(answer.text)")
            let first = try await client.get(window + "&limit=3", fixture.auth("wall"))
            #expect(Self.ids(first) == ["b-020", "b-021", "b-022"])
            let next = try #require(first.json["next"] as? String)
            let rest = try await client.get(window + "&limit=3&after=\(Self.query(next))", fixture.auth("wall"))
            #expect(Self.ids(rest) == ["b-023", "b-024"] && rest.json["next"] == nil)
            let tie = try await client.get(
                "/channels/demo/schedule?limit=1&after=\(Self.query(starts[10] + ",a-010"))", fixture.auth("wall"))
            #expect(Self.ids(tie) == ["b-010"], "after the first of two breaks that start together comes the second")
        }
    }

    @Test(
        "422 naming limit, after, from or to",
        arguments: [
            ("limit=0", "limit", "limit must be a whole number from 1 to 1000"),
            ("limit=1001", "limit", "limit must be a whole number from 1 to 1000"),
            ("limit=x", "limit", "limit must be a whole number from 1 to 1000"),
            (
                "after=brk-1", "after",
                "after must be the next of an earlier page (an instant and a break id: 2026-03-01T20:15:00.000Z,brk-42)"
            ),
            ("from=yesterday", "from", nil),
            (
                "from=2026-03-01T13:00:00Z&to=2026-03-01T12:00:00Z", "to",
                "to must not be before from (2026-03-01T13:00:00.000Z)"
            ),
        ] as [(String, String, String?)])
    func refused(query: String, field: String, message: String?) async throws {
        let fixture = try await AuditRouteTests.withBreak()
        try await fixture.test { [fixture] client in
            let answer = try await client.get("/channels/demo/schedule?\(query)", fixture.auth("wall"))
            #expect(answer.status == .unprocessableContent && answer.error?.field == field, "\(answer.text)")
            if let message { #expect(answer.error?.message == message) }
        }
    }
}
