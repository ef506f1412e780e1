import Ads
import Foundation
import HLS
import Projector
import Schedule
import Synchronization
import Testing
import TestSupport

/// A channel whose break `brk-1` (30 s, 30 s from now: ad servers are asked only around a break) is filled by
/// `template`, with `fallback` as its own assets.
func decidedState(
    template: String, fallback: BreakAsset = .pod([]), settings: AdSettings = AdSettings(timeoutMilliseconds: 1500)
) throws -> ChannelState {
    let now = Int64(Date().timeIntervalSince1970) * 1000
    let epoch = Timestamp(milliseconds: now - now % 6000 - 60_000)
    var config = ChannelConfig(
        id: "ads", segmentDurationMilliseconds: 6000, windowSegments: 5, epoch: epoch,
        renditions: [RenditionConfig(name: "720p", bandwidth: 2_000_000, codecs: [], uriTemplate: "720p/seg{n}.ts")],
        publicBaseURL: "http://127.0.0.1:8080")
    config.ads = settings
    var state = ChannelState(channel: "ads")
    func fold(_ command: ScheduleCommand, at seconds: Int64) throws {
        let now = epoch.adding(milliseconds: seconds * 1000)
        for event in try decide(command, state: state, now: now) {
            state.apply(
                RecordedScheduleEvent(
                    event: event, version: state.version + 1, position: state.position + 1,
                    attribution: Attribution(at: now, actor: "test", source: "test")))
        }
    }
    try fold(.createChannel(config), at: 0)
    var place = PlaceBreak(
        id: "brk-1", start: .at(epoch.adding(milliseconds: 90_000)), plannedDurationMilliseconds: 30_000,
        asset: fallback)
    place.adServer = try AdServerTemplate(template, field: "ad_server")
    try fold(.placeBreak(place), at: 60)
    return state
}

/// The URLs a fake ad server was asked, in order.
final class Asked: Sendable {
    let urls = Mutex<[String]>([])
}

func assetURIs(_ body: String) throws -> [String] {
    let object = try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]
    return (object?["ASSETS"] as? [[String: Any]] ?? []).compactMap { $0["URI"] as? String }
}

@Suite(
    "Ad decisions against a test ad server over HTTP: every answer, hostile ones too, gets a list within the deadline",
    .enabled(if: TestAdServer.available, "python3 and scripts/lib/test_adserver.py are needed"),
    .serialized)
struct AdDecisionsTests {
    let server: TestAdServer
    let decisions = AdDecisions()

    init() throws {
        server = try TestAdServer()
    }

    /// Asks for the asset list of a break filled by `path` on the test server; the time it took.
    func ask(
        _ path: String, fallback: BreakAsset = .pod([]), settings: AdSettings = AdSettings(timeoutMilliseconds: 1500),
        primaryID: String? = "viewer-1", parameters: [String: String] = [:]
    ) async throws -> (answer: AdDecisions.Answer, elapsed: Duration) {
        let state = try decidedState(template: server.baseURL + path, fallback: fallback, settings: settings)
        let item = try #require(state.breakState("brk-1"))
        let started = ContinuousClock.now
        let answer = await decisions.assetList(
            state: state, item: item, request: AdDecisions.Request(primaryID: primaryID, parameters: parameters))
        return (answer, ContinuousClock.now - started)
    }

    @Test("a VAST 4.1 pod: the HLS creatives in sequence order, each with its duration and tracking")
    func pod() async throws {
        let (answer, _) = try await ask(
            "/vast/inline?ads=3&b={break_id}&pid={primary_id}&c={param.gdpr_consent}",
            parameters: ["gdpr_consent": "CPXx", "secret": "no"])
        #expect(answer.outcome == "decided")
        #expect(try assetURIs(answer.body) == (1...3).map { "http://127.0.0.1:9/media/ad/pod\($0).m3u8" })
        #expect(answer.body.contains(#""DURATION":6.000"#))
        #expect(answer.body.contains(#""X-AD-CREATIVE-SIGNALING":{"version":2,"type":"slot""#))
        // What the template sent, as the ad server received it.
        let log = try #require(try await server.stats()["log"] as? [[String: Any]])
        let asked = try #require(log.last { $0["path"] as? String == "/vast/inline" })
        let query = try #require(asked["query"] as? [String: String])
        #expect(query["b"] == "brk-1")
        #expect(query["pid"] == "viewer-1")
        #expect(query["c"] == "CPXx")
    }

