import HLS
import Testing

/// The CUE rules on the spellings encoders and packagers write (AWS Elemental, MediaLive "SCTE-35 enhanced", MediaTailor
/// and Google DAI examples): valid breaks are clean; and the markers of a low-latency segment still in progress may not
/// change either.
@Suite("Lint: CUE markers in other spellings")
struct CueLintTests {
    static let bare = """
        #EXTM3U
        #EXT-X-VERSION:3
        #EXT-X-TARGETDURATION:6
        #EXT-X-MEDIA-SEQUENCE:100
        #EXT-X-PROGRAM-DATE-TIME:2026-03-01T12:00:00.000Z
        #EXTINF:6.000,
        s100.ts
        #EXT-X-CUE-OUT:30
        #EXTINF:6.000,
        s101.ts
        #EXT-X-CUE-OUT-CONT:ElapsedTime=6,Duration=30
        #EXTINF:6.000,
        s102.ts
        #EXT-X-CUE-OUT-CONT:ElapsedTime=12,Duration=30
        #EXTINF:6.000,
        s103.ts
        #EXT-X-CUE-OUT-CONT:ElapsedTime=18,Duration=30
        #EXTINF:6.000,
        s104.ts
        #EXT-X-CUE-OUT-CONT:ElapsedTime=24,Duration=30
        #EXTINF:6.000,
        s105.ts
        #EXT-X-CUE-IN
        #EXTINF:6.000,
        s106.ts

        """

    static let foreign: [(String, String)] = [
        ("a bare duration, MediaTailor and Google DAI's example", bare),
        (
            "Elemental: a decimal duration, elapsed/duration continuations",
            """
            #EXTM3U
            #EXT-X-VERSION:3
            #EXT-X-TARGETDURATION:6
            #EXT-X-MEDIA-SEQUENCE:100
            #EXT-X-PROGRAM-DATE-TIME:2026-03-01T12:00:00.000Z
            #EXTINF:6.006,
            s100.ts
            #EXT-X-CUE-OUT:30.000
            #EXTINF:6.006,
            s101.ts
            #EXT-X-CUE-OUT-CONT:6.006/30
            #EXTINF:6.006,
            s102.ts
            #EXT-X-CUE-IN
            #EXTINF:6.006,
            s103.ts

            """
        ),
        (
            "SCTE-35 enhanced: elapsed counted from the splice point",
            """
            #EXTM3U
            #EXT-X-VERSION:3
            #EXT-X-TARGETDURATION:6
            #EXT-X-MEDIA-SEQUENCE:100
            #EXT-X-PROGRAM-DATE-TIME:2026-03-01T12:00:00.000Z
            #EXTINF:6.006,
            s100.ts
            #EXT-X-CUE-OUT:DURATION=30
            #EXTINF:6.006,
            s101.ts
            #EXT-X-CUE-OUT-CONT:ElapsedTime=5.939,Duration=30
            #EXTINF:6.006,
            s102.ts
            #EXT-X-CUE-OUT-CONT:ElapsedTime=11.945,Duration=30
            #EXTINF:6.006,
            s103.ts

            """
        ),
        (
            "a continuation carrying the section (SCTE35=)",
            bare.replacingOccurrences(
                of: "#EXT-X-CUE-OUT-CONT:ElapsedTime=6,Duration=30",
                with:
                    "#EXT-X-CUE-OUT-CONT:ElapsedTime=6,Duration=30,SCTE35=/DAgAAAAAAAAAP/wDwUAAAABf//+AFJlwAABAAAAAMOOklg="
            )
        ),
    ]

    @Test("valid breaks in other spellings are clean, --strict included", arguments: foreign.map(\.0))
    func foreignSpellings(name: String) throws {
        let text = try #require(Self.foreign.first { $0.0 == name }?.1)
        #expect(Lint.check(text).isEmpty, "\(Lint.check(text))")
        // Kept verbatim: parsed and rendered, the same bytes.
        #expect(try PlaylistRenderer.render(try PlaylistParser.parseMedia(text).playlist) == text)
    }

    @Test("a foreign continuation with another duration than its OUT, or a CONT with no break open, is still found")
    func foreignMistakes() throws {
        let wrongDuration = Self.foreign[1].1.replacingOccurrences(of: "6.006/30", with: "6.006/60")
        #expect(Lint.check(wrongDuration).map(\.rule) == ["cue.cont-mismatch"])
        let noOut = Self.foreign[1].1.replacingOccurrences(of: "#EXT-X-CUE-OUT:30.000\n", with: "")
        #expect(Lint.check(noOut).map(\.rule).contains("cue.unmatched"))
    }

    @Test("the markers of the segment in progress (before its parts) may not change in the next version")
    func inProgressSegment() throws {
        let header = """
            #EXTM3U
            #EXT-X-VERSION:6
            #EXT-X-TARGETDURATION:2
            #EXT-X-MEDIA-SEQUENCE:20
            #EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,PART-HOLD-BACK=1.500
            #EXT-X-PART-INF:PART-TARGET=0.500
            #EXT-X-PROGRAM-DATE-TIME:2026-11-28T08:15:40.000Z
            #EXTINF:2.000,
            s20.ts
            #EXT-X-PROGRAM-DATE-TIME:2026-11-28T08:15:42.000Z
            #EXTINF:2.000,
            s21.ts
            #EXT-X-PROGRAM-DATE-TIME:2026-11-28T08:15:44.000Z
            #EXTINF:2.000,
            s22.ts

            """
        let previous =
            header + """
                #EXT-X-CUE-OUT:DURATION=10.000
                #EXT-X-PART:DURATION=0.500,URI="s23.0.ts",INDEPENDENT=YES
                #EXT-X-PRELOAD-HINT:TYPE=PART,URI="s23.1.ts"

                """
        let same =
            header + """
                #EXT-X-CUE-OUT:DURATION=10.000
                #EXT-X-PART:DURATION=0.500,URI="s23.0.ts",INDEPENDENT=YES
                #EXT-X-PART:DURATION=0.500,URI="s23.1.ts"
                #EXT-X-PRELOAD-HINT:TYPE=PART,URI="s23.2.ts"

                """
        let dropped =
            header + """
                #EXT-X-PART:DURATION=0.500,URI="s23.0.ts",INDEPENDENT=YES
                #EXT-X-PART:DURATION=0.500,URI="s23.1.ts"
                #EXT-X-PRELOAD-HINT:TYPE=PART,URI="s23.2.ts"

                """
        let before = try PlaylistParser.parseMedia(previous)
        #expect(Lint.checkUpdate(previous: before, current: try PlaylistParser.parseMedia(same)).isEmpty)
        #expect(
            Lint.checkUpdate(previous: before, current: try PlaylistParser.parseMedia(dropped)).map(\.rule) == [
                "cue.changed"
            ])
    }
}
