/// An interstitial asset's playlist as Cueline reads it: to measure the media's length at placement, and to serve
/// the asset as a list of short chunks (each a VOD playlist of some of the asset's own segments), so a playout limit
/// that reaches a player mid-ad ends the ad at the next chunk boundary.
///
/// Tags are kept as the asset wrote them; only URIs are made absolute. Pure.
public enum VODPlaylist: Hashable, Sendable {
    case media(Media)
    case multivariant(Multivariant)

    /// A VOD media playlist: its header lines and its segments.
    public struct Media: Hashable, Sendable {
        /// Playlist-level tags before the first segment (version, target duration, independent segments…), without
        /// `#EXTM3U`, `EXT-X-MEDIA-SEQUENCE`, `EXT-X-PLAYLIST-TYPE`, `EXT-X-ENDLIST`.
        public var header: [String]
        public var segments: [Segment]
        /// The asset's `EXT-X-MEDIA-SEQUENCE` (0 when absent): a chunk keeps its segments' numbers, which an
        /// AES-128 key without an IV takes as the IV.
        public var firstSequence: Int64 = 0
        /// Why the asset cannot be split into chunks (byte ranges, variables…), or nil when it can.
        public var unchunkable: String?

        /// Total length in milliseconds (each EXTINF rounded to the millisecond).
        public var durationMilliseconds: Int64 { segments.reduce(0) { $0 + $1.durationMilliseconds } }
    }

    public struct Segment: Hashable, Sendable {
        /// Tags between the previous segment and this one's `EXTINF`, URIs made absolute.
        public var tags: [String]
        /// The `EXTINF` line as written.
        public var extinf: String
        public var durationMilliseconds: Int64
        public var uri: String
        /// The `EXT-X-MAP` and `EXT-X-KEY` lines in effect at this segment (absolute URIs), so a chunk starting here
        /// can repeat them.
        public var inEffect: [String]
    }

    /// A multivariant playlist: its variants (the `EXT-X-STREAM-INF` line and the absolute media playlist URI).
    public struct Multivariant: Hashable, Sendable {
        public var header: [String]
        public var variants: [(streamInf: String, uri: String)]
        public var unchunkable: String?

        public static func == (a: Multivariant, b: Multivariant) -> Bool {
            a.header == b.header && a.unchunkable == b.unchunkable
                && a.variants.map(\.streamInf) == b.variants.map(\.streamInf)
                && a.variants.map(\.uri) == b.variants.map(\.uri)
        }

        public func hash(into hasher: inout Hasher) {
            hasher.combine(header)
            for variant in variants {
                hasher.combine(variant.streamInf)
                hasher.combine(variant.uri)
            }
        }
    }

    public struct Problem: Error, Hashable, Sendable, CustomStringConvertible {
        public var description: String
        init(_ description: String) { self.description = description }
    }

    /// Reads a playlist fetched from `url` (relative URIs are resolved against it).
    /// The most segments an asset may have (an hour of 1 s segments): more is refused rather than parsed.
    public static let maximumSegments = 3600

    public static func parse(_ text: String, url: String) throws(Problem) -> VODPlaylist {
        let lines = text.split(
            omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" || $0 == "\r" }
        )
        .map { $0.trimmingWhitespace() }
        guard lines.first == "#EXTM3U" else { throw Problem("it does not start with #EXTM3U") }
        if lines.contains(where: { $0.hasPrefix("#EXT-X-STREAM-INF") }) {
            return .multivariant(try multivariant(lines, url: url))
        }
        return .media(try media(lines, url: url))
    }

    private static func multivariant(_ lines: [String], url: String) throws(Problem) -> Multivariant {
        var result = Multivariant(header: [], variants: [], unchunkable: nil)
        var pending: String?
        for line in lines.dropFirst() where !line.isEmpty {
            if line.hasPrefix("#EXT-X-STREAM-INF:") {
                pending = line
            } else if line.hasPrefix("#") {
                if line.hasPrefix("#EXT-X-MEDIA:"), line.contains("URI=") {
                    result.unchunkable = "it has alternative renditions with their own playlists (EXT-X-MEDIA with URI)"
                }
                if line.hasPrefix("#EXT-X-I-FRAME-STREAM-INF") || line.hasPrefix("#EXT-X-SESSION-") { continue }
                if line.hasPrefix("#EXT-X-DEFINE") { result.unchunkable = "it uses variables (EXT-X-DEFINE)" }
                if line.hasPrefix("#EXT") { result.header.append(line) }
            } else if let streamInf = pending {
                result.variants.append((streamInf, PlaylistURI.resolve(line, against: url)))
                pending = nil
            }
        }
        guard !result.variants.isEmpty else { throw Problem("its EXT-X-STREAM-INF tags name no playlist") }
        return result
    }

