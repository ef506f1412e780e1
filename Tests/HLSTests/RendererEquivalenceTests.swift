@testable import HLS
import TestSupport
import Testing

/// The byte renderer (issue 12) writes what the String renderer wrote, byte for byte, and refuses what it refused
/// with the same error: checked on playlists drawn from a seeded generator, valid and broken, ordinary and extreme.
@Suite("Byte renderer = reference renderer")
struct RendererEquivalenceTests {
    @Test("same bytes or same error on generated playlists", arguments: 0..<8)
    func generated(batch: UInt64) {
        var random = SplitMix64(seed: 0xC0E1 &+ batch)
        var rendered = 0
        var refused = 0
        for _ in 0..<500 {
            let playlist = Generator.playlist(&random)
            let expected = Result { () throws(RenderError) in try ReferenceRenderer.render(playlist) }
            let actual = Result { () throws(RenderError) in try PlaylistRenderer.render(playlist) }
            let bytes = Result { () throws(RenderError) in try PlaylistRenderer.renderBytes(playlist) }
            switch (expected, actual, bytes) {
            case (.success(let text), .success(let ours), .success(let ourBytes)):
                rendered += 1
                #expect(ours == text, "\(playlist)")
                #expect(ourBytes == Array(text.utf8))
                var appended: [UInt8] = [1, 2, 3]
                #expect(throws: Never.self) { try PlaylistRenderer.render(playlist, into: &appended) }
                #expect(appended == [1, 2, 3] + Array(text.utf8))
            case (.failure(let error), .failure(let ours), .failure(let ourBytesError)):
                refused += 1
                #expect(ours == error, "\(playlist)")
                #expect(ourBytesError == error)
            default:
                Issue.record("reference \(expected), byte renderer \(actual) for \(playlist)")
            }
            for range in playlist.dateRanges {
                let expected = Result { () throws(RenderError) in try ReferenceRenderer.render(range) }
                let actual = Result { () throws(RenderError) in try PlaylistRenderer.render(range) }
                #expect(expected == actual)
            }
        }
        // Both kinds must be exercised, or the comparison proves little.
        #expect(rendered > 100)
        #expect(refused > 50)
    }

    @Test("a render that outgrows its first buffer renders again and gives the same bytes")
    func outgrowsItsBuffer() throws {
        var random = SplitMix64(seed: 7)
        for _ in 0..<50 {
            let playlist = Generator.playlist(&random, valid: true)
            let expected = try ReferenceRenderer.render(playlist)
            for estimate in [1, 64, 300] {
                let bytes = try PlaylistRenderer.withWriter(
                    estimate: estimate,
                    write: { PlaylistRenderer.write(playlist, to: &$0) },
                    body: { Array($0) })
                #expect(bytes == Array(expected.utf8))
            }
        }
    }

    @Test("a 100-segment window of 6 s segments with 4 date ranges")
    func longWindow() throws {
        var segments: [Segment] = []
        let epoch = Timestamp(milliseconds: 1_772_366_400_000)
        for n in 0..<100 {
            var tags: [SegmentTag] = [.programDateTime(epoch.adding(milliseconds: Int64(n) * 6000))]
            if n % 25 == 3 {
                tags.append(
                    .dateRange(
                        DateRange(
                            id: "brk-\(n)", classAttribute: DateRange.interstitialClass,
                            startDate: epoch.adding(milliseconds: Int64(n) * 6000),
                            plannedDuration: DecimalNumber(milliseconds: 30_000),
                            assetURI: "https://ads.example/\(n).m3u8", snap: [.out, .in])))
            }
            segments.append(Segment(duration: DecimalNumber(milliseconds: 6000), uri: "720p/seg\(n).ts", tags: tags))
        }
        let playlist = MediaPlaylist(version: 3, targetDuration: 6, mediaSequence: 0, segments: segments)
        #expect(try PlaylistRenderer.render(playlist) == ReferenceRenderer.render(playlist))
    }
}

