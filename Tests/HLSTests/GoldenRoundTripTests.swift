import Foundation
import HLS
import Testing

@Suite("Golden playlists")
struct GoldenRoundTripTests {
    @Test("there are at least a dozen golden playlists")
    func enoughGoldens() throws {
        #expect(try Fixtures.goldenNames().count >= 12)
    }

    @Test("parse → render is byte-identical", arguments: try Fixtures.goldenNames())
    func roundTrip(name: String) throws {
        let original = try Fixtures.text("golden/" + name)
        let rendered: String
        switch try PlaylistParser.parse(original) {
        case .media(let parsed):
            #expect(parsed.issues.isEmpty, "\(parsed.issues)")
            rendered = try PlaylistRenderer.render(parsed.playlist)
        case .multivariant(let parsed):
            rendered = try PlaylistRenderer.render(parsed.playlist)
        }
        #expect(rendered == original)
    }

    @Test("every golden playlist is lint-clean", arguments: try Fixtures.goldenNames())
    func lintClean(name: String) throws {
        let findings = Lint.check(try Fixtures.text("golden/" + name))
        #expect(findings.isEmpty, "\(findings.map(\.description).joined(separator: "\n"))")
    }

    @Test("the early-return playlist built from the model renders the golden bytes")
    func modelBuiltEarlyReturn() throws {
        let epoch = Timestamp(iso8601: "2026-03-01T12:00:00Z")!
        let start = epoch.adding(milliseconds: 107 * 6000)
        let placed = DateRange(
            id: "brk-1", classAttribute: DateRange.interstitialClass, startDate: start,
            plannedDuration: DecimalNumber(milliseconds: 30_000),
            assetURI: "https://ads.example.com/pods/brk-1/master.m3u8?_HLS_interstitial_id=brk-1", snap: [.out, .in],
            restrict: [.skip, .jump])
        let augment = DateRange(
            id: "brk-1", classAttribute: DateRange.interstitialClass, startDate: start,
            duration: DecimalNumber(milliseconds: 12_000), playoutLimit: DecimalNumber(milliseconds: 12_000))
        let segments = (105..<110).map { n -> Segment in
            var tags: [SegmentTag] = [.programDateTime(epoch.adding(milliseconds: Int64(n) * 6000))]
            if n == 107 { tags += [.dateRange(placed), .dateRange(augment)] }
            return Segment(duration: DecimalNumber(milliseconds: 6000), uri: "720p/seg\(n).ts", tags: tags)
        }
        let playlist = MediaPlaylist(version: 3, targetDuration: 6, mediaSequence: 105, segments: segments)
        #expect(try PlaylistRenderer.render(playlist) == Fixtures.text("golden/06-early-return.m3u8"))
    }

    @Test("the augmenting tag keeps the original tag byte-identical")
    func originalTagUnchanged() throws {
        let before = try Fixtures.text("golden/05-break-on-air.m3u8")
        let after = try Fixtures.text("golden/06-early-return.m3u8")
        let original = before.split(separator: "\n").first { $0.hasPrefix("#EXT-X-DATERANGE") }!
        #expect(after.split(separator: "\n").filter { $0.hasPrefix("#EXT-X-DATERANGE") }.first == original)
        let update = Lint.checkUpdate(
            previous: try PlaylistParser.parseMedia(before), current: try PlaylistParser.parseMedia(after))
        #expect(update.isEmpty, "\(update)")
    }
}

@Suite("Renderer refuses what cannot be represented")
struct RenderErrorTests {
    private func playlist(with range: DateRange) -> MediaPlaylist {
        MediaPlaylist(
            targetDuration: 6,
            segments: [Segment(duration: DecimalNumber(integer: 6), uri: "a.ts", tags: [.dateRange(range)])])
    }