    @Test(
        "answers that decide: VAST 3.0, wrappers, VMAP, redirects, the wrong content type, a byte-order mark",
        arguments: [
            ("/vast/inline?ads=2&version=3.0", 2), ("/vast/wrapper?depth=3&ads=2", 2), ("/vmap?breaks=2", 1),
            ("/vast/redirect?n=3", 1), ("/vast/wrong-type", 1), ("/vast/bom", 1), ("/vast/mixed", 2),
        ])
    func decides(path: String, count: Int) async throws {
        let (answer, elapsed) = try await ask(path)
        #expect(answer.outcome == "decided", "\(path): \(answer.notes)")
        #expect(try assetURIs(answer.body).count == count, "\(path): \(answer.body)")
        #expect(elapsed < .milliseconds(1500))
    }

    @Test(
        "answers that fall back to the break's own asset: at once when the answer is unusable, at the deadline when none comes",
        arguments: [
            ("/vast/empty", "empty", 500), ("/vast/empty-error", "empty", 500), ("/vast/no-hls", "empty", 500),
            ("/vast/malformed", "error", 500), ("/vast/not-xml", "error", 500), ("/vast/billion-laughs", "error", 500),
            ("/vast/external-entity", "error", 500), ("/vast/huge?mb=10&chunked=0", "error", 500),
            ("/vast/huge?mb=10&chunked=1", "error", 500), ("/vast/redirect-loop", "error", 500),
            ("/vast/status?code=500", "error", 500), ("/vast/status?code=204", "empty", 500),
            ("/vast/wrapper-loop", "empty", 500), ("/vast/wrapper-dead", "empty", 500),
            // Nothing whole by the deadline (1.5 s): answered then, plus the time to answer on a loaded machine.
            ("/vast/slow?ms=3000", "timeout", 1900), ("/vast/drip", "timeout", 1900),
        ])
    func fallsBack(path: String, outcome: String, withinMilliseconds: Int) async throws {
        let fallback = BreakAsset.uri("https://cdn.example.com/house/promo.m3u8")
        let (answer, elapsed) = try await ask(path, fallback: fallback)
        #expect(answer.outcome == outcome, "\(path): \(answer.notes)")
        #expect(try assetURIs(answer.body) == ["https://cdn.example.com/house/promo.m3u8"], "\(path)")
        #expect(elapsed < .milliseconds(withinMilliseconds), "\(path) took \(elapsed)")
        // Given up 50 ms before the 1.5 s timeout, so that the answer reaches the viewer by it.
        if outcome == "timeout" { #expect(elapsed >= .milliseconds(1450), "\(path) answered before its deadline") }
        #expect(!answer.notes.isEmpty)
        if path == "/vast/wrapper-loop" { #expect(answer.notes.contains { $0.contains("a loop") }, "\(answer.notes)") }
    }

    @Test("a preroll decided for a viewer who joins: fitted to the preroll's length; nothing usable is no preroll")
    func preroll() async throws {
        let state = try decidedState(template: server.baseURL + "/vast/inline?ads=1")
        let ask = { (path: String) async throws -> AdDecisions.Answer in
            await decisions.prerollAssetList(
                state: state, rangeID: "preroll.7.0a0b0c0d",
                template: try AdServerTemplate(self.server.baseURL + path, field: "preroll_ad_server"),
                durationMilliseconds: 20_000, request: AdDecisions.Request(primaryID: "viewer-9", parameters: [:]))
        }
        // Two 15 s ads for a 20 s preroll: the first fits.
        let decided = try await ask("/vast/inline?ads=2&dur=15&pre={break_id}&d={duration}&pid={primary_id}")
        #expect(decided.outcome == "decided", "\(decided.notes)")
        #expect(try assetURIs(decided.body).count == 1)
        let log = try #require(try await server.stats()["log"] as? [[String: Any]])
        let query = try #require(log.last { $0["path"] as? String == "/vast/inline" }?["query"] as? [String: String])
        #expect(query["pre"] == "preroll.7.0a0b0c0d" && query["d"] == "20" && query["pid"] == "viewer-9")
        let empty = try await ask("/vast/status?code=500")
        #expect(empty.outcome == "error")
        #expect(empty.body == #"{"ASSETS":[]}"#)
    }

    @Test("ads longer than the break: the first fits, the others are dropped and said")
    func overflow() async throws {
        let (answer, _) = try await ask("/vast/long?ads=3&dur=30")
        #expect(answer.outcome == "decided")
        #expect(try assetURIs(answer.body).count == 1)
        #expect(answer.notes.filter { $0.contains("does not fit") }.count == 2)
    }

    @Test("with nothing of its own and no slate, a failed decision is an empty list: players resume the programme")
    func emptyFallback() async throws {
        let (answer, _) = try await ask("/vast/status?code=503")
        #expect(answer.body == #"{"ASSETS":[]}"#)
        var settings = AdSettings(timeoutMilliseconds: 1500)
        settings.slate = AdSettings.Slate(uri: "https://cdn.example.com/slate.m3u8", durationMilliseconds: 15_000)
        let (slate, _) = try await ask("/vast/status?code=503", settings: settings)
        #expect(try assetURIs(slate.body) == Array(repeating: "https://cdn.example.com/slate.m3u8", count: 2))
    }

    @Test(
        "200 viewers at once with a concurrency of 4: the ad server never sees more than 4, every viewer is answered within the deadline"
    )
    func concurrency() async throws {
        try await server.reset()
        let settings = AdSettings(timeoutMilliseconds: 1000, concurrency: 4)
        let state = try decidedState(template: server.baseURL + "/vast/inline?ads=1&hold_ms=300", settings: settings)
        let item = try #require(state.breakState("brk-1"))
        let decisions = self.decisions
        let results = await withTaskGroup(of: (String, Duration).self) { group in
            for viewer in 0..<200 {
                group.addTask {
                    let started = ContinuousClock.now
                    let answer = await decisions.assetList(
                        state: state, item: item, request: AdDecisions.Request(primaryID: "v\(viewer)", parameters: [:])
                    )
                    return (answer.outcome, ContinuousClock.now - started)
                }
            }
            var results: [(String, Duration)] = []
            for await result in group { results.append(result) }
            return results
        }
        let stats = try await server.stats()
        #expect((stats["max_in_flight"] as? Int ?? 99) <= 4)
        let decided = results.filter { $0.0 == "decided" }.count
        // 1 s of 300 ms answers, 4 at a time: about 12 decided on an idle machine; at least the first four.
        #expect(decided >= 4 && decided <= 16, "\(decided) decided")
        #expect(results.count == 200)
        #expect(results.allSatisfy { $0.1 < .milliseconds(1300) }, "slowest \(results.map(\.1).max()!)")
        #expect(Set(results.map(\.0)).isSubset(of: ["decided", "busy", "timeout"]))
    }

    @Test("server-side beacons: impressions fired when the list is served, none in the list")
    func serverBeacons() async throws {
        try await server.reset()
        var settings = AdSettings(timeoutMilliseconds: 1500)
        settings.beacons = .server
        let (answer, _) = try await ask("/vast/inline?ads=2", settings: settings)
        #expect(answer.outcome == "decided")
        #expect(!answer.body.contains("X-AD-CREATIVE-SIGNALING"))
        let deadline = ContinuousClock.now + .seconds(5)
        var impressions = 0
        while ContinuousClock.now < deadline {
            let tracking = try await server.stats()["tracking"] as? [[String: Any]] ?? []
            impressions = tracking.filter { $0["event"] as? String == "impression" }.count
            if impressions >= 4 { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        // Two ads, two impressions each.
        #expect(impressions == 4)
    }

    @Test("a wrapper from an ad server on the internet pointing into the plant's network is not followed")
    func privateHop() async throws {
        let asked = Asked()
        let decisions = AdDecisions(fetch: { url, _ throws(AdResolutionFailure) in
            asked.urls.withLock { $0.append(url) }
            return Data(
                """
                <VAST version="4.1"><Ad id="w"><Wrapper><VASTAdTagURI>http://169.254.169.254/latest/meta-data/</VASTAdTagURI>
                </Wrapper></Ad></VAST>
                """.utf8)
        })
        let state = try decidedState(template: "https://ads.example.com/vast?b={break_id}")
        let answer = await decisions.assetList(
            state: state, item: try #require(state.breakState("brk-1")),
            request: AdDecisions.Request(primaryID: "v", parameters: [:]))
        #expect(answer.outcome == "empty")
        #expect(asked.urls.withLock { $0 } == ["https://ads.example.com/vast?b=brk-1"])
        #expect(answer.notes.contains { $0.contains("private address: not asked") }, "\(answer.notes)")
    }

    @Test("an ad server that stopped answering in time is not asked again, but by one probe a second, until it answers")
    func probesOnly() async throws {
        let settings = AdSettings(timeoutMilliseconds: 200)
        try await server.reset()
        // The first request times out (it reached the ad server, which works on it for 3 s).
        let (first, _) = try await ask("/vast/slow?ms=3000", settings: settings)
        #expect(first.outcome == "timeout")
        // Asked again at once: its usual answer time is the whole timeout, so no request goes: the fallback at once.
        for _ in 0..<10 {
            let (again, elapsed) = try await ask("/vast/slow?ms=3000", settings: settings)
            #expect(again.outcome == "busy", "\(again.notes)")
            #expect(elapsed < .milliseconds(100))
        }
        var asked = try await server.stats()["requests"] as? [String: Int]
        #expect(asked?["/vast/slow"] == 1, "\(asked ?? [:])")
        // A second later one probe goes; answered in time, the ad server is asked as before.
        try await Task.sleep(for: .milliseconds(1100))
        let (probe, _) = try await ask("/vast/inline?ads=1", settings: settings)
        #expect(probe.outcome == "decided", "\(probe.notes)")
        let (after, _) = try await ask("/vast/inline?ads=1", settings: settings)
        #expect(after.outcome == "decided", "\(after.notes)")
        asked = try await server.stats()["requests"] as? [String: Int]
        #expect(asked?["/vast/slow"] == 1 && asked?["/vast/inline"] == 2, "\(asked ?? [:])")
    }

    @Test("a break long over, or far ahead, is not asked for: the fallback at once")
    func outsideTheBreak() async throws {
        let asked = Asked()
        let decisions = AdDecisions(fetch: { url, _ throws(AdResolutionFailure) in
            asked.urls.withLock { $0.append(url) }
            return Data("<VAST version=\"4.1\"/>".utf8)
        })
        let state = try decidedState(template: "https://ads.example.com/vast")
        var item = try #require(state.breakState("brk-1"))
        item.spec.start = item.start.adding(milliseconds: -3_600_000)
        #expect(
            await decisions.assetList(state: state, item: item, request: .init(primaryID: nil, parameters: [:])).outcome
                == "outside")
        item.spec.start = item.start.adding(milliseconds: 2 * 3_600_000)
        #expect(
            await decisions.assetList(state: state, item: item, request: .init(primaryID: nil, parameters: [:])).outcome
                == "outside")
        #expect(asked.urls.withLock { $0 }.isEmpty)
    }
}
