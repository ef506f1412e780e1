import HLS

/// The "relay" source: an upstream encoder's live media playlist, decorated with the channel's date ranges.
///
/// The segments and their program date-times come from upstream; Cueline adds a program date-time to every
/// segment (carried forward from the last one upstream gave), resolves relative segment URIs against the
/// upstream URL, drops upstream interstitial date ranges (this channel's schedule owns them) and places its own.
public enum RelayDecorator {
    /// Where a relayed rendition with parts stands (``partsPosition(_:)``).
    public struct PartsPosition: Hashable, Sendable {
        /// The media sequence number of the last complete segment.
        public var lastSegment: Int64
        /// The parts of the segment in progress listed so far.
        public var partial: Int64
        public var partTargetMilliseconds: Int64
        /// The parts listed for the last complete segment (0 if none are).
        public var lastSegmentParts: Int64 = 0

        public init(lastSegment: Int64, partial: Int64, partTargetMilliseconds: Int64, lastSegmentParts: Int64 = 0) {
            self.lastSegment = lastSegment
            self.partial = partial
            self.partTargetMilliseconds = partTargetMilliseconds
            self.lastSegmentParts = lastSegmentParts
        }

        /// EXT-X-RENDITION-REPORT's LAST-MSN and LAST-PART: the last part listed (nil when it is not known).
        public var lastPart: (msn: Int64, part: Int)? {
            if partial > 0 { return (lastSegment + 1, Int(partial - 1)) }
            return lastSegmentParts > 0 ? (lastSegment, Int(lastSegmentParts - 1)) : nil
        }

        /// One number that grows with every part (`check` bounds the sequence numbers and parts, so it cannot overflow):
        /// (the segment in progress) · 2¹⁶ + its parts. Part p of segment m is
        /// there once it reaches `m · 2¹⁶ + p + 1`; the whole segment m, once it reaches `(m + 1) · 2¹⁶`.
        public var ordinal: Int64 { (lastSegment + 1) << 16 + partial }

        public static func ordinal(segment: Int64, part: Int64?) -> Int64 {
            guard let part else { return (segment + 1) << 16 }
            return segment << 16 + min(part, (1 << 16) - 2) + 1
        }
    }

    public enum Failure: Error, Hashable, Sendable, CustomStringConvertible {
        case noProgramDateTime
        case empty
        case outOfRange(String)

        public var description: String {
            switch self {
            case .noProgramDateTime:
                return "the upstream playlist has no EXT-X-PROGRAM-DATE-TIME: date ranges cannot be placed"
            case .empty: return "the upstream playlist has no segments"
            case .outOfRange(let what): return "the upstream playlist is not relayed: \(what)"
            }
        }
    }

    /// The bounds an upstream playlist is held to before it is relayed (what it gives feeds time-outs, cache lifetimes
    /// and part arithmetic: a packager's bug or a hostile upstream must not trap or stall the server).
    public static func check(_ upstream: MediaPlaylist) throws(Failure) {
        guard !upstream.segments.isEmpty else { throw .empty }
        guard (1...3600).contains(upstream.targetDuration) else {
            throw .outOfRange("EXT-X-TARGETDURATION \(upstream.targetDuration) is not between 1 and 3600 s")
        }
        guard upstream.mediaSequence >= 0, upstream.mediaSequence <= 1 << 40, upstream.segments.count <= 100_000 else {
            throw .outOfRange(
                "EXT-X-MEDIA-SEQUENCE \(upstream.mediaSequence) is beyond 2^40 (or over 100,000 segments)")
        }
        let limit = Int64(upstream.targetDuration) * 1000 + 1000
        if let target = upstream.partTarget, !(1...limit).contains(target.milliseconds) {
            throw .outOfRange("PART-TARGET \(target) is not between 0.001 s and the target duration")
        }
        var parts = 0
        for segment in upstream.segments {
            guard (0...limit).contains(segment.duration.milliseconds) else {
                throw .outOfRange("a segment lasts \(segment.duration) s, over the target duration")
            }
            for case .part(let part) in segment.tags {
                parts += 1
                guard (0...limit).contains(part.duration.milliseconds) else {
                    throw .outOfRange("a part lasts \(part.duration) s")
                }
            }
        }
        for case .part(let part) in upstream.trailingTags {
            parts += 1
            guard (0...limit).contains(part.duration.milliseconds) else {
                throw .outOfRange("a part lasts \(part.duration) s")
            }
        }
        guard parts <= 10_000 else { throw .outOfRange("\(parts) parts listed (at most 10,000)") }
    }

    /// The upstream playlist URL of one rendition: the source's template with `{rendition}` replaced.
    public static func upstreamURL(template: String, rendition: Identifier) -> String {
        template.replacingOccurrences(of: "{rendition}", with: rendition.rawValue)
    }

