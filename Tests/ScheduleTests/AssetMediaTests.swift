import HLS
import Schedule
import Testing

@Suite("Breaks placed with their media measured: durations corrected or refused, single assets served in chunks")
struct AssetMediaTests {
    static let ad = "https://ads.example.com/spot/index.m3u8"

    func placing(
        _ duration: Double, asset: BreakAsset = .uri(ad), measured: [MeasuredAsset?]?, wholeAssets: Bool = false
    ) -> ScheduleCommand {
        var place = PlaceBreak(
            id: "brk-1", start: .at(at(90)), plannedDurationMilliseconds: Int64(duration * 1000), asset: asset)
        place.measured = measured
        place.wholeAssets = wholeAssets
        return .placeBreak(place)
    }

    static let thirty = MeasuredAsset(
        durationMilliseconds: 30_030, chunkMilliseconds: Array(repeating: 2002, count: 15))

    @Test("a \"30 s\" spot of 30.030 s is planned at 30.030 s; the request is kept on the event")
    func corrected() throws {
        var channel = try Channel()
        try channel.apply(placing(30, measured: [Self.thirty]), at: at(60))
        let item = try #require(channel.state.breakState("brk-1"))
        #expect(item.spec.plannedDurationMilliseconds == 30_030)
        #expect(item.spec.media == BreakMedia(assets: [Self.thirty], requestedDurationMilliseconds: 30_000))
        let playlist = try channel.render("720p", at: at(96))
        #expect(playlist.contains("PLANNED-DURATION=30.030"))
    }

    @Test("a planned duration more than 1 s from the media is refused, naming the field and both lengths")
    func refused() throws {
        var channel = try Channel()
        #expect {
            try channel.apply(placing(60, measured: [Self.thirty]), at: at(60))
        } throws: { error in
            guard case ScheduleError.invalidField(let field, let reason) = error else { return false }
            return field == "duration" && reason.contains("30.030 s long") && reason.contains("planned at 60.000 s")
        }
        let pod = [
            PodAsset(uri: Self.ad, durationMilliseconds: 6000), PodAsset(uri: Self.ad, durationMilliseconds: 10_000),
        ]
        let six = MeasuredAsset(durationMilliseconds: 6006)
        #expect {
            try channel.apply(placing(16, asset: .pod(pod), measured: [six, six]), at: at(60))
        } throws: { error in
            guard case ScheduleError.invalidField(let field, let reason) = error else { return false }
            return field == "pod" && reason.hasPrefix("asset 2 ")
        }
        #expect(channel.state.breakState("brk-1") == nil)
    }

    @Test("a pod's assets and planned duration are corrected to the media; the overlap check uses the corrected end")
    func pod() throws {
        var channel = try Channel()
        let pod = [
            PodAsset(uri: Self.ad, durationMilliseconds: 6000), PodAsset(uri: Self.ad, durationMilliseconds: 6000),
        ]
        let six = MeasuredAsset(durationMilliseconds: 6040, chunkMilliseconds: [2014, 2013, 2013])
        try channel.apply(placing(12, asset: .pod(pod), measured: [six, six]), at: at(60))
        let item = try #require(channel.state.breakState("brk-1"))
        #expect(item.spec.plannedDurationMilliseconds == 12_080)
        guard case .pod(let corrected) = item.spec.asset else { Issue.record("not a pod"); return }
        #expect(corrected.map(\.durationMilliseconds) == [6040, 6040])
        // The next segment boundary after 90 s + 12 s is 102 s, but the media runs to 102.080 s.
        #expect(throws: ScheduleError.self) {
            try channel.apply(
                .placeBreak(
                    PlaceBreak(
                        id: "brk-2", start: .at(at(102)), plannedDurationMilliseconds: 6000, asset: .uri(Self.ad),
                        alignment: .exact)), at: at(61))
        }
    }

    @Test(
        "a measured single asset is published as this service's asset list of chunks, laid out from the break's start")
    func chunked() throws {
        var channel = try Channel()
        try channel.apply(placing(30, measured: [Self.thirty]), at: at(60))
        let playlist = try channel.render("720p", at: at(96))
        #expect(
            playlist.contains(
                #"X-ASSET-LIST="http://127.0.0.1:8080/channels/demo/breaks/brk-1/assets.json?_HLS_interstitial_id=brk-1""#
            ))
        #expect(!playlist.contains("X-ASSET-URI"))
        let list = try #require(PlaylistBuilder.assetList(state: channel.state, breakID: "brk-1"))
        #expect(
            list.hasPrefix(
                #"{"ASSETS":[{"URI":"http://127.0.0.1:8080/channels/demo/breaks/brk-1/chunks/0-0.m3u8","DURATION":2.002},{"URI":"http://127.0.0.1:8080/channels/demo/breaks/brk-1/chunks/0-1.m3u8","DURATION":2.002}"#
            ))
        #expect(list.components(separatedBy: "\"URI\"").count - 1 == 15)
        let span = try #require(PlaylistBuilder.chunkSpan(state: channel.state, breakID: "brk-1", asset: 0, chunk: 14))
        #expect(span.uri == Self.ad && span.from == 28_028 && span.to == 30_030)
        #expect(PlaylistBuilder.chunkSpan(state: channel.state, breakID: "brk-1", asset: 0, chunk: 15) == nil)
        #expect(PlaylistBuilder.chunkSpan(state: channel.state, breakID: "brk-1", asset: 1, chunk: 0) == nil)
        #expect(PlaylistBuilder.chunkSpan(state: channel.state, breakID: "brk-1", asset: -1, chunk: 0) == nil)
    }

    @Test("--no-chunks keeps X-ASSET-URI and still corrects the duration; unmeasured breaks render as before")
    func whole() throws {
        var channel = try Channel()
        try channel.apply(placing(30, measured: [Self.thirty], wholeAssets: true), at: at(60))
        var playlist = try channel.render("720p", at: at(96))
        #expect(playlist.contains(#"X-ASSET-URI="https://ads.example.com/spot/index.m3u8?_HLS_interstitial_id=brk-1""#))
        #expect(playlist.contains("PLANNED-DURATION=30.030"))
        #expect(PlaylistBuilder.chunkSpan(state: channel.state, breakID: "brk-1", asset: 0, chunk: 0) == nil)
        var unmeasured = try Channel()
        try unmeasured.apply(placing(30, measured: [nil]), at: at(60))
        playlist = try unmeasured.render("720p", at: at(96))
        #expect(playlist.contains(#"X-ASSET-URI="https://ads.example.com/spot/index.m3u8?_HLS_interstitial_id=brk-1""#))
        #expect(unmeasured.state.breakState("brk-1")?.spec.media == nil)
        // What was measured is not part of the request's text, so a retry hashes the same whatever the asset did.
        #expect(
            EventCodec.canonicalRequest(placing(30, measured: [Self.thirty]))
                == EventCodec.canonicalRequest(placing(30, measured: nil)))
    }

    @Test("a cancelled chunked break lists no assets and serves no chunk")
    func cancelled() throws {
        var channel = try Channel()
        try channel.apply(placing(30, measured: [Self.thirty]), at: at(60))
        try channel.apply(.cancelBreak(id: "brk-1"), at: at(61))
        #expect(PlaylistBuilder.assetList(state: channel.state, breakID: "brk-1") == #"{"ASSETS":[]}"#)
        #expect(PlaylistBuilder.chunkSpan(state: channel.state, breakID: "brk-1", asset: 0, chunk: 0) == nil)
    }
}