/// Playlists of every shape the model allows. `valid` keeps to values both renderers accept; otherwise about one
/// value in forty is broken (a line break or quote in a string, a negative number, an empty hex value, a bad or
/// duplicate client attribute name, a URI starting with `#`), so most playlists render and many are refused.
enum Generator {
    static func playlist(_ r: inout SplitMix64, valid: Bool = false) -> MediaPlaylist {
        let g = Draw(random: r, valid: valid)
        defer { r = g.random }
        var playlist = MediaPlaylist(
            version: g.maybe { Int(g.integer()) },
            targetDuration: g.broken ? 0 : Int.random(in: 1...10, using: &g.random),
            mediaSequence: g.integer(), discontinuitySequence: g.chance(0.3) ? g.integer() : 0,
            playlistType: g.maybe { Bool.random(using: &g.random) ? .event : .vod },
            independentSegments: g.chance(0.5), iFramesOnly: g.chance(0.1))
        playlist.start = g.maybe(0.2) { StartPoint(timeOffset: g.decimal(signed: true), precise: g.chance(0.5)) }
        playlist.serverControl = g.maybe(0.2) {
            ServerControl(
                canBlockReload: g.chance(0.5), canSkipUntil: g.maybe { g.decimal() }, canSkipDateRanges: g.chance(0.5),
                holdBack: g.maybe { g.decimal() }, partHoldBack: g.maybe { g.decimal() })
        }
        playlist.partTarget = g.maybe(0.2) { g.decimal() }
        playlist.skip = g.maybe(0.1) {
            Skip(
                skippedSegments: Int(g.count()),
                recentlyRemovedDateRanges: (0..<Int.random(in: 0...3, using: &g.random)).map { _ in g.text() })
        }
        playlist.unknownHeaderTags = (0..<Int.random(in: 0...2, using: &g.random)).map { _ in g.tagLine() }
        playlist.segments = (0..<Int.random(in: 0...12, using: &g.random)).map { _ in
            Segment(
                duration: g.decimal(signed: true), title: g.chance(0.2) ? g.text() : "", uri: g.uri(),
                tags: (0..<Int.random(in: 0...3, using: &g.random)).map { _ in g.tag() })
        }
        playlist.trailingTags = (0..<Int.random(in: 0...4, using: &g.random)).map { _ in g.tag() }
        playlist.endList = g.chance(0.2)
        return playlist
    }

    final class Draw {
        var random: SplitMix64
        let valid: Bool

        init(random: SplitMix64, valid: Bool) {
            self.random = random
            self.valid = valid
        }

