import Foundation
import HLS
import Testing

/// Values at the ends of their types never trap, and what parses always formats and parses back (issue 11).
@Suite("Extreme values")
struct ExtremeValuesTests {
    // Issue 11 #1: `_HLS_start_offset=9223372036854775807` trapped in `DecimalNumber.milliseconds`.
    @Test(
        "milliseconds of huge decimals saturate; checkedMilliseconds says they do not fit",
        arguments: [
            "9223372036854775807", "9223372036854775.9", "9223372036854776", "-9223372036854775807",
            "18446744073709551",
        ])
    func hugeDecimals(text: String) throws {
        let value = try #require(DecimalNumber(text))
        #expect(value.checkedMilliseconds == nil)
        #expect(value.milliseconds == (value.mantissa < 0 ? Int64.min : Int64.max))
    }

    @Test("milliseconds that fit are exact, including at the edge and for -0")
    func fittingDecimals() throws {
        #expect(DecimalNumber("9223372036854775.807")?.checkedMilliseconds == Int64.max)
        #expect(DecimalNumber("9223372036.854775807")?.checkedMilliseconds == 9_223_372_036_854)
        #expect(DecimalNumber("-0")?.milliseconds == 0)
        #expect(DecimalNumber("-0.0001")?.milliseconds == -1, "rounded toward negative infinity")
        #expect(DecimalNumber("6.006")?.milliseconds == 6006)
        #expect(DecimalNumber("99999999999999999999") == nil, "more digits than an Int64 holds")
        for text in ["NaN", "inf", "-", ".", "1e3", "0x10", "1.", " 1", "1 ", "+1", "1.0000000000"] {
            #expect(DecimalNumber(text) == nil, "\(text)")
        }
    }

    @Test("comparing and printing decimals at the ends of Int64 does not trap")
    func compareAndPrint() throws {
        let big = DecimalNumber(mantissa: .max, scale: 0)
        let small = DecimalNumber(mantissa: .min, scale: 0)
        let fine = DecimalNumber(mantissa: 15, scale: 9)
        #expect(fine < big)
        #expect(small < fine)
        #expect(!big.hasSameValue(as: DecimalNumber(mantissa: .max, scale: 9)))
        #expect(DecimalNumber(mantissa: 6, scale: 0).hasSameValue(as: DecimalNumber(mantissa: 6000, scale: 3)))
        #expect(small.description == "-9223372036854775808")
        #expect(DecimalNumber(mantissa: .min, scale: 3).description == "-9223372036854775.808")
        #expect(big.roundedToInteger == .max)
        #expect(DecimalNumber(mantissa: .max, scale: 1).roundedToInteger == 922_337_203_685_477_581)
    }