    @Test("a quoted string with a double quote, CR or LF is an error", arguments: ["a\"b", "a\nb", "a\rb"])
    func badQuotedString(value: String) {
        #expect(throws: RenderError.unrepresentableQuotedString(attribute: "ID", value: value)) {
            try PlaylistRenderer.render(playlist(with: DateRange(id: value)))
        }
    }

    @Test("client attribute names are checked")
    func badClientName() {
        let range = DateRange(id: "x", clientAttributes: [ClientAttribute(name: "X-bad name", value: .string("v"))])
        #expect(throws: RenderError.invalidClientAttributeName("X-bad name")) {
            try PlaylistRenderer.render(playlist(with: range))
        }
    }

    @Test("a client attribute that collides with a typed one is a duplicate")
    func duplicate() {
        let range = DateRange(
            id: "x", assetURI: "https://a/b.m3u8",
            clientAttributes: [ClientAttribute(name: "X-ASSET-URI", value: .string("v"))])
        #expect(throws: RenderError.duplicateAttribute("X-ASSET-URI")) {
            try PlaylistRenderer.render(playlist(with: range))
        }
    }

    @Test("a target duration under 1 is an error")
    func targetDuration() {
        #expect(throws: RenderError.invalidTargetDuration(0)) {
            try PlaylistRenderer.render(MediaPlaylist(targetDuration: 0))
        }
    }

    @Test("a segment URI with a line break is an error")
    func badURI() {
        let playlist = MediaPlaylist(
            targetDuration: 6, segments: [Segment(duration: DecimalNumber(integer: 6), uri: "a.ts\n#EXT-X-ENDLIST")])
        #expect(throws: RenderError.invalidURI("a.ts\n#EXT-X-ENDLIST")) { try PlaylistRenderer.render(playlist) }
    }

    @Test("negative durations are refused")
    func negative() {
        let range = DateRange(id: "x", duration: DecimalNumber(mantissa: -1, scale: 0))
        #expect(throws: RenderError.negativeDecimal(attribute: "DURATION", value: "-1")) {
            try PlaylistRenderer.render(playlist(with: range))
        }
    }
}

@Suite("Values")
struct ValueTests {
    @Test(
        "timestamps parse and render in UTC with milliseconds",
        arguments: [
            ("2026-03-01T12:00:06Z", "2026-03-01T12:00:06.000Z"),
            ("2026-03-01T12:00:06.5Z", "2026-03-01T12:00:06.500Z"),
            ("2026-03-01T12:00:06.123456Z", "2026-03-01T12:00:06.123Z"),
            ("2026-03-01T13:00:06.000+01:00", "2026-03-01T12:00:06.000Z"),
            ("2026-03-01T06:30:00-0530", "2026-03-01T12:00:00.000Z"),
            ("2024-02-29T23:59:59.999Z", "2024-02-29T23:59:59.999Z"),
            ("1969-12-31T23:59:59.999Z", "1969-12-31T23:59:59.999Z"),
        ])
    func timestamps(input: String, rendered: String) {
        #expect(Timestamp(iso8601: input)?.iso8601 == rendered)
    }

    @Test(
        "invalid timestamps are refused",
        arguments: [
            "2026-03-01T12:00:06", "2026-02-30T00:00:00Z", "2026-13-01T00:00:00Z", "2026-03-01 12:00Z", "",
            "2026-03-01T12:00:06.Z",
        ])
    func badTimestamps(input: String) {
        #expect(Timestamp(iso8601: input) == nil)
    }

    @Test("decimal numbers keep their digits", arguments: ["0", "6", "6.000", "6.006", "9.97663", "-1.5", "0.001"])
    func decimals(text: String) {
        #expect(DecimalNumber(text)?.description == text)
    }

    @Test(
        "decimal numbers reject what the draft does not allow",
        arguments: ["", "-", "1e3", "1.", ".5", "1.2.3", "1,5", "0.1234567891"])
    func badDecimals(text: String) {
        #expect(DecimalNumber(text) == nil)
    }

    @Test("EXTINF rounding is to the nearest integer", arguments: [("6.499", 6), ("6.5", 7), ("5.005", 5), ("0.4", 0)])
    func rounding(text: String, expected: Int64) {
        #expect(DecimalNumber(text)!.roundedToInteger == expected)
    }

    @Test("hex bytes", arguments: [("0xFC30", "0xFC30"), ("0xfc30", "0xFC30")])
    func hex(input: String, rendered: String) {
        #expect(HexBytes(hex: input)?.description == rendered)
    }

    @Test("bad hex", arguments: ["FC30", "0x", "0xF", "0xZZ", "\"0xFC\""])
    func badHex(input: String) {
        #expect(HexBytes(hex: input) == nil)
    }
}