        func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &random) < p }
        /// Whether to break the next value.
        var broken: Bool {
            get { !valid && chance(0.025) }
        }

        func maybe<T>(_ p: Double = 0.5, _ make: () -> T) -> T? { chance(p) ? make() : nil }

        func integer() -> Int64 {
            switch Int.random(in: 0..<10, using: &random) {
            case 0: return [Int64.max, Int64.min, 0, -1][Int.random(in: 0..<4, using: &random)]
            case 1: return Int64.random(in: -1000...(-1), using: &random)
            default: return Int64.random(in: 0...1_000_000_000, using: &random)
            }
        }

        /// Non-negative unless broken.
        func count() -> Int64 {
            broken ? -Int64.random(in: 1...100, using: &random) : Int64.random(in: 0...100_000, using: &random)
        }

        func decimal(signed: Bool = false) -> DecimalNumber {
            var mantissa: Int64 =
                chance(0.05)
                ? [Int64.max, Int64.min + 1, 0, 1][Int.random(in: 0..<4, using: &random)]
                : Int64.random(in: 0...100_000_000, using: &random)
            if mantissa > 0, signed ? chance(0.3) : broken { mantissa = -mantissa }
            if chance(0.01) { mantissa = .min }
            return DecimalNumber(
                mantissa: signed || mantissa >= 0 || !valid ? mantissa : 0, scale: Int.random(in: 0...9, using: &random)
            )
        }

        func timestamp() -> Timestamp {
            switch Int.random(in: 0..<12, using: &random) {
            case 0:
                return Timestamp(
                    milliseconds: [Int64.max, Int64.min, 0, -1, -62_167_219_200_001, 253_402_300_800_000][
                        Int.random(in: 0..<6, using: &random)])
            case 1: return Timestamp(milliseconds: Int64.random(in: Int64.min...Int64.max, using: &random))
            default:
                return Timestamp(
                    milliseconds: Int64.random(in: -62_167_219_200_000...253_402_300_799_999, using: &random))
            }
        }

        /// Text for a quoted string: ASCII, non-ASCII, empty; broken: with CR, LF or `"`.
        func text() -> String {
            let pieces = [
                "a", "brk-", "42", " ", "é", "日本", "https://x.example/p?q=1&r=2", "#", "-", ",", "=", "\u{301}", "\t",
            ]
            var out = ""
            for _ in 0..<Int.random(in: 0...6, using: &random) { out += pieces.randomElement(using: &random)! }
            if broken {
                out.insert(
                    ["\n", "\r", "\""].randomElement(using: &random)!,
                    at: out.index(out.startIndex, offsetBy: Int.random(in: 0...out.count, using: &random)))
            }
            return out
        }

        func uri() -> String {
            if broken { return ["", "#x.ts", "a.ts\n#EXT-X-ENDLIST", "a\r.ts"].randomElement(using: &random)! }
            // `#` and a combining mark is one character that is not `#`: a valid URI to the String renderer.
            if chance(0.02) { return "#\u{301}seg.ts" }
            return "720p/seg\(Int.random(in: 0...100_000, using: &random)).ts"
                + (chance(0.1) ? text().filter { !"\n\r\"".contains($0) } : "")
        }

        func tagLine() -> String {
            if broken { return ["X-NO-HASH", "#X\nY", "", "#\u{301}X"].randomElement(using: &random)! }
            return "#EXT-X-UNKNOWN:" + text().filter { !"\n\r".contains($0) }
        }

        func hex() -> HexBytes {
            HexBytes(
                broken
                    ? []
                    : (0..<Int.random(in: 1...12, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random)
                    })
        }

        func byteRange() -> ByteRange {
            ByteRange(length: integer(), offset: maybe { integer() })
        }

        func tag() -> SegmentTag {
            switch Int.random(in: 0..<14, using: &random) {
            case 0: return .discontinuity
            case 1, 2: return .programDateTime(timestamp())
            case 3:
                let method =
                    broken
                    ? ["", "A,B", "A B", "\"X\""].randomElement(using: &random)!
                    : ["NONE", "AES-128", "SAMPLE-AES"].randomElement(using: &random)!
                return .key(
                    Key(
                        method: method, uri: maybe { text() }, iv: maybe { hex() }, keyFormat: maybe { text() },
                        keyFormatVersions: maybe { text() }))
            case 4: return .map(MediaInitialization(uri: text(), byteRange: maybe { byteRange() }))
            case 5: return .byteRange(byteRange())
            case 6: return .gap
            case 7: return .bitrate(Int(integer()))
            case 8:
                return .part(
                    Part(
                        duration: decimal(), uri: text(), independent: chance(0.5), byteRange: maybe { byteRange() },
                        gap: chance(0.2)))
            case 9:
                return .preloadHint(
                    PreloadHint(
                        type: chance(0.5) ? .part : .map, uri: text(), byteRangeStart: maybe { count() },
                        byteRangeLength: maybe { count() }))
            case 10:
                return .renditionReport(
                    RenditionReport(uri: text(), lastMediaSequence: maybe { count() }, lastPart: maybe { Int(count()) })
                )
            case 11: return .unknown(tagLine())
            default: return .dateRange(dateRange())
            }
        }

        func clientName() -> String {
            if broken { return ["X-", "Y-ABC", "X-abc", "X-A B", "X-É", ""].randomElement(using: &random)! }
            // Typed attributes' names collide when the typed one is present: only drawn when values may be broken.
            let typed = valid ? [] : ["X-ASSET-URI", "X-SNAP", "X-TIMELINE-STYLE", "X-SKIP-CONTROL-LABEL-ID"]
            return (["X-COM-EXAMPLE-ID", "X-AD-ID", "X-1"] + typed).randomElement(using: &random)!
        }

        func clientAttributes() -> [ClientAttribute] {
            var attributes: [ClientAttribute] = []
            var names: Set<String> = []
            for _ in 0..<Int.random(in: 0...3, using: &random) {
                let name = clientName()
                // Names already used stay out unless this value is to be broken (a duplicate).
                guard names.insert(name).inserted || broken else { continue }
                let value: ClientAttribute.Value
                switch Int.random(in: 0..<3, using: &random) {
                case 0: value = .string(text())
                case 1: value = .hex(hex())
                default: value = .decimal(decimal(signed: true))
                }
                attributes.append(ClientAttribute(name: name, value: value))
            }
            return attributes
        }

        func dateRange() -> DateRange {
            var range = DateRange(id: chance(0.9) ? "brk-\(Int.random(in: 0...999, using: &random))" : text())
            range.classAttribute = maybe(0.7) { chance(0.8) ? DateRange.interstitialClass : text() }
            range.startDate = maybe(0.9) { timestamp() }
            range.cue = maybe(0.2) {
                (0..<Int.random(in: 0...3, using: &random)).map { _ in
                    DateRange.Cue.allCases.randomElement(using: &random)!
                }
            }
            range.endDate = maybe(0.1) { timestamp() }
            range.duration = maybe(0.4) { decimal() }
            range.plannedDuration = maybe(0.6) { decimal() }
            range.assetURI = maybe(0.5) { text() }
            range.assetList = maybe(0.2) { text() }
            range.resumeOffset = maybe(0.2) { decimal(signed: true) }
            range.playoutLimit = maybe(0.3) { decimal() }
            range.snap = maybe(0.3) {
                (0..<Int.random(in: 0...2, using: &random)).map { _ in
                    DateRange.Snap.allCases.randomElement(using: &random)!
                }
            }
            range.restrict = maybe(0.3) {
                (0..<Int.random(in: 0...2, using: &random)).map { _ in
                    DateRange.Restriction.allCases.randomElement(using: &random)!
                }
            }
            range.contentMayVary = maybe(0.1) { chance(0.5) }
            range.timelineOccupies = maybe(0.1) { chance(0.5) ? .point : .range }
            range.timelineStyle = maybe(0.1) { chance(0.5) ? .highlight : .primary }
            range.skipControlOffset = maybe(0.1) { decimal() }
            range.skipControlDuration = maybe(0.1) { decimal() }
            range.skipControlLabelID = maybe(0.1) { text() }
            range.clientAttributes = chance(0.4) ? clientAttributes() : []
            range.scte35Command = maybe(0.1) { hex() }
            range.scte35Out = maybe(0.1) { hex() }
            range.scte35In = maybe(0.1) { hex() }
            range.endOnNext = chance(0.1)
            return range
        }
    }
}