    @Test("JSON numbers out of range are a decoding error, not a trap", arguments: ["1e300", "-1e300", "9.3e15"])
    func decodeHugeNumbers(json: String) throws {
        #expect(throws: (any Error).self) {
            try JSONDecoder().decode([DecimalNumber].self, from: Data("[\(json)]".utf8))
        }
    }

    @Test("seconds as a Double convert to milliseconds only when they fit")
    func doubleToMilliseconds() {
        #expect(DecimalNumber.milliseconds(exactly: 1e300) == nil)
        #expect(DecimalNumber.milliseconds(exactly: -1e300) == nil)
        #expect(DecimalNumber.milliseconds(exactly: .nan) == nil)
        #expect(DecimalNumber.milliseconds(exactly: .infinity) == nil)
        #expect(DecimalNumber.milliseconds(exactly: 9.3e15) == nil)
        #expect(DecimalNumber.milliseconds(exactly: 9_223_372_036_854_775.808) == nil, "2^63 ms")
        #expect(DecimalNumber.milliseconds(exactly: -0.0) == 0)
        #expect(DecimalNumber.milliseconds(exactly: 30.5) == 30500)
        #expect(DecimalNumber.milliseconds(exactly: 0.0004) == 0)
    }

    // Issue 11 #3: "9999-12-31T23:59:59.999-23:59" parsed into year 10000, which could not be read back.
    @Test(
        "every parsed instant formats and parses back to itself",
        arguments: [
            "0000-01-01T00:00:00Z", "0000-01-01T23:59:00+23:59", "9999-12-31T23:59:59.999Z",
            "9999-12-31T00:00:00-23:59",
            "2026-03-01T12:00:00.5+01:00", "2000-02-29T00:00:00Z", "1970-01-01T00:00:00Z",
        ])
    func roundTrip(text: String) throws {
        let parsed = try #require(Timestamp(iso8601: text))
        #expect(Timestamp.representable.contains(parsed))
        #expect(Timestamp(iso8601: parsed.iso8601) == parsed)
    }

    @Test(
        "instants outside years 0000–9999 in UTC are refused",
        arguments: [
            "9999-12-31T23:59:59.999-23:59", "9999-12-31T23:59:59.999-00:01", "0000-01-01T00:00:00+00:01",
            "0000-01-01T00:00:00.000+23:59", "10000-01-01T00:00:00Z", "-0001-01-01T00:00:00Z",
        ])
    func outsideCalendar(text: String) {
        #expect(Timestamp(iso8601: text) == nil)
    }

    @Test(
        "malformed instants are refused without trapping",
        arguments: [
            "2026-02-30T00:00:00Z", "2025-02-29T00:00:00Z", "2026-03-01T24:00:00Z", "2026-03-01T12:00:60Z",
            "2026-03-01T12:00:00+24:00", "2026-03-01T12:00:00", "2026-03-01T12:00:00.Z",
            "2026-03-01T12:00:00.9Z\u{0}", "\u{0}", "",
        ])
    func malformed(text: String) {
        #expect(Timestamp(iso8601: text) == nil)
    }

    @Test("a fraction of ten thousand digits is truncated to milliseconds, not accumulated")
    func longFraction() {
        let text = "2026-03-01T12:00:00." + String(repeating: "9", count: 10_000) + "Z"
        #expect(Timestamp(iso8601: text)?.iso8601 == "2026-03-01T12:00:00.999Z")
    }

    @Test("instant arithmetic saturates instead of trapping")
    func saturating() {
        let late = Timestamp(milliseconds: .max - 1)
        let early = Timestamp(milliseconds: .min + 1)
        #expect(late.adding(milliseconds: .max).milliseconds == .max)
        #expect(early.adding(milliseconds: .min).milliseconds == .min)
        #expect(late.milliseconds(since: early) == .max)
        #expect(early.milliseconds(since: late) == .min)
        #expect(Timestamp(milliseconds: 5).milliseconds(since: Timestamp(milliseconds: 2)) == 3)
        // Formatting an instant that far out yields text, not a trap (and that text is not parsed back).
        #expect(Timestamp(iso8601: Timestamp(milliseconds: .max).iso8601) == nil)
        #expect(Timestamp(iso8601: Timestamp(milliseconds: .min).iso8601) == nil)
    }

    @Test("every control character is found and escaped", arguments: Array(0x00...0x1F) + Array(0x7F...0x9F))
    func controlCharacters(code: Int) throws {
        let scalar = try #require(Unicode.Scalar(code))
        let text = "a" + String(Character(scalar)) + "b"
        #expect(scalar.isControlCharacter)
        #expect(text.containsControlCharacter)
        #expect(!text.escapingControlCharacters.containsControlCharacter)
        #expect(text.escapingControlCharacters == "a\\u{\(String(code, radix: 16, uppercase: true))}b")
    }

    @Test("printable text, including non-ASCII, is left alone")
    func printable() {
        for text in [
            "plain", "café — “quoted” 🎬", "\u{A0}", "\u{2010}", "\u{2030}", "\u{2065}", "\u{206A}", "\u{FEFE}",
        ] {
            #expect(!text.containsControlCharacter)
            #expect(text.escapingControlCharacters == text)
        }
    }

    @Test(
        "line and paragraph separators, bidi overrides and isolates, zero-width characters are escaped for a terminal",
        arguments: [0x2028, 0x2029] + Array(0x202A...0x202E) + Array(0x2066...0x2069) + Array(0x200B...0x200F) + [
            0xFEFF
        ])
    func invisibleCharacters(code: Int) throws {
        let scalar = try #require(Unicode.Scalar(code))
        let text = "a" + String(Character(scalar)) + "b"
        #expect(!scalar.isControlCharacter, "free text may hold it; only terminals need it escaped")
        #expect(text.escapingControlCharacters == "a\\u{\(String(code, radix: 16, uppercase: true))}b")
        #expect(!text.escapingControlCharacters.unicodeScalars.contains(scalar))
    }

    // Issue 11 #11: NUL, TAB, ESC, DEL in asset URIs and attribute values passed `cueline lint`.
    @Test(
        "lint reports control characters in quoted attribute values and URI lines",
        arguments: [0x00, 0x09, 0x1B, 0x7F, 0x85])
    func lintControlCharacters(code: Int) throws {
        let character = String(Character(try #require(Unicode.Scalar(code))))
        let clean = try Fixtures.text("lint/syntax.control-character.pass.m3u8")
        #expect(Lint.check(clean).isEmpty)
        let inValue = clean.replacingOccurrences(
            of: "ads.example.com/p.m3u8", with: "ads.example.com/\(character)p.m3u8")
        let finding = try #require(Lint.check(inValue).first { $0.rule == "syntax.control-character" })
        #expect(finding.line == 20)
        #expect(finding.message.contains("X-ASSET-URI"))
        let inURI = clean.replacingOccurrences(of: "720p/seg102.ts", with: "720p/seg\(character)102.ts")
        #expect(Lint.check(inURI).contains { $0.rule == "syntax.control-character" && $0.line == 13 })
    }

    @Test("a TAB between the ids of RECENTLY-REMOVED-DATERANGES is not a finding")
    func recentlyRemovedTab() {
        let text = "#EXTM3U\n#EXT-X-SKIP:SKIPPED-SEGMENTS=3,RECENTLY-REMOVED-DATERANGES=\"a\tb\"\n"
        #expect(!Lint.controlCharacters(text).contains { $0.rule == "syntax.control-character" })
        let bad = "#EXTM3U\n#EXT-X-DATERANGE:ID=\"a\tb\"\n"
        #expect(Lint.controlCharacters(bad).contains { $0.rule == "syntax.control-character" && $0.line == 2 })
    }

    @Test("lint reads playlists whose numbers sit at the ends of Int64 without trapping")
    func lintHugeNumbers() throws {
        let huge = """
            #EXTM3U
            #EXT-X-VERSION:3
            #EXT-X-TARGETDURATION:9223372036854775807
            #EXT-X-MEDIA-SEQUENCE:9223372036854775807
            #EXT-X-DISCONTINUITY-SEQUENCE:9223372036854775807
            #EXT-X-SERVER-CONTROL:HOLD-BACK=9223372036854775807,CAN-SKIP-UNTIL=1,PART-HOLD-BACK=9223372036854775807
            #EXT-X-PART-INF:PART-TARGET=9223372036854775807
            #EXTINF:9223372036854775807,
            a.ts
            #EXT-X-DISCONTINUITY
            #EXTINF:9223372036854775807,
            b.ts

            """
        _ = Lint.check(huge)
        let parsed = try PlaylistParser.parseMedia(huge)
        #expect(parsed.playlist.sequenceNumbers.lowerBound == .max)
        _ = Lint.checkUpdate(previous: parsed, current: parsed)
        let later = try PlaylistParser.parseMedia(
            huge.replacingOccurrences(of: "SEQUENCE:9223372036854775807\n#EXT-X-DISC", with: "SEQUENCE:0\n#EXT-X-DISC"))
        _ = Lint.checkUpdate(previous: later, current: parsed)
        _ = Lint.checkUpdate(previous: parsed, current: later)
    }
}