    /// - Parameter positions: where this channel's copy of each rendition's upstream stands (`partsPosition`): the
    ///   rendition reports say that, not what upstream reported (a player switching asks this server for it).
    public static func decorate(
        _ upstream: MediaPlaylist, upstreamURL: String, config: ChannelConfig, state: ChannelState,
        positions: [Identifier: PartsPosition] = [:]
    ) throws(Failure) -> MediaPlaylist {
        try check(upstream)
        // Program date-times: upstream's where given, carried forward (and back, for segments before the first
        // dated one) by the segment durations.
        guard let firstDated = upstream.segments.firstIndex(where: { $0.programDateTime != nil }) else {
            throw .noProgramDateTime
        }
        var starts = [Timestamp](repeating: Timestamp(milliseconds: 0), count: upstream.segments.count)
        starts[firstDated] = upstream.segments[firstDated].programDateTime!
        for index in stride(from: firstDated - 1, through: 0, by: -1) {
            starts[index] = starts[index + 1].adding(milliseconds: -upstream.segments[index].duration.milliseconds)
        }
        for index in (firstDated + 1)..<max(firstDated + 1, upstream.segments.count) {
            starts[index] =
                upstream.segments[index].programDateTime
                ?? starts[index - 1].adding(milliseconds: upstream.segments[index - 1].duration.milliseconds)
        }
        let last = upstream.segments.count - 1
        var liveEdge = starts[last].adding(milliseconds: upstream.segments[last].duration.milliseconds)
        // Low latency upstream: the parts of the segment in progress end the playlist; the live edge is the end of the
        // last one, and a date range starting in that segment goes before its parts (as for a clock channel).
        // Parts need blocking reload (and PART-HOLD-BACK): an upstream with parts but without it is relayed as segments.
        let lowLatency = upstream.partTarget != nil && upstream.serverControl?.canBlockReload == true
        let partial =
            lowLatency
            ? upstream.trailingTags.compactMap { tag -> Part? in
                if case .part(let part) = tag { return part } else { return nil }
            } : []
        if !partial.isEmpty {
            // The segment in progress starts where upstream dates it (after a jump), else where the last one ended.
            let dated = upstream.trailingTags.lazy.compactMap { tag -> Timestamp? in
                if case .programDateTime(let date) = tag { return date } else { return nil }
            }.first
            let start = dated ?? liveEdge
            starts.append(start)
            liveEdge = start.adding(milliseconds: partial.reduce(Int64(0)) { $0 + $1.duration.milliseconds })
        }
        let placed = PlaylistBuilder.dateRanges(config: config, state: state, segmentStarts: starts, liveEdge: liveEdge)

        var playlist = upstream
        playlist.version = max(upstream.version ?? 1, 3)
        playlist.playlistType = nil
        // Server control is this server's: blocking reload for an upstream with parts (the follower holds requests
        // until the upstream's part is here); no delta updates (a relay channel does not make them). The hold-backs
        // are upstream's, which knows its parts and segments.
        playlist.serverControl = Self.serverControl(upstream)
        if !lowLatency { playlist.partTarget = nil }
        var trailing: [SegmentTag] = []
        var hints: [SegmentTag] = []
        for tag in upstream.trailingTags where !isUpstreamInterstitial(tag) {
            switch tag {
            case .preloadHint:
                if let hint = relayed(tag, lowLatency: lowLatency, upstreamURL: upstreamURL) { hints.append(hint) }
            case .renditionReport(let report):
                guard lowLatency,
                    let mapped = Self.renditionReport(
                        report, upstreamURL: upstreamURL, config: config, positions: positions)
                else { continue }
                hints.append(.renditionReport(mapped))
            default:
                if let kept = relayed(tag, lowLatency: lowLatency, upstreamURL: upstreamURL) { trailing.append(kept) }
            }
        }
        // Ranges starting in the segment in progress: after its discontinuity, key and map, before its parts.
        let inProgress = (placed.bySegment[upstream.segments.count] ?? []).map { SegmentTag.dateRange($0) }
        trailing.insert(contentsOf: inProgress, at: afterLeadingTags(trailing))
        playlist.trailingTags = trailing + placed.trailing.map { .dateRange($0) } + hints
        for (index, segment) in upstream.segments.enumerated() {
            var tags = segment.tags.filter { !isUpstreamInterstitial($0) }.compactMap {
                relayed($0, lowLatency: lowLatency, upstreamURL: upstreamURL)
            }
            // The date after discontinuity/key/map, before the segment's other tags; then our ranges.
            let insertAt = afterLeadingTags(tags)
            tags.insert(.programDateTime(starts[index]), at: insertAt)
            let rangesAt = tags.index(after: insertAt)
            tags.insert(contentsOf: (placed.bySegment[index] ?? []).map { .dateRange($0) }, at: rangesAt)
            playlist.segments[index].tags = tags
            playlist.segments[index].uri = PlaylistURI.resolve(segment.uri, against: upstreamURL)
        }
        return playlist
    }