    private static func media(_ lines: [String], url: String) throws(Problem) -> Media {
        var result = Media(header: [], segments: [], unchunkable: nil)
        var tags: [String] = []
        var extinf: String?
        var map: String?
        /// The key in effect per KEYFORMAT, in the order they appeared.
        var keys: [(format: String, line: String)] = []
        var ended = false
        for (index, line) in lines.enumerated().dropFirst() where !line.isEmpty {
            if line.hasPrefix("#EXTINF:") {
                extinf = line
            } else if line.hasPrefix("#") {
                guard line.hasPrefix("#EXT") else { continue }
                if line == "#EXT-X-ENDLIST" { ended = true; continue }
                if line.hasPrefix("#EXT-X-MEDIA-SEQUENCE:") {
                    guard let sequence = Int64(line.dropFirst("#EXT-X-MEDIA-SEQUENCE:".count)),
                        (0...(1 << 40)).contains(sequence)
                    else {
                        throw Problem("line \(index + 1): unreadable \(line.prefix(80))")
                    }
                    result.firstSequence = sequence
                    continue
                }
                if line.hasPrefix("#EXT-X-PLAYLIST-TYPE") || line.hasPrefix("#EXT-X-START") { continue }
                if line.hasPrefix("#EXT-X-BYTERANGE") || line.contains("BYTERANGE=") {
                    result.unchunkable = "it uses byte ranges"
                }
                if line.hasPrefix("#EXT-X-DEFINE") { result.unchunkable = "it uses variables (EXT-X-DEFINE)" }
                let absolute = absolutizingURIAttribute(line, against: url)
                if line.hasPrefix("#EXT-X-MAP:") { map = absolute }
                if line.hasPrefix("#EXT-X-KEY:") {
                    // A KEY applies until the next KEY with the same KEYFORMAT (absent: "identity").
                    let format = attribute("KEYFORMAT", in: line) ?? "identity"
                    keys.removeAll { $0.format == format }
                    if !line.contains("METHOD=NONE") { keys.append((format, absolute)) }
                }
                if result.segments.isEmpty && extinf == nil && isPlaylistLevel(line) {
                    result.header.append(absolute)
                } else {
                    tags.append(absolute)
                }
            } else {
                guard let info = extinf else { throw Problem("line \(index + 1): a segment URI without #EXTINF") }
                guard let duration = extinfMilliseconds(info) else {
                    throw Problem("line \(index + 1): unreadable \(info.prefix(80))")
                }
                guard result.segments.count < maximumSegments else {
                    throw Problem("it has more than \(maximumSegments) segments")
                }
                result.segments.append(
                    Segment(
                        tags: tags, extinf: info, durationMilliseconds: duration,
                        uri: PlaylistURI.resolve(line, against: url),
                        inEffect: (map.map { [$0] } ?? []) + keys.map(\.line)))
                tags = []
                extinf = nil
            }
        }
        guard ended else {
            throw Problem("it is not a VOD playlist (no EXT-X-ENDLIST): an interstitial asset must be VOD")
        }
        guard !result.segments.isEmpty else { throw Problem("it lists no segment") }
        return result
    }

    /// The value of `NAME=` in an attribute list line (quotes removed), or nil.
    static func attribute(_ name: String, in line: String) -> String? {
        guard let range = line.range(of: "," + name + "=") ?? line.range(of: ":" + name + "=") else { return nil }
        var value = line[range.upperBound...]
        if value.hasPrefix("\"") {
            value = value.dropFirst()
            return String(value.prefix { $0 != "\"" })
        }
        return String(value.prefix { $0 != "," })
    }

    private static func isPlaylistLevel(_ line: String) -> Bool {
        ["#EXT-X-VERSION", "#EXT-X-TARGETDURATION", "#EXT-X-INDEPENDENT-SEGMENTS", "#EXT-X-DEFINE"]
            .contains { line.hasPrefix($0) }
    }

    /// `#EXTINF:<duration>,[title]` in whole milliseconds (to the nearest; digits past the sixth decimal ignored), or nil.
    static func extinfMilliseconds(_ line: String) -> Int64? {
        var value = Substring(line.dropFirst("#EXTINF:".count).prefix { $0 != "," })
        if let point = value.firstIndex(of: "."), value.distance(from: point, to: value.endIndex) > 7 {
            value = value[..<value.index(point, offsetBy: 7)]
        }
        guard let number = DecimalNumber(value), var milliseconds = number.checkedMilliseconds else { return nil }
        if number.scale > 3 {
            var divisor: Int64 = 1
            for _ in 3..<number.scale { divisor *= 10 }
            if (number.mantissa % divisor) * 2 >= divisor { milliseconds += 1 }
        }
        guard milliseconds > 0, milliseconds <= 24 * 3_600_000 else { return nil }
        return milliseconds
    }

