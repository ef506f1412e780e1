import HLS
import Testing

@Suite("Interstitial asset playlists: measured, and cut into chunks")
struct VODPlaylistTests {
    static let fmp4 = """
        #EXTM3U
        #EXT-X-VERSION:7
        #EXT-X-TARGETDURATION:2
        #EXT-X-PLAYLIST-TYPE:VOD
        #EXT-X-INDEPENDENT-SEGMENTS
        #EXT-X-MAP:URI="init.mp4"
        #EXT-X-KEY:METHOD=AES-128,URI="/keys/k1"
        #EXTINF:2.002,
        s0.m4s
        #EXTINF:2.0016,
        s1.m4s
        #EXT-X-DISCONTINUITY
        #EXTINF:1.5,
        https://cdn.example/other/s2.m4s
        #EXTINF:0.5,
        s3.m4s
        #EXT-X-ENDLIST

        """

    @Test("a media playlist's length is the sum of its EXTINFs, each to the nearest millisecond; URIs become absolute")
    func measures() throws {
        guard
            case .media(let media) = try VODPlaylist.parse(
                Self.fmp4, url: "https://ads.example/spot/v1/index.m3u8?token=1")
        else {
            Issue.record("not read as a media playlist")
            return
        }
        #expect(media.durationMilliseconds == 2002 + 2002 + 1500 + 500)
        #expect(
            media.segments.map(\.uri) == [
                "https://ads.example/spot/v1/s0.m4s", "https://ads.example/spot/v1/s1.m4s",
                "https://cdn.example/other/s2.m4s",
                "https://ads.example/spot/v1/s3.m4s",
            ])
        #expect(media.unchunkable == nil)
        // Chunks of at most 2 s, a longer segment alone; they add up to the whole.
        #expect(media.chunkMilliseconds() == [2002, 2002, 2000])
        #expect(media.chunkMilliseconds().reduce(0, +) == media.durationMilliseconds)
    }

    @Test("a chunk repeats the initialization section and key in effect, and is a VOD playlist of its own segments")
    func chunk() throws {
        guard case .media(let media) = try VODPlaylist.parse(Self.fmp4, url: "https://ads.example/spot/v1/index.m3u8")
        else {
            Issue.record("not read as a media playlist")
            return
        }
        // A span with no segment's middle in it is no chunk (the asset changed since it was measured).
        #expect(media.chunk(from: 6004, to: 8000) == nil)
        #expect(
            media.chunk(from: 2002, to: 4004) == """
                #EXTM3U
                #EXT-X-VERSION:7
                #EXT-X-INDEPENDENT-SEGMENTS
                #EXT-X-TARGETDURATION:2
                #EXT-X-MEDIA-SEQUENCE:1
                #EXT-X-PLAYLIST-TYPE:VOD
                #EXT-X-MAP:URI="https://ads.example/spot/v1/init.mp4"
                #EXT-X-KEY:METHOD=AES-128,URI="https://ads.example/keys/k1"
                #EXTINF:2.0016,
                https://ads.example/spot/v1/s1.m4s
                #EXT-X-ENDLIST

                """)
        // The discontinuity before the first segment of a chunk is not needed (a chunk is a playlist of its own).
        let last = try #require(media.chunk(from: 4004, to: 6004))
        #expect(!last.contains("DISCONTINUITY"))
        #expect(
            last.contains(
                "https://cdn.example/other/s2.m4s\n#EXTINF:0.5,\nhttps://ads.example/spot/v1/s3.m4s\n#EXT-X-ENDLIST"))
        // Every chunk parses back as a VOD playlist; together they hold every segment once.
        var uris: [String] = []
        var from: Int64 = 0
        for length in media.chunkMilliseconds() {
            guard
                case .media(let part) = try VODPlaylist.parse(
                    try #require(media.chunk(from: from, to: from + length)), url: "https://x.example/c.m3u8")
            else {
                Issue.record("a chunk is not a media playlist")
                return
            }
            uris += part.segments.map(\.uri)
            from += length
        }
        #expect(uris == media.segments.map(\.uri))
    }

    @Test(
        "a live playlist, a playlist without segments, or without #EXTM3U is not an asset; byte ranges are served whole"
    )
    func refusals() throws {
        #expect(throws: VODPlaylist.Problem.self) {
            try VODPlaylist.parse("#EXTM3U\n#EXTINF:2,\na.ts\n", url: "https://a.example/x.m3u8")
        }
        #expect(throws: VODPlaylist.Problem.self) {
            try VODPlaylist.parse("#EXTM3U\n#EXT-X-ENDLIST\n", url: "https://a.example/x.m3u8")
        }
        #expect(throws: VODPlaylist.Problem.self) { try VODPlaylist.parse("<html>", url: "https://a.example/x.m3u8") }
        #expect(throws: VODPlaylist.Problem.self) {
            try VODPlaylist.parse("#EXTM3U\n#EXTINF:abc,\na.ts\n#EXT-X-ENDLIST\n", url: "https://a.example/x.m3u8")
        }
        guard
            case .media(let ranged) = try VODPlaylist.parse(
                "#EXTM3U\n#EXTINF:2,\n#EXT-X-BYTERANGE:100@0\na.ts\n#EXTINF:2,\n#EXT-X-BYTERANGE:100\na.ts\n#EXT-X-ENDLIST\n",
                url: "https://a.example/x.m3u8")
        else {
            Issue.record("not read as a media playlist")
            return
        }
        #expect(ranged.durationMilliseconds == 4000)
        #expect(ranged.unchunkable == "it uses byte ranges")
    }

    @Test(
        "a multivariant asset lists its variants with absolute URIs; alternative renditions with playlists are served whole"
    )
    func multivariant() throws {
        let text = """
            #EXTM3U
            #EXT-X-INDEPENDENT-SEGMENTS
            #EXT-X-STREAM-INF:BANDWIDTH=2000000,RESOLUTION=1280x720
            720p/index.m3u8
            #EXT-X-I-FRAME-STREAM-INF:BANDWIDTH=100000,URI="iframes.m3u8"
            #EXT-X-STREAM-INF:BANDWIDTH=700000
            https://cdn.example/360p.m3u8
            """
        guard
            case .multivariant(let playlist) = try VODPlaylist.parse(text, url: "https://ads.example/spot/master.m3u8")
        else {
            Issue.record("not read as a multivariant playlist")
            return
        }
        #expect(
            playlist.variants.map(\.uri) == [
                "https://ads.example/spot/720p/index.m3u8", "https://cdn.example/360p.m3u8",
            ])
        #expect(playlist.header == ["#EXT-X-INDEPENDENT-SEGMENTS"])
        #expect(playlist.unchunkable == nil)
        guard
            case .multivariant(let alternative) = try VODPlaylist.parse(
                text + "\n#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=\"a\",NAME=\"en\",URI=\"en.m3u8\"\n",
                url: "https://ads.example/spot/master.m3u8")
        else { return }
        #expect(alternative.unchunkable != nil)
    }

    @Test("relative URIs resolve like a browser's: path, absolute path, scheme-relative, query dropped")
    func resolve() {
        let base = "https://ads.example/a/b/index.m3u8?x=1"
        #expect(PlaylistURI.resolve("s.ts", against: base) == "https://ads.example/a/b/s.ts")
        #expect(PlaylistURI.resolve("/s.ts", against: base) == "https://ads.example/s.ts")
        #expect(PlaylistURI.resolve("//cdn.example/s.ts", against: base) == "https://cdn.example/s.ts")
        #expect(PlaylistURI.resolve("http://o.example/s.ts", against: base) == "http://o.example/s.ts")
        #expect(PlaylistURI.resolve("s.ts", against: "/var/media/index.m3u8") == "s.ts")
    }
}