    /// Where an upstream with parts stands: its last complete segment and the parts of the one in progress (what a
    /// blocking reload of the relayed playlist waits for); nil for an upstream without parts or without blocking reload.
    public static func partsPosition(_ upstream: MediaPlaylist) -> PartsPosition? {
        guard let target = upstream.partTarget, upstream.serverControl?.canBlockReload == true,
            !upstream.segments.isEmpty
        else { return nil }
        guard (try? check(upstream)) != nil else { return nil }
        let partial = upstream.trailingTags.count { if case .part = $0 { true } else { false } }
        let lastParts = upstream.segments.last!.tags.count { if case .part = $0 { true } else { false } }
        return PartsPosition(
            lastSegment: upstream.sequenceNumbers.upperBound - 1, partial: Int64(partial),
            partTargetMilliseconds: max(1, target.milliseconds),
            lastSegmentParts: Int64(lastParts))
    }

    /// EXT-X-SERVER-CONTROL of a relayed playlist.
    static func serverControl(_ upstream: MediaPlaylist) -> ServerControl? {
        let holdBack = upstream.serverControl?.holdBack
        guard let target = upstream.partTarget, upstream.serverControl?.canBlockReload == true else {
            return holdBack.map { ServerControl(holdBack: $0) }
        }
        return ServerControl(
            canBlockReload: true, holdBack: holdBack,
            partHoldBack: upstream.serverControl?.partHoldBack
                ?? DecimalNumber(milliseconds: 3 * min(target.milliseconds, 3_600_000)))
    }

    /// An upstream rendition report, pointed at this channel's playlist of that rendition (the rendition whose
    /// upstream URL it names: path and query, or the path alone when only one rendition has it), with where this
    /// channel's copy of it stands; nil when it names none of them or that copy has no parts yet.
    static func renditionReport(
        _ report: RenditionReport, upstreamURL: String, config: ChannelConfig, positions: [Identifier: PartsPosition]
    ) -> RenditionReport? {
        guard case .relay(let template) = config.source else { return nil }
        let named = normalized(PlaylistURI.resolve(report.uri, against: upstreamURL))
        let urls = config.renditions.map {
            ($0.name, normalized(Self.upstreamURL(template: template, rendition: $0.name)))
        }
        var matches = urls.filter { $0.1 == named }
        if matches.isEmpty {
            matches = urls.filter { withoutQuery($0.1) == withoutQuery(named) }
            if matches.count != 1 { return nil }
        }
        guard let name = matches.first?.0, let last = positions[name]?.lastPart else { return nil }
        return RenditionReport(uri: "\(name).m3u8", lastMediaSequence: last.msn, lastPart: last.part)
    }

    /// A URL without its fragment, with `.` and `..` path segments applied (the query kept).
    static func normalized(_ url: String) -> String {
        let cut = url.firstIndex(where: { $0 == "?" || $0 == "#" }) ?? url.endIndex
        let query = url[cut...].prefix { $0 != "#" }
        var kept: [Substring] = []
        for segment in url[..<cut].split(separator: "/", omittingEmptySubsequences: false) {
            switch segment {
            case ".": continue
            case "..": if kept.count > 3 { kept.removeLast() }
            default: kept.append(segment)
            }
        }
        return kept.joined(separator: "/") + query
    }

    static func withoutQuery(_ url: String) -> Substring {
        url[..<(url.firstIndex(of: "?") ?? url.endIndex)]
    }

    /// An upstream tag as relayed: URIs resolved against the upstream URL; program date-times left out (they are set
    /// on every segment); parts and hints only for a relayed LL-HLS upstream.
    private static func relayed(_ tag: SegmentTag, lowLatency: Bool, upstreamURL: String) -> SegmentTag? {
        switch tag {
        case .programDateTime: return nil
        case .map(var map):
            map.uri = PlaylistURI.resolve(map.uri, against: upstreamURL)
            return .map(map)
        case .part(var part):
            guard lowLatency else { return nil }
            part.uri = PlaylistURI.resolve(part.uri, against: upstreamURL)
            return .part(part)
        case .preloadHint(var hint):
            guard lowLatency else { return nil }
            hint.uri = PlaylistURI.resolve(hint.uri, against: upstreamURL)
            return .preloadHint(hint)
        default: return tag
        }
    }

    /// Where a segment's tags after its discontinuity, key and map begin.
    private static func afterLeadingTags(_ tags: [SegmentTag]) -> Int {
        tags.firstIndex { tag in
            switch tag {
            case .discontinuity, .key, .map: return false
            default: return true
            }
        } ?? tags.endIndex
    }

    private static func isUpstreamInterstitial(_ tag: SegmentTag) -> Bool {
        if case .dateRange(let range) = tag { return range.isInterstitial }
        return false
    }
}