    /// Makes a `URI="…"` attribute absolute.
    static func absolutizingURIAttribute(_ line: String, against base: String) -> String {
        guard let range = line.range(of: "URI=\"") else { return line }
        guard let close = line[range.upperBound...].firstIndex(of: "\"") else { return line }
        let uri = String(line[range.upperBound..<close])
        return String(line[..<range.upperBound]) + PlaylistURI.resolve(uri, against: base) + String(line[close...])
    }
}

extension VODPlaylist.Media {
    /// Chunk boundaries: consecutive segments grouped so each chunk is at most `target` milliseconds (a single longer
    /// segment is a chunk of its own), with at most `maximumChunks` chunks (larger chunks when the asset is long).
    /// Returns each chunk's length in milliseconds; they add up to the asset's length.
    public func chunkMilliseconds(target: Int64 = 2000, maximumChunks: Int = 600) -> [Int64] {
        let total = durationMilliseconds
        let limit = max(target, (total + Int64(maximumChunks) - 1) / Int64(maximumChunks))
        var chunks: [Int64] = []
        var current: Int64 = 0
        for segment in segments {
            if current > 0 && current + segment.durationMilliseconds > limit {
                chunks.append(current)
                current = 0
            }
            current += segment.durationMilliseconds
        }
        if current > 0 { chunks.append(current) }
        return chunks
    }

    /// The VOD playlist of the segments whose middle falls in [`from`, `to`) milliseconds into the asset (so every
    /// segment is in exactly one chunk, also in a rendition whose segments do not line up with the measured one's),
    /// or nil when no segment does (the asset changed since it was measured).
    public func chunk(from: Int64, to: Int64) -> String? {
        var start: Int64 = 0
        var picked: [VODPlaylist.Segment] = []
        var firstSequence: Int64 = 0
        for (index, segment) in segments.enumerated() {
            defer { start += segment.durationMilliseconds }
            let middle = start + segment.durationMilliseconds / 2
            guard middle >= from, middle < to else { continue }
            if picked.isEmpty { firstSequence = self.firstSequence + Int64(index) }
            picked.append(segment)
        }
        guard !picked.isEmpty else { return nil }
        var lines = ["#EXTM3U"]
        var header = self.header
        let longest = picked.map(\.durationMilliseconds).max() ?? 1000
        header.removeAll { $0.hasPrefix("#EXT-X-TARGETDURATION") }
        lines += header
        lines.append("#EXT-X-TARGETDURATION:\(max(1, (longest + 500) / 1000))")
        lines.append("#EXT-X-MEDIA-SEQUENCE:\(firstSequence)")
        lines.append("#EXT-X-PLAYLIST-TYPE:VOD")
        for (offset, segment) in picked.enumerated() {
            if offset == 0 {
                // Repeat the initialization section and key in effect, unless the segment's own tags set them.
                for line in segment.inEffect where !segment.tags.contains(line) { lines.append(line) }
                lines += segment.tags.filter { !$0.hasPrefix("#EXT-X-DISCONTINUITY") || offset > 0 }
            } else {
                lines += segment.tags
            }
            lines.append(segment.extinf)
            lines.append(segment.uri)
        }
        lines.append("#EXT-X-ENDLIST")
        return lines.joined(separator: "\n") + "\n"
    }
}

extension Substring {
    fileprivate func trimmingWhitespace() -> String {
        var slice = self[...]
        while let first = slice.first, first == " " || first == "\t" { slice = slice.dropFirst() }
        while let last = slice.last, last == " " || last == "\t" { slice = slice.dropLast() }
        return String(slice)
    }
}

/// URIs inside playlists.
public enum PlaylistURI {
    /// Resolves a relative URI against an http(s) playlist URL; other bases (files) keep their URIs.
    public static func resolve(_ uri: String, against base: String) -> String {
        guard base.hasPrefix("http://") || base.hasPrefix("https://"), let schemeEnd = base.range(of: "://")?.upperBound
        else { return uri }
        if uri.contains("://") { return uri }
        let hostEnd = base[schemeEnd...].firstIndex(of: "/") ?? base.endIndex
        if uri.hasPrefix("//") { return String(base[..<schemeEnd].dropLast(2)) + uri }
        if uri.hasPrefix("/") { return String(base[..<hostEnd]) + uri }
        let path = base[..<(base.firstIndex(where: { $0 == "?" || $0 == "#" }) ?? base.endIndex)]
        let directory = path[..<(path.lastIndex(of: "/").map { path.index(after: $0) } ?? path.endIndex)]
        return String(directory) + uri
    }
}
