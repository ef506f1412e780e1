import API
import EventStore
import Foundation
import HTTPTypes
import Hummingbird
import Testing

@Suite("Audit routes (schedule, events, replay, as-run), in process")
struct AuditRouteTests {
    /// The fixture with brk-1 placed (30 s from 90 s), version 2.
    static func withBreak() async throws -> APIFixture {
        let fixture = try await APIFixture()
        try await fixture.test { [fixture] client in
            let placed = try await client.post("/channels/demo/commands", CommandRouteTests.place, fixture.auth("desk"))
            #expect(placed.status == .created)
        }
        return fixture
    }

    @Test("GET schedule: 200 with the breaks; 401, 403 for a token of another channel, 404")
    func schedule() async throws {
        let fixture = try await Self.withBreak()
        try await fixture.test { [fixture] client in
            let answer = try await client.get("/channels/demo/schedule", fixture.auth("wall"))
            #expect(
                answer.status == .ok && answer.json["channel"] as? String == "demo"
                    && answer.json["version"] as? Int == 2)
            let breaks = try #require(answer.json["breaks"] as? [[String: Any]])
            #expect(breaks.first?["id"] as? String == "brk-1" && breaks.first?["state"] as? String == "scheduled")
            #expect(try await client.get("/channels/demo/schedule").status == .unauthorized)
            let other = try await client.get("/channels/demo/schedule", fixture.auth("news"))
            #expect(other.status == .forbidden && other.error?.message == "token news is not allowed on channel demo")
            let unknown = try await client.get("/channels/nope/schedule", fixture.auth("desk"))
            #expect(unknown.status == .notFound && unknown.error?.message == "channel nope does not exist")
        }
    }

    @Test("GET events as JSON pages: after, limit and Last-Event-ID; 422 naming a bad one; 403; 404")
    func eventPages() async throws {
        let fixture = try await Self.withBreak()
        try await fixture.test { [fixture] client in
            let all = try await client.get("/channels/demo/events", fixture.auth("wall"))
            #expect(all.status == .ok && all.json["next"] as? Int == 2)
            #expect(
                (all.json["events"] as? [[String: Any]])?.compactMap { $0["type"] as? String } == [
                    "ChannelCreated", "BreakPlaced",
                ])
            let first = try await client.get("/channels/demo/events?limit=1", fixture.auth("wall"))
            #expect((first.json["events"] as? [Any])?.count == 1 && first.json["next"] as? Int == 1)
            let resumed = try await client.get(
                "/channels/demo/events", fixture.auth("wall", [HTTPField.Name("Last-Event-ID")!: "1"]))
            #expect((resumed.json["events"] as? [[String: Any]])?.compactMap { $0["version"] as? Int } == [2])
            let empty = try await client.get("/channels/demo/events?after=2", fixture.auth("wall"))
            #expect((empty.json["events"] as? [Any])?.isEmpty == true && empty.json["next"] == nil)
            let negative = try await client.get("/channels/demo/events?after=-1", fixture.auth("wall"))
            #expect(negative.status == .unprocessableContent && negative.error?.field == "after")
            let badLimit = try await client.get("/channels/demo/events?limit=ten", fixture.auth("wall"))
            #expect(badLimit.status == .unprocessableContent && badLimit.error?.field == "limit")
            let badID = try await client.get(
                "/channels/demo/events", fixture.auth("wall", [HTTPField.Name("Last-Event-ID")!: "x"]))
            #expect(badID.status == .unprocessableContent && badID.error?.field == "Last-Event-ID")
            #expect(try await client.get("/channels/demo/events", fixture.auth("news")).status == .forbidden)
            #expect(try await client.get("/channels/nope/events", fixture.auth("desk")).status == .notFound)
        }
    }

    @Test(
        "GET events: a limit out of 1…1000 is 422 naming limit and the range, not read as 1 or 1000",
        arguments: ["0", "1001", "-1", "99999999999999999999"])
    func eventLimitOutOfRange(limit: String) async throws {
        let fixture = try await Self.withBreak()
        try await fixture.test { [fixture] client in
            let answer = try await client.get("/channels/demo/events?limit=\(limit)", fixture.auth("wall"))
            #expect(answer.status == .unprocessableContent, "\(answer.text)")
            #expect(
                answer.error?.field == "limit" && answer.error?.message == "limit must be a whole number from 1 to 1000"
            )
            for fine in ["1", "1000", ""] {
                #expect(
                    try await client.get("/channels/demo/events?limit=\(fine)", fixture.auth("wall")).status == .ok,
                    "limit=\(fine)")
            }
        }
    }

    /// The live event stream of demo for token wall, whole: the token is revoked 300 ms in, which ends it.
    static func streamUntilRevoked(_ fixture: APIFixture, _ client: RouterClient, _ extra: HTTPFields = [:])
        async throws -> TestResponse
    {
        let tokens = fixture.tokens
        let revoke = Task {
            try await Task.sleep(for: .milliseconds(300))
            try await tokens.revoke(name: "wall")
        }
        var headers = extra
        headers[.accept] = "text/event-stream"
        let stream = try await client.get("/channels/demo/events", fixture.auth("wall", headers))
        try await revoke.value
        return stream
    }

    @Test("GET events as a live stream: the log, then the end of the stream once its token is revoked")
    func liveStreamEndsOnRevocation() async throws {
        let fixture = try await Self.withBreak()
        try await fixture.test { [fixture] client in
            let started = ContinuousClock.now
            let stream = try await Self.streamUntilRevoked(fixture, client)
            #expect(stream.status == .ok && stream.headers[.contentType] == "text/event-stream")
            #expect(stream.text.hasPrefix("retry: 1000\n\n"))
            #expect(stream.text.contains("id: 1\nevent: ChannelCreated\ndata: {"))
            #expect(stream.text.contains("id: 2\nevent: BreakPlaced\ndata: {"))
            #expect(stream.text.hasSuffix(": the token was revoked or no longer reaches this channel\n\n"))
            // Re-checked every 2 s through the token cache: ended well within the 5 s the README promises.
            #expect(ContinuousClock.now - started < .seconds(5))
            let refused = try await client.get(
                "/channels/demo/events", fixture.auth("wall", [.accept: "text/event-stream"]))
            #expect(refused.status == .unauthorized)
        }
    }

    @Test("a live stream resumed past the channel's version, even at Int64.max, says what it waits for")
    func liveStreamAheadOfTheLog() async throws {
        let fixture = try await Self.withBreak()
        try await fixture.test { [fixture] client in
            let stream = try await Self.streamUntilRevoked(
                fixture, client, [HTTPField.Name("Last-Event-ID")!: "9223372036854775807"])
            #expect(
                stream.text.hasPrefix(
                    "retry: 1000\n\n: 9223372036854775807 is past the channel's version 2: the events after version 9223372036854775807 will follow\n\n"
                ),
                "\(stream.text)")
            #expect(!stream.text.contains("event: "))
        }
    }

    @Test("event streams beyond a token's limit are 429, beyond the instance's 503, both with Retry-After")
    func streamLimits() async throws {
        var fixture = try await APIFixture()
        fixture.limits.maxStreamsPerToken = 0
        try await fixture.test { [fixture] client in
            let answer = try await client.get("/channels/demo/events?stream", fixture.auth("wall"))
            #expect(answer.status == .tooManyRequests && answer.headers[.retryAfter] == "10")
            #expect(answer.error?.message.hasPrefix("token wall already has 0 event streams open") == true)
        }
        fixture.limits.maxStreamsPerToken = 16
        fixture.limits.maxStreams = 0
        try await fixture.test { [fixture] client in
            let answer = try await client.get(
                "/channels/demo/events", fixture.auth("wall", [.accept: "text/event-stream"]))
            #expect(answer.status == .serviceUnavailable && answer.headers[.retryAfter] == "10")
        }
    }

    @Test(
        "GET replay: the playlist served at an instant, with its tick; 422 without at; 404 before the channel existed")
    func replay() async throws {
        let fixture = try await Self.withBreak()
        let served = try fixture.follower.mediaPlaylist("demo", rendition: "720p")
        try await fixture.test { [fixture] client in
            let answer = try await client.get(
                "/channels/demo/replay?at=\(served.tick.iso8601)&rendition=720p", fixture.auth("wall"))
            #expect(answer.status == .ok && answer.text == served.text)
            #expect(answer.headers[HTTPField.Name("X-Cueline-Tick")!] == served.tick.iso8601)
            #expect(answer.headers[.cacheControl] == "max-age=31536000")
            let multivariant = try await client.get(
                "/channels/demo/replay?at=\(served.tick.iso8601)&multivariant", fixture.auth("wall"))
            #expect(multivariant.status == .ok && multivariant.text.contains("720p.m3u8"))
            let missing = try await client.get("/channels/demo/replay", fixture.auth("wall"))
            #expect(missing.status == .unprocessableContent && missing.error?.field == "at")
            let garbage = try await client.get("/channels/demo/replay?at=yesterday", fixture.auth("wall"))
            #expect(garbage.status == .unprocessableContent && garbage.error?.field == "at")
            let before = try await client.get("/channels/nope/replay?at=2026-03-01T12:00:30Z", fixture.auth("desk"))
            #expect(before.status == .notFound)
            #expect(try await client.get("/channels/demo/replay?at=\(served.tick.iso8601)").status == .unauthorized)
        }
    }

    @Test("GET replay of an instant not yet served: 422 naming at, never a playlist cacheable for a year")
    func replayRefusesTheFuture() async throws {
        let fixture = try await Self.withBreak()
        try await fixture.test { [fixture] client in
            // The clock is at 60 s: 60 s itself was served, 60.001 s and next year were not.
            let now = try await client.get(
                "/channels/demo/replay?at=2026-03-01T12:01:00Z&rendition=720p", fixture.auth("wall"))
            #expect(now.status == .ok)
            for at in ["2026-03-01T12:01:00.001Z", "2027-03-01T12:00:00Z"] {
                let later = try await client.get("/channels/demo/replay?at=\(at)&rendition=720p", fixture.auth("wall"))
                #expect(later.status == .unprocessableContent && later.error?.field == "at")
                #expect(
                    later.error?.message.contains("is after this instance's clock (2026-03-01T12:01:00.000Z)") == true)
                #expect(later.headers[.cacheControl] == "no-cache")
            }
            // An unknown channel is that, at any instant.
            let unknown = try await client.get("/channels/nope/replay?at=2027-03-01T12:00:00Z", fixture.auth("desk"))
            #expect(unknown.status == .notFound)
            // Once the clock passes it, the same instant is answered.
            fixture.clock.set(61)
            let served = try await client.get(
                "/channels/demo/replay?at=2026-03-01T12:01:00.001Z&rendition=720p", fixture.auth("wall"))
            #expect(served.status == .ok)
        }
    }

    @Test("GET as-run: JSON and CSV; 422 for a bad from or to; 403; 404")
    func asRun() async throws {
        let fixture = try await Self.withBreak()
        fixture.clock.set(200)
        try await fixture.test { [fixture] client in
            let report = try await client.get("/channels/demo/as-run", fixture.auth("wall"))
            #expect(report.status == .ok && report.json["channel"] as? String == "demo")
            let entries = try #require(report.json["entries"] as? [[String: Any]])
            #expect(entries.count == 1 && report.json["totals"] != nil)
            let csv = try await client.get("/channels/demo/as-run?format=csv", fixture.auth("wall"))
            #expect(csv.status == .ok && csv.headers[.contentType] == "text/csv" && csv.text.contains("brk-1"))
            let from = try await client.get("/channels/demo/as-run?from=soon", fixture.auth("wall"))
            #expect(from.status == .unprocessableContent && from.error?.field == "from")
            let to = try await client.get("/channels/demo/as-run?to=1", fixture.auth("wall"))
            #expect(to.status == .unprocessableContent && to.error?.field == "to")
            let backwards = try await client.get(
                "/channels/demo/as-run?from=2026-03-01T12:02:00Z&to=2026-03-01T12:01:00Z", fixture.auth("wall"))
            #expect(backwards.status == .unprocessableContent && backwards.error?.field == "to")
            #expect(backwards.error?.message == "to must not be before from (2026-03-01T12:02:00.000Z)")
            let same = try await client.get(
                "/channels/demo/as-run?from=2026-03-01T12:01:00Z&to=2026-03-01T12:01:00Z", fixture.auth("wall"))
            #expect(same.status == .ok)
            let xml = try await client.get("/channels/demo/as-run?format=xml", fixture.auth("wall"))
            #expect(
                xml.status == .unprocessableContent && xml.error?.field == "format"
                    && xml.error?.message == "format must be csv or json")
            let upper = try await client.get("/channels/demo/as-run?format=CSV", fixture.auth("wall"))
            #expect(upper.status == .ok && upper.headers[.contentType] == "text/csv")
            let json = try await client.get("/channels/demo/as-run?format=json", fixture.auth("wall"))
            #expect(json.status == .ok && json.json["channel"] as? String == "demo")
            #expect(try await client.get("/channels/demo/as-run", fixture.auth("news")).status == .forbidden)
            #expect(try await client.get("/channels/nope/as-run", fixture.auth("desk")).status == .notFound)
        }
    }
}
