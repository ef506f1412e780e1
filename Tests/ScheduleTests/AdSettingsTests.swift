import Foundation
import HLS
import Schedule
import Testing

@Suite("Ad settings, ad server templates and breaks filled by an ad server")
struct AdSettingsTests {
    func template(_ text: String) throws -> AdServerTemplate { try AdServerTemplate(text, field: "ad_server") }

    @Test("a template is filled with percent-encoded values; only allow-listed player parameters are passed on")
    func fill() throws {
        let url = try template(
            "https://ads.example.com/vast/{channel}?b={break_id}&d={duration}&s={start}&pid={primary_id}&c={param.gdpr_consent}&x={param.ifa}"
        ).url(
            AdServerTemplate.Values(
                breakID: "brk-1", channel: "demo", durationMilliseconds: 30_000, start: at(90),
                primaryID: "a b/ü&x=1",
                parameters: ["gdpr_consent": "CO&x", "ifa": String(repeating: "9", count: 600), "secret": "s"]))
        #expect(
            url
                == "https://ads.example.com/vast/demo?b=brk-1&d=30&s=2026-03-01T12%3A01%3A30.000Z&pid=a%20b%2F%C3%BC%26x%3D1&c=CO%26x&x="
        )
        let fraction = try template("https://ads.example.com/?d={duration}").url(
            AdServerTemplate.Values(
                breakID: "b", channel: "c", durationMilliseconds: 12_500, start: at(0), primaryID: nil))
        #expect(fraction == "https://ads.example.com/?d=12.500")
    }

    @Test(
        "templates refused, each naming what is wrong",
        arguments: [
            ("https://{channel}.ads.example.com/vast", "before its path"),
            ("https://ads.example.com:{duration}/vast", "before its path"),
            ("https://ads.example.com/vast?x={secret}", "unknown placeholder {secret}"),
            ("https://ads.example.com/vast?x={param.cookie}", "unknown placeholder {param.cookie}"),
            ("https://ads.example.com/vast?x={channel", "unmatched '{'"),
            ("https://ads.example.com/vast?x=}", "unmatched '}'"),
            ("ftp://ads.example.com/vast", "absolute http:// or https://"),
            ("https://ads.example.com/va st", "a space"),
        ])
    func refused(text: String, reason: String) {
        #expect(
            AdServerTemplate.problem(in: text)?.contains(reason) == true,
            "\(String(describing: AdServerTemplate.problem(in: text)))")
    }

    @Test("a break without assets of its own is refused, unless an ad server fills it; then it is kept with the break")
    func decidedBreak() throws {
        var channel = try Channel()
        let empty = PlaceBreak(
            id: "brk-1", start: .at(at(90)), plannedDurationMilliseconds: 30_000, asset: .pod([]))
        #expect(
            throws: ScheduleError.invalidField(
                "asset_uri",
                "give one of asset_uri, asset_list or pod (with at least one asset): a break without assets needs an ad server to fill it (its ad_server, or the channel's)"
            )
        ) {
            try channel.apply(.placeBreak(empty), at: at(60))
        }
        var decided = empty
        decided.adServer = try template("https://ads.example.com/vast?b={break_id}")
        let events = try channel.apply(.placeBreak(decided), at: at(60))
        guard case .breakPlaced(let spec)? = events.first else {
            Issue.record("no break placed")
            return
        }
        #expect(spec.adServer == decided.adServer)
        #expect(EventCodec.encode(events[0]).schemaVersion == 3)
        // Its X-ASSET-LIST is this service's asset list; with no slate its fallback is an empty list.
        #expect(
            try channel.render("720p", at: at(72)).contains(
                #"X-ASSET-LIST="http://127.0.0.1:8080/channels/demo/breaks/brk-1/assets.json?_HLS_interstitial_id=brk-1""#
            ))
        #expect(PlaylistBuilder.assetList(state: channel.state, breakID: "brk-1") == #"{"ASSETS":[]}"#)
        // An external asset list is no fallback.
        var list = decided
        list.id = "brk-2"
        list.start = .at(at(200))
        list.asset = .list("https://ssai.example.com/list.json")
        #expect(throws: ScheduleError.self) { try channel.apply(.placeBreak(list), at: at(60)) }
    }

    @Test("the channel's ad server fills breaks placed after it is set; the slate fills a break the ad server cannot")
    func channelDefault() throws {
        var config = demoConfig()
        config.ads = AdSettings()
        var channel = try Channel(config)
        try channel.apply(
            .setAdSettings(
                AdSettingsChange(
                    adServer: .some(try template("https://ads.example.com/live")),
                    slate: .some(
                        AdSettings.Slate(uri: "https://cdn.example.com/slate.m3u8", durationMilliseconds: 10_000)))),
            at: at(30))
        #expect(channel.state.adSettings?.adServer?.value == "https://ads.example.com/live")
        #expect(channel.state.rendererVersion == 3)
        try channel.apply(
            .placeBreak(
                PlaceBreak(id: "brk-1", start: .at(at(90)), plannedDurationMilliseconds: 25_000, asset: .pod([]))),
            at: at(60))
        #expect(channel.state.breakState("brk-1")?.spec.adServer?.value == "https://ads.example.com/live")
        // 25 s of a 10 s slate: two whole plays (a third would run past the break, and nothing would cut it).
        #expect(
            PlaylistBuilder.assetList(state: channel.state, breakID: "brk-1")
                == #"{"ASSETS":[{"URI":"https://cdn.example.com/slate.m3u8","DURATION":10.000},{"URI":"https://cdn.example.com/slate.m3u8","DURATION":10.000}]}"#
        )
        // Removing the channel's ad server: later breaks need assets again; the placed one keeps its ad server.
        try channel.apply(.setAdSettings(AdSettingsChange(adServer: .some(nil))), at: at(61))
        #expect(channel.state.adSettings?.adServer == nil)
        #expect(channel.state.adSettings?.slate?.uri == "https://cdn.example.com/slate.m3u8")
        #expect(channel.state.breakState("brk-1")?.spec.adServer != nil)
    }

    @Test("settings are checked, each error naming its field; an empty change is refused")
    func validation() throws {
        var channel = try Channel()
        #expect(throws: ScheduleError.invalidField("ads", "names no setting to change")) {
            try channel.apply(.setAdSettings(AdSettingsChange()), at: at(1))
        }
        for (change, field) in [
            (AdSettingsChange(timeoutMilliseconds: 50), "ad_timeout"),
            (AdSettingsChange(concurrency: 0), "ad_concurrency"),
            (AdSettingsChange(preloadMilliseconds: 700_000), "preload"),
            (AdSettingsChange(slate: .some(AdSettings.Slate(uri: "slate.m3u8", durationMilliseconds: nil))), "slate"),
        ] {
            do {
                try channel.apply(.setAdSettings(change), at: at(1))
                Issue.record("\(field) accepted")
            } catch {
                #expect((error as? ScheduleError)?.field == field)
            }
        }
        // A channel created before ad settings gets the defaults with its first change.
        try channel.apply(.setAdSettings(AdSettingsChange(concurrency: 4)), at: at(2))
        #expect(channel.state.adSettings == AdSettings(concurrency: 4))
    }

    @Test("skip control: whole seconds inside the break, a label of letters, '-' and '_'")
    func skip() throws {
        var channel = try Channel()
        func place(_ skip: SkipControl) throws {
            try channel.apply(
                .placeBreak(
                    PlaceBreak(
                        id: "brk-1", start: .at(at(90)), plannedDurationMilliseconds: 30_000,
                        asset: .uri("https://ads.example.com/a.m3u8"), options: InterstitialOptions(skipControl: skip))),
                at: at(60))
        }
        for (skip, field) in [
            (SkipControl(offsetMilliseconds: 1500), "skip_offset"),
            (SkipControl(offsetMilliseconds: 30_000), "skip_offset"),
            (SkipControl(offsetMilliseconds: 5000, durationMilliseconds: 0), "skip_duration"),
            (SkipControl(offsetMilliseconds: 5000, labelID: "skip2"), "skip_label"),
        ] {
            do {
                try place(skip)
                Issue.record("\(skip) accepted")
            } catch {
                #expect((error as? ScheduleError)?.field == field)
            }
        }
        try place(SkipControl(offsetMilliseconds: 5000, durationMilliseconds: 10_000, labelID: "Skip-Ad"))
        #expect(
            try channel.render("720p", at: at(72)).contains(
                #"X-SKIP-CONTROL-OFFSET=5,X-SKIP-CONTROL-DURATION=10,X-SKIP-CONTROL-LABEL-ID="Skip-Ad""#))
    }

    @Test("a channel without ad settings renders as it always did: no preload range, renderer version 1")
    func unchanged() throws {
        var channel = try Channel()
        try channel.apply(place("brk-1", start: 90, duration: 30), at: at(60))
        #expect(try !channel.render("720p", at: at(84)).contains("com.apple.hls.preload"))
        #expect(channel.state.rendererVersion == 1)
        #expect(EventCodec.encode(.channelCreated(demoConfig())).schemaVersion == 1)
        var config = demoConfig()
        config.ads = AdSettings()
        #expect(EventCodec.encode(.channelCreated(config)).schemaVersion == 3)
    }

    @Test("ad settings and a change survive the codec; a change's null clears, its absent keys keep")
    func codec() throws {
        let change = AdSettingsChange(adServer: .some(nil), concurrency: 8, slate: .some(nil))
        let data = try JSONEncoder().encode(change)
        #expect(String(decoding: data, as: UTF8.self).contains("\"adServer\":null"))
        #expect(try JSONDecoder().decode(AdSettingsChange.self, from: data) == change)
        let settings = AdSettings(
            adServer: try template("https://a.example.com/v?x={break_id}"),
            slate: .init(uri: "https://s.example.com/s.m3u8", durationMilliseconds: 5000),
            preroll: .asset(uri: "https://p.example.com/p.m3u8", durationMilliseconds: 6000), beacons: .server)
        let encoded = EventCodec.encode(.adSettingsSet(settings))
        #expect(
            try EventCodec.decode(type: encoded.type, schemaVersion: encoded.schemaVersion, payload: encoded.payload)
                == .adSettingsSet(settings))
    }

    @Test("a channel marked for a downstream SSAI alone takes no ad server; an external asset list is never decided")
    func markersAndLists() throws {
        var ssai = demoConfig()
        ssai.signalling = Signalling(markers: .scte35)
        var config = ssai
        config.ads = AdSettings(adServer: try template("https://ads.example.com/v"))
        #expect(throws: ScheduleError.self) { try config.validate() }
        var channel = try Channel(ssai)
        do {
            try channel.apply(
                .setAdSettings(AdSettingsChange(adServer: .some(try template("https://ads.example.com/v")))), at: at(1))
            Issue.record("an ad server was set on a scte35 channel")
        } catch {
            #expect((error as? ScheduleError)?.field == "ad_server")
        }
        // On an interstitial channel with an ad server, a break with its own external list keeps it, undecided.
        var players = demoConfig()
        players.ads = AdSettings(adServer: try template("https://ads.example.com/v"))
        channel = try Channel(players)
        try channel.apply(
            .placeBreak(
                PlaceBreak(
                    id: "brk-1", start: .at(at(90)), plannedDurationMilliseconds: 30_000,
                    asset: .list("https://ssai.example.com/list.json"))),
            at: at(60))
        #expect(channel.state.breakState("brk-1")?.spec.adServer == nil)
    }

    @Test("a break keeps the preload length it was placed with: changing the channel's never moves a published range")
    func preloadKept() throws {
        var config = demoConfig()
        config.ads = AdSettings()
        var channel = try Channel(config)
        try channel.apply(place("brk-1", start: 90, duration: 30), at: at(60))
        let before = try channel.render("720p", at: at(72))
        #expect(
            before.contains(
                #"ID="brk-1.preload",CLASS="com.apple.hls.preload",START-DATE="2026-03-01T12:01:10.000Z",DURATION=20.000"#
            ))
        try channel.apply(.setAdSettings(AdSettingsChange(preloadMilliseconds: 0)), at: at(73))
        try channel.apply(place("brk-2", start: 150, duration: 12), at: at(74))
        let after = try channel.render("720p", at: at(78))
        #expect(
            after.contains(
                #"ID="brk-1.preload",CLASS="com.apple.hls.preload",START-DATE="2026-03-01T12:01:10.000Z",DURATION=20.000"#
            ))
        #expect(!after.contains("brk-2.preload"))
    }
}
