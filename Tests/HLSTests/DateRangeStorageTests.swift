import HLS
import Testing

@Suite("Date ranges rendered at construction")
struct DateRangeStorageTests {
    static let start = Timestamp(iso8601: "2026-03-01T12:00:00Z")!

    @Test("a range changed after construction renders its new attributes, as a range built with them does")
    func changedRendersNew() throws {
        var range = DateRange(
            id: "a", classAttribute: DateRange.interstitialClass, startDate: Self.start,
            duration: DecimalNumber(milliseconds: 6000))
        let before = try PlaylistRenderer.render(range)
        #expect(
            before
                == "#EXT-X-DATERANGE:ID=\"a\",CLASS=\"com.apple.hls.interstitial\",START-DATE=\"2026-03-01T12:00:00.000Z\",DURATION=6.000\n"
        )
        let copy = range
        range.id = "b"
        range.assetURI = "https://ads.example.com/b.m3u8"
        let built = DateRange(
            id: "b", classAttribute: DateRange.interstitialClass, startDate: Self.start,
            duration: DecimalNumber(milliseconds: 6000),
            assetURI: "https://ads.example.com/b.m3u8")
        #expect(try PlaylistRenderer.render(range) == PlaylistRenderer.render(built))
        #expect(try PlaylistRenderer.render(range).contains("ID=\"b\""))
        #expect(range == built && range.hashValue == built.hashValue)
        #expect(try PlaylistRenderer.render(copy) == before, "the copy taken before the change keeps its value")
        #expect(copy != range)
    }

    @Test("a range that cannot be rendered fails at each render with the same error, in a playlist too")
    func invalidFailsTheSame() throws {
        let range = DateRange(id: "bad\"id", startDate: Self.start)
        #expect(throws: RenderError.unrepresentableQuotedString(attribute: "ID", value: "bad\"id")) {
            try PlaylistRenderer.render(range)
        }
        var changed = DateRange(id: "ok", startDate: Self.start)
        changed.id = "bad\"id"
        #expect(throws: RenderError.unrepresentableQuotedString(attribute: "ID", value: "bad\"id")) {
            try PlaylistRenderer.render(changed)
        }
        let playlist = MediaPlaylist(
            targetDuration: 6, mediaSequence: 1,
            segments: [Segment(duration: DecimalNumber(milliseconds: 6000), uri: "s1.ts", tags: [.dateRange(range)])])
        #expect(throws: RenderError.unrepresentableQuotedString(attribute: "ID", value: "bad\"id")) {
            try PlaylistRenderer.renderBytes(playlist)
        }
    }
}
