import HLS
import Schedule
import Testing

@Suite("Tags kept between ticks")
struct KeptTagsTests {
    static let epoch = Timestamp(iso8601: "2026-03-01T00:00:00Z")!

    static func playlist(base: String, asset: BreakAsset, limit: Int64? = nil, channel: ChannelID = "kept") throws
        -> String
    {
        let config = ChannelConfig(
            id: channel, segmentDurationMilliseconds: 6000, windowSegments: 10, epoch: epoch,
            renditions: [RenditionConfig(name: "main", bandwidth: 1_000_000, uriTemplate: "seg{n}.ts")],
            publicBaseURL: base)
        var state = ChannelState(channel: channel, retention: .window)
        var version: Int64 = 0
        func apply(_ command: ScheduleCommand, at time: Timestamp) throws {
            for event in try decide(command, state: state, now: time) {
                version += 1
                state.apply(
                    RecordedScheduleEvent(
                        event: event, version: version, position: version,
                        attribution: Attribution(at: time, actor: "t", source: "t")))
            }
        }
        try apply(.createChannel(config), at: epoch)
        let start = epoch.adding(milliseconds: 103 * 6000)
        try apply(
            .placeBreak(PlaceBreak(id: "brk", start: .at(start), plannedDurationMilliseconds: 12_000, asset: asset)),
            at: start.adding(milliseconds: -60_000))
        if let limit {
            try apply(.setPlayoutLimit(id: "brk", limitMilliseconds: limit), at: start.adding(milliseconds: 7_000))
        }
        let playlist = try #require(
            PlaylistBuilder.mediaPlaylist(
                config: config, state: state, rendition: config.renditions[0],
                at: epoch.adding(milliseconds: 108 * 6000)))
        return try PlaylistRenderer.render(playlist)
    }

    @Test(
        "a kept tag is used only for the same break spec and base URL: what is built never depends on what was built before"
    )
    func keyedByValue() throws {
        let first = try Self.playlist(base: "https://a.example.com", asset: .list("https://ads.example.com/1.json"))
        #expect(first.contains("X-ASSET-LIST=\"https://ads.example.com/1.json?_HLS_interstitial_id=brk\""))
        // Same channel and break id, another asset (a log replayed elsewhere, an id reused): the new asset.
        let other = try Self.playlist(base: "https://a.example.com", asset: .list("https://ads.example.com/2.json"))
        #expect(other.contains("X-ASSET-LIST=\"https://ads.example.com/2.json?_HLS_interstitial_id=brk\""))
        #expect(!other.contains("1.json"))
        // A pod's asset list is on the channel's base URL: another base URL, another tag.
        let podA = try Self.playlist(
            base: "https://a.example.com",
            asset: .pod([PodAsset(uri: "https://ads.example.com/p.m3u8", durationMilliseconds: 12_000)]))
        let podB = try Self.playlist(
            base: "https://b.example.com",
            asset: .pod([PodAsset(uri: "https://ads.example.com/p.m3u8", durationMilliseconds: 12_000)]))
        #expect(podA.contains("https://a.example.com/channels/kept/breaks/brk/assets.json"))
        #expect(podB.contains("https://b.example.com/channels/kept/breaks/brk/assets.json"))
        // The closing tag follows the limit.
        let limited = try Self.playlist(
            base: "https://a.example.com", asset: .list("https://ads.example.com/2.json"), limit: 6_000)
        let planned = try Self.playlist(base: "https://a.example.com", asset: .list("https://ads.example.com/2.json"))
        #expect(limited.contains("DURATION=6.000,X-PLAYOUT-LIMIT=6.000"))
        #expect(planned.contains("DURATION=12.000\n"))
        #expect(
            try Self.playlist(base: "https://a.example.com", asset: .list("https://ads.example.com/2.json")) == planned)
    }
}
