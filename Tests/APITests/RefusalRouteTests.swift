import API
import Foundation
import HTTPTypes
import Hummingbird
import Testing

@Suite("Refusals route (GET /channels/{channel}/refusals), in process")
struct RefusalRouteTests {
    @Test(
        "200 with refused commands (who, door, reason), paged by after/limit with next, filtered by break; 401, 403, 404, 422"
    )
    func refusals() async throws {
        let fixture = try await AuditRouteTests.withBreak()
        try await fixture.test { [fixture] client in
            // Two refused commands: a break that does not exist, brk-1 cancelled twice (the second is refused). A token
            // not allowed the command is answered 403 before any decision: not a refusal of the schedule.
            let missing = try await client.post(
                "/channels/demo/commands", #"{"command":"cancel_break","id":"brk-9"}"#, fixture.auth("desk"))
            #expect(missing.status.code >= 400)
            #expect(
                try await client.post(
                    "/channels/demo/commands", #"{"command":"cancel_break","id":"brk-1"}"#, fixture.auth("desk")
                ).status.code < 300)
            let twice = try await client.post(
                "/channels/demo/commands", #"{"command":"cancel_break","id":"brk-1"}"#, fixture.auth("auto"))
            #expect(twice.status == .forbidden)
            let again = try await client.post(
                "/channels/demo/commands", #"{"command":"cancel_break","id":"brk-1"}"#, fixture.auth("desk"))
            #expect(again.status.code >= 400)

            let all = try await client.get("/channels/demo/refusals", fixture.auth("wall"))
            #expect(all.status == .ok && all.json["channel"] as? String == "demo" && all.json["break_id"] == nil)
            let rows = try #require(all.json["refusals"] as? [[String: Any]])
            #expect(rows.compactMap { $0["break_id"] as? String } == ["brk-9", "brk-1"])
            let row = try #require(rows.last)
            #expect(
                row["command"] as? String == "cancel-break" && row["source"] as? String == "http"
                    && row["actor"] as? String == "desk")
            #expect(
                (row["reason"] as? String)?.isEmpty == false && (row["decided_at"] as? String)?.hasSuffix("Z") == true)
            #expect(
                (row["command_id"] as? String)?.isEmpty == false
                    && (row["request"] as? String)?.contains("brk-1") == true)
            let next = try #require(all.json["next"] as? Int)

            let first = try await client.get("/channels/demo/refusals?limit=1", fixture.auth("wall"))
            #expect((first.json["refusals"] as? [[String: Any]])?.compactMap { $0["break_id"] as? String } == ["brk-9"])
            let cursor = try #require(first.json["next"] as? Int)
            let second = try await client.get("/channels/demo/refusals?limit=1&after=\(cursor)", fixture.auth("wall"))
            #expect(
                (second.json["refusals"] as? [[String: Any]])?.compactMap { $0["break_id"] as? String } == ["brk-1"])
            #expect(second.json["next"] as? Int == next)
            let empty = try await client.get("/channels/demo/refusals?after=\(next)", fixture.auth("wall"))
            #expect(
                empty.status == .ok && (empty.json["refusals"] as? [Any])?.isEmpty == true && empty.json["next"] == nil)

            let filtered = try await client.get("/channels/demo/refusals?break=brk-1", fixture.auth("wall"))
            #expect(filtered.json["break_id"] as? String == "brk-1")
            #expect(
                (filtered.json["refusals"] as? [[String: Any]])?.compactMap { $0["command_id"] as? String } == [
                    try #require(row["command_id"] as? String)
                ])

            #expect(try await client.get("/channels/demo/refusals").status == .unauthorized)
            let other = try await client.get("/channels/demo/refusals", fixture.auth("news"))
            #expect(other.status == .forbidden && other.error?.message == "token news is not allowed on channel demo")
            let unknown = try await client.get("/channels/nope/refusals", fixture.auth("desk"))
            #expect(unknown.status == .notFound && unknown.error?.message == "channel nope does not exist")
            for (query, field) in [
                ("limit=0", "limit"), ("limit=1001", "limit"), ("limit=ten", "limit"), ("after=-1", "after"),
                ("after=x", "after"),
                ("break=BAD%20ID", "break"),
            ] {
                let bad = try await client.get("/channels/demo/refusals?\(query)", fixture.auth("wall"))
                #expect(bad.status == .unprocessableContent && bad.error?.field == field, "\(query)")
            }
            #expect(try await client.get("/channels/demo/refusals?limit=1000", fixture.auth("wall")).status == .ok)
        }
    }
}
