import API
import Foundation
import HTTPTypes
import Hummingbird
import Schedule
import HLS
import Testing
import TestSupport

@Suite("Playlist routes, in process")
struct PlaylistRouteTests {
    @Test(
        "multivariant and media playlists: 200 with their cache lifetimes and the tick; HEAD without a body; 404s name what is missing"
    )
    func playlists() async throws {
        let fixture = try await APIFixture()
        try await fixture.test { client in
            let master = try await client.get("/channels/demo/master.m3u8")
            #expect(master.status == .ok && master.text.hasPrefix("#EXTM3U"))
            #expect(
                master.headers[.contentType] == "application/vnd.apple.mpegurl"
                    && master.headers[.cacheControl] == "max-age=30")
            #expect(master.text.contains("720p.m3u8") && master.text.contains("360p.m3u8"))
            let media = try await client.get("/channels/demo/720p.m3u8")
            #expect(media.status == .ok && media.text.contains("#EXT-X-TARGETDURATION:6"))
            #expect(media.headers[.cacheControl] == "max-age=3")
            #expect(media.headers[HTTPField.Name("X-Cueline-Tick")!] == "2026-03-01T12:01:00.000Z")
            let head = try await client.execute(uri: "/channels/demo/720p.m3u8", method: .head)
            #expect(head.status == .ok && head.body.readableBytes == 0)

            let unknownChannel = try await client.get("/channels/nope/720p.m3u8")
            #expect(
                unknownChannel.status == .notFound && unknownChannel.error?.message == "channel nope does not exist")
            #expect(unknownChannel.error?.field == nil)
            let unknownRendition = try await client.get("/channels/demo/1080p.m3u8")
            #expect(
                unknownRendition.status == .notFound
                    && unknownRendition.error?.message == "channel demo has no rendition 1080p")
            let notPlaylist = try await client.get("/channels/demo/720p.ts")
            #expect(notPlaylist.status == .notFound && notPlaylist.error?.message == "no such resource: 720p.ts")
            #expect(try await client.get("/channels/nope/master.m3u8").status == .notFound)
        }
    }

    @Test(
        "LL-HLS delivery directives: a part already there is answered at once; malformed or far-ahead ones are 400 naming the directive; _HLS_skip answers the delta; a channel without parts ignores them"
    )
    func deliveryDirectives() async throws {
        let fixture = try await APIFixture.lowLatency()  // segment 60 in progress, its parts 0 and 1 have ended
        try await fixture.test { client in
            let full = try await client.get("/channels/ll/720p.m3u8")
            #expect(
                full.status == .ok
                    && full.text.contains(#"#EXT-X-PRELOAD-HINT:TYPE=PART,URI="https://cdn.example/720p/seg60.2.m4s""#))
            // Part 1 of segment 60 exists: answered at once with the current playlist (which may have changed since that
            // part ended, so it is not kept longer than a plain playlist).
            let held = try await client.get("/channels/ll/720p.m3u8?_HLS_msn=60&_HLS_part=1")
            #expect(held.status == .ok && held.text == full.text && held.headers[.cacheControl] == "max-age=1")
            #expect(try await client.get("/channels/ll/720p.m3u8?_HLS_msn=59").status == .ok)
            for (query, field) in [
                ("_HLS_msn=x", "_HLS_msn"), ("_HLS_msn=-1", "_HLS_msn"), ("_HLS_msn=1234567890123456789", "_HLS_msn"),
                ("_HLS_part=1", "_HLS_part"), ("_HLS_msn=60&_HLS_part=1234567", "_HLS_part"),
                ("_HLS_skip=yes", "_HLS_skip"),
                ("_HLS_msn=62", "_HLS_msn"),  // the last complete segment is 59
                ("_HLS_msn=60&_HLS_part=99", "_HLS_part"),  // beyond the Advance Part Limit: 12 parts of 0.25 s
                ("_HLS_msn=61&_HLS_part=10", "_HLS_part"),
            ] {
                let answer = try await client.get("/channels/ll/720p.m3u8?" + query)
                #expect(
                    answer.status == .badRequest && answer.error?.field == field,
                    "\(query): \(answer.status) \(answer.text)")
            }
            let delta = try await client.get("/channels/ll/720p.m3u8?_HLS_skip=v2")
            #expect(
                delta.status == .ok
                    && delta.text.contains("#EXT-X-SKIP:SKIPPED-SEGMENTS=4,RECENTLY-REMOVED-DATERANGES=\"\""))
            let yes = try await client.get("/channels/ll/720p.m3u8?_HLS_skip=YES&_HLS_msn=60&_HLS_part=0")
            #expect(yes.status == .ok && yes.text.contains("#EXT-X-SKIP:SKIPPED-SEGMENTS=4\n"))
            // The same directives on a channel without parts: the full playlist, at once.
            let plain = try await client.get("/channels/demo/720p.m3u8?_HLS_msn=99&_HLS_skip=v2")
            #expect(plain.status == .ok && !plain.text.contains("EXT-X-SKIP"))
        }
    }

    /// An LL-HLS upstream playlist of `rendition`: segments up to `complete` (1 s, from the fixture's epoch), then
    /// `partial` parts of the next one, with the hint and a report of the other rendition.
    /// Relay channel `rl` (renditions 720p and 360p) at 80.6 s, each upstream at segment 80 with parts 0 and 1.
    static func relayFixture() async throws -> APIFixture {
        let fixture = try await APIFixture()
        var config = APIFixture.config("rl")
        config.source = .relay(upstream: "http://encoder.example/{rendition}/index.m3u8")
        for index in config.renditions.indices { config.renditions[index].uriTemplate = "" }
        _ = try await fixture.handler.handle(.createChannel(config), channel: "rl", context: APIFixture.context())
        try await fixture.follower.catchUp()
        fixture.clock.set(80.6)
        fixture.follower.updateUpstream(
            "rl", rendition: "720p", playlist: try upstream("720p", complete: 79, partial: 2))
        fixture.follower.updateUpstream(
            "rl", rendition: "360p", playlist: try upstream("360p", complete: 79, partial: 2))
        return fixture
    }

    static func upstream(_ rendition: String, complete: Int64, partial: Int) throws -> MediaPlaylist {
        var lines = [
            "#EXTM3U", "#EXT-X-VERSION:6", "#EXT-X-TARGETDURATION:1",
            "#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,PART-HOLD-BACK=0.75",
            "#EXT-X-PART-INF:PART-TARGET=0.25", "#EXT-X-MEDIA-SEQUENCE:\(complete - 5)",
        ]
        for n in (complete - 5)...complete {
            lines += [
                "#EXT-X-PROGRAM-DATE-TIME:\(TestClock.epoch.adding(milliseconds: n * 1000).iso8601)", "#EXTINF:1.0,",
                "seg\(n).m4s",
            ]
        }
        lines += (0..<partial).map { #"#EXT-X-PART:DURATION=0.25,URI="seg\#(complete + 1).\#($0).m4s""# }
        lines.append(#"#EXT-X-PRELOAD-HINT:TYPE=PART,URI="seg\#(complete + 1).\#(partial).m4s""#)
        return try PlaylistParser.parseMedia(lines.joined(separator: "\n") + "\n").playlist
    }

    @Test("a relay channel with an LL-HLS upstream: each rendition's requests wait for its own upstream's next part")
    func relayBlockingReload() async throws {
        let fixture = try await Self.relayFixture()
        try await fixture.test { [fixture] client in
            let full = try await client.get("/channels/rl/720p.m3u8")
            #expect(
                full.status == .ok
                    && full.text.contains("#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,PART-HOLD-BACK=0.75\n"),
                "\(full.text)")
            // There already (part 1 of segment 80, all of 79): at once.
            #expect(try await client.get("/channels/rl/720p.m3u8?_HLS_msn=80&_HLS_part=1").text == full.text)
            #expect(try await client.get("/channels/rl/720p.m3u8?_HLS_msn=79").text == full.text)
            for (query, field) in [
                ("_HLS_msn=82", "_HLS_msn"), ("_HLS_msn=80&_HLS_part=15", "_HLS_part"),
                ("_HLS_msn=81&_HLS_part=12", "_HLS_part"),
            ] {
                let answer = try await client.get("/channels/rl/720p.m3u8?" + query)
                #expect(
                    answer.status == .badRequest && answer.error?.field == field,
                    "\(query): \(answer.status) \(answer.text)")
            }
            // Held until that rendition's upstream lists the part: 360p's next part does not release a 720p request.
            async let held = client.get("/channels/rl/720p.m3u8?_HLS_msn=80&_HLS_part=2")
            try await Self.waitUntil { fixture.follower.blockedRequests == 1 }
            fixture.follower.updateUpstream(
                "rl", rendition: "360p", playlist: try Self.upstream("360p", complete: 79, partial: 3))
            try await Task.sleep(for: .milliseconds(50))
            #expect(fixture.follower.blockedRequests == 1)
            fixture.follower.updateUpstream(
                "rl", rendition: "720p", playlist: try Self.upstream("720p", complete: 79, partial: 3))
            let answer = try await held
            #expect(
                answer.status == .ok && answer.text.contains(#"URI="http://encoder.example/720p/seg80.2.m4s""#),
                "\(answer.text)")
            #expect(answer.headers[.cacheControl] == "max-age=6", "6 target durations of the upstream")
            #expect(fixture.follower.blockedRequests == 0)

            // The packager restarts behind where it was (segment 1000, then 79 again): a request for a part it has not
            // reached again is held until it does, not woken at once into a loop by the position it had before.
            fixture.follower.updateUpstream(
                "rl", rendition: "720p", playlist: try Self.upstream("720p", complete: 1000, partial: 1))
            fixture.follower.updateUpstream(
                "rl", rendition: "720p", playlist: try Self.upstream("720p", complete: 79, partial: 3))
            async let again = client.get("/channels/rl/720p.m3u8?_HLS_msn=80&_HLS_part=3")
            try await Self.waitUntil { fixture.follower.blockedRequests == 1 }
            try await Task.sleep(for: .milliseconds(100))
            #expect(fixture.follower.blockedRequests == 1)
            fixture.follower.updateUpstream(
                "rl", rendition: "720p", playlist: try Self.upstream("720p", complete: 80, partial: 0))
            let restarted = try await again
            #expect(restarted.status == .ok && restarted.text.contains("seg80.m4s"), "\(restarted.text)")

            // An upstream that drops its parts: nothing to wait for, the held request is answered with what there is.
            async let dropped = client.get("/channels/rl/720p.m3u8?_HLS_msn=81&_HLS_part=1")
            try await Self.waitUntil { fixture.follower.blockedRequests == 1 }
            var segmentsOnly = try Self.upstream("720p", complete: 80, partial: 0)
            segmentsOnly.serverControl = nil
            fixture.follower.updateUpstream("rl", rendition: "720p", playlist: segmentsOnly)
            let plain = try await dropped
            #expect(plain.status == .ok && !plain.text.contains("#EXT-X-PART"), "\(plain.text)")
            // A read of an upstream URL the channel no longer names is not kept.
            fixture.follower.updateUpstream(
                "rl", rendition: "720p", playlist: try Self.upstream("720p", complete: 90, partial: 0),
                from: "http://old-encoder.example/720p/index.m3u8")
            #expect(!(try await client.get("/channels/rl/720p.m3u8").text.contains("seg90.m4s")))
        }
    }

    /// Waits (at most 5 s) until `condition` holds; fails the test instead of hanging.
    static func waitUntil(_ condition: @Sendable () -> Bool) async throws {
        if try await !eventually(condition) { Issue.record("the condition did not hold within 5 s") }
    }

    @Test("a channel whose first segment is not due yet answers 503 with when it is")
    func notStarted() async throws {
        let fixture = try await APIFixture()
        let later = TestClock.epoch.adding(milliseconds: 3_600_000)
        _ = try await fixture.handler.handle(
            .createChannel(APIFixture.config("later", epoch: later)), channel: "later", context: APIFixture.context())
        try await fixture.follower.catchUp()
        // Past the moment the channel's creation takes effect.
        fixture.clock.set(61)
        try await fixture.test { client in
            let answer = try await client.get("/channels/later/720p.m3u8")
            #expect(answer.status == .serviceUnavailable)
            #expect(answer.error?.message.hasPrefix("channel later has not started") == true)
        }
    }

    @Test("asset lists: a pod break's list, 404 for an unknown break or channel")
    func assetLists() async throws {
        let fixture = try await APIFixture()
        _ = try await fixture.handler.handle(
            .placeBreak(
                PlaceBreak(
                    id: "pod-1", start: .inMilliseconds(30_000), plannedDurationMilliseconds: 20_000,
                    asset: .pod([
                        PodAsset(uri: "https://ads.example/a.m3u8", durationMilliseconds: 10_000),
                        PodAsset(uri: "https://ads.example/b.m3u8", durationMilliseconds: 10_000),
                    ]))),
            channel: "demo", context: APIFixture.context())
        try await fixture.follower.catchUp()
        try await fixture.test { client in
            let list = try await client.get(
                "/channels/demo/breaks/pod-1/assets.json?_HLS_primary_id=x&_HLS_start_offset=3")
            #expect(
                list.status == .ok && list.headers[.contentType] == "application/json"
                    && list.headers[.cacheControl] == "no-cache")
            let assets = try #require(list.json["ASSETS"] as? [[String: Any]])
            #expect(
                assets.compactMap { $0["URI"] as? String } == [
                    "https://ads.example/a.m3u8", "https://ads.example/b.m3u8",
                ])
            let unknownBreak = try await client.get("/channels/demo/breaks/nope/assets.json")
            #expect(
                unknownBreak.status == .notFound
                    && unknownBreak.error?.message == "break nope does not exist on channel demo")
            #expect(try await client.get("/channels/nope/breaks/pod-1/assets.json").status == .notFound)
        }
    }

    @Test(
        "chunks of a measured asset: 200 per chunk, 404 for names that are not chunks, 502 when the asset cannot be read or changed"
    )
    func chunks() async throws {
        var fixture = try await APIFixture()
        fixture.open = true
        let uri = "https://ads.example/ad.m3u8"
        fixture.assets.bodies.withLock { $0[uri] = FakeAssets.vod(segments: 5) }
        try await fixture.test { [fixture] client in
            let placed = try await client.post(
                "/channels/demo/commands",
                #"{"command":"place_break","id":"ad-1","in":30,"duration":10,"asset_uri":"\#(uri)"}"#)
            #expect(placed.status == .created, "\(placed.text)")
            let list = try await client.get("/channels/demo/breaks/ad-1/assets.json")
            #expect(
                list.status == .ok && list.text.contains("/channels/demo/breaks/ad-1/chunks/0-0.m3u8"), "\(list.text)")
            let chunk = try await client.get("/channels/demo/breaks/ad-1/chunks/0-1.m3u8")
            #expect(chunk.status == .ok && chunk.headers[.cacheControl] == "max-age=600")
            #expect(
                chunk.text.contains("https://ads.example/seg1.ts")
                    && !chunk.text.contains("https://ads.example/seg0.ts"))
            for bad in ["0-01.m3u8", "0-1.ts", "0-1-0.m3u8", "x-1.m3u8", "0-99.m3u8", "0.m3u8"] {
                let answer = try await client.get("/channels/demo/breaks/ad-1/chunks/\(bad)")
                #expect(answer.status == .notFound && answer.error?.message == "no such chunk: \(bad)", "\(bad)")
            }
            #expect(try await client.get("/channels/nope/breaks/ad-1/chunks/0-0.m3u8").status == .notFound)
            // The asset shrank: the last chunk's span holds no segment any more.
            fixture.assets.bodies.withLock { $0[uri] = FakeAssets.vod(segments: 2) }
            let changed = try await client.get("/channels/demo/breaks/ad-1/chunks/0-4.m3u8")
            #expect(
                changed.status == .badGateway && changed.error?.message.contains("changed since it was placed") == true)
            // The asset's server is gone: the answer says so without its details.
            fixture.assets.bodies.withLock { $0[uri] = nil }
            let gone = try await client.get("/channels/demo/breaks/ad-1/chunks/0-3.m3u8")
            #expect(gone.status == .badGateway && gone.error?.message == "the asset of break ad-1 cannot be read now")
        }
    }
}
