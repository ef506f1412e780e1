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

        /// One number that grows with every part: (the segment in progress) · 2¹⁶ + its parts. Part p of segment m is
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

        public var description: String {
            switch self {
            case .noProgramDateTime: return "the upstream playlist has no EXT-X-PROGRAM-DATE-TIME: date ranges cannot be placed"
            case .empty: return "the upstream playlist has no segments"
            }
        }
    }

    /// The upstream playlist URL of one rendition: the source's template with `{rendition}` replaced.
    public static func upstreamURL(template: String, rendition: Identifier) -> String {
        template.replacingOccurrences(of: "{rendition}", with: rendition.rawValue)
    }

    public static func decorate(
        _ upstream: MediaPlaylist, upstreamURL: String, config: ChannelConfig, state: ChannelState
    ) throws(Failure) -> MediaPlaylist {
        guard !upstream.segments.isEmpty else { throw .empty }
        // Program date-times: upstream's where given, carried forward (and back, for segments before the first
        // dated one) by the segment durations.
        guard let firstDated = upstream.segments.firstIndex(where: { $0.programDateTime != nil }) else { throw .noProgramDateTime }
        var starts = [Timestamp](repeating: Timestamp(milliseconds: 0), count: upstream.segments.count)
        starts[firstDated] = upstream.segments[firstDated].programDateTime!
        for index in stride(from: firstDated - 1, through: 0, by: -1) {
            starts[index] = starts[index + 1].adding(milliseconds: -upstream.segments[index].duration.milliseconds)
        }
        for index in (firstDated + 1)..<max(firstDated + 1, upstream.segments.count) {
            starts[index] = upstream.segments[index].programDateTime
                ?? starts[index - 1].adding(milliseconds: upstream.segments[index - 1].duration.milliseconds)
        }
        let last = upstream.segments.count - 1
        var liveEdge = starts[last].adding(milliseconds: upstream.segments[last].duration.milliseconds)
        // Low latency upstream: the parts of the segment in progress end the playlist; the live edge is the end of the
        // last one, and a date range starting in that segment goes before its parts (as for a clock channel).
        let lowLatency = upstream.partTarget != nil
        let partial = lowLatency ? upstream.trailingTags.compactMap { tag -> Part? in if case .part(let part) = tag { return part } else { return nil } } : []
        if !partial.isEmpty {
            starts.append(liveEdge)
            liveEdge = liveEdge.adding(milliseconds: partial.reduce(0) { $0 + $1.duration.milliseconds })
        }
        let placed = PlaylistBuilder.dateRanges(config: config, state: state, segmentStarts: starts, liveEdge: liveEdge)

        var playlist = upstream
        playlist.version = max(upstream.version ?? 1, 3)
        playlist.playlistType = nil
        // Server control is this server's: blocking reload for an upstream with parts (the follower holds requests
        // until the upstream's part is here); no delta updates (a relay channel does not make them). The hold-backs
        // are upstream's, which knows its parts and segments.
        playlist.serverControl = Self.serverControl(upstream)
        var trailing: [SegmentTag] = []
        var hints: [SegmentTag] = []
        for tag in upstream.trailingTags where !isUpstreamInterstitial(tag) {
            switch tag {
            case .programDateTime: continue
            case .part(var part):
                part.uri = PlaylistURI.resolve(part.uri, against: upstreamURL)
                trailing.append(.part(part))
            case .map(var map):
                map.uri = PlaylistURI.resolve(map.uri, against: upstreamURL)
                trailing.append(.map(map))
            case .preloadHint(var hint):
                hint.uri = PlaylistURI.resolve(hint.uri, against: upstreamURL)
                hints.append(.preloadHint(hint))
            case .renditionReport(let report):
                if let mapped = Self.renditionReport(report, upstreamURL: upstreamURL, config: config) { hints.append(.renditionReport(mapped)) }
            default: trailing.append(tag)
            }
        }
        if !lowLatency { hints = hints.filter { if case .renditionReport = $0 { false } else { true } } }
        let inProgress = (placed.bySegment[upstream.segments.count] ?? []).map { SegmentTag.dateRange($0) }
        playlist.trailingTags = inProgress + trailing + placed.trailing.map { .dateRange($0) } + hints
        for (index, segment) in upstream.segments.enumerated() {
            var tags: [SegmentTag] = []
            for tag in segment.tags where !isUpstreamInterstitial(tag) {
                switch tag {
                case .programDateTime: continue
                case .map(var map):
                    map.uri = PlaylistURI.resolve(map.uri, against: upstreamURL)
                    tags.append(.map(map))
                case .part(var part):
                    part.uri = PlaylistURI.resolve(part.uri, against: upstreamURL)
                    tags.append(.part(part))
                default: tags.append(tag)
                }
            }
            // The date after discontinuity/key/map, before the segment's other tags; then our ranges.
            let insertAt = tags.firstIndex { tag in
                switch tag {
                case .discontinuity, .key, .map: return false
                default: return true
                }
            } ?? tags.endIndex
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
        guard let target = upstream.partTarget, upstream.serverControl?.canBlockReload == true, !upstream.segments.isEmpty else { return nil }
        let partial = upstream.trailingTags.count { if case .part = $0 { true } else { false } }
        return PartsPosition(
            lastSegment: upstream.sequenceNumbers.upperBound - 1, partial: Int64(partial), partTargetMilliseconds: max(1, target.milliseconds))
    }

    /// EXT-X-SERVER-CONTROL of a relayed playlist.
    static func serverControl(_ upstream: MediaPlaylist) -> ServerControl? {
        let holdBack = upstream.serverControl?.holdBack
        guard let target = upstream.partTarget, upstream.serverControl?.canBlockReload == true else {
            return holdBack.map { ServerControl(holdBack: $0) }
        }
        return ServerControl(
            canBlockReload: true, holdBack: holdBack,
            partHoldBack: upstream.serverControl?.partHoldBack ?? DecimalNumber(milliseconds: 3 * target.milliseconds))
    }

    /// An upstream rendition report, pointed at this channel's playlist of that rendition (the rendition whose
    /// upstream URL it names); nil when it names none of them.
    static func renditionReport(_ report: RenditionReport, upstreamURL: String, config: ChannelConfig) -> RenditionReport? {
        guard case .relay(let template) = config.source else { return nil }
        let named = normalized(PlaylistURI.resolve(report.uri, against: upstreamURL))
        for rendition in config.renditions where normalized(Self.upstreamURL(template: template, rendition: rendition.name)) == named {
            var mapped = report
            mapped.uri = "\(rendition.name).m3u8"
            return mapped
        }
        return nil
    }

    /// A URL without its query or fragment, with `.` and `..` path segments applied.
    static func normalized(_ url: String) -> String {
        let path = url[..<(url.firstIndex(where: { $0 == "?" || $0 == "#" }) ?? url.endIndex)]
        var kept: [Substring] = []
        for segment in path.split(separator: "/", omittingEmptySubsequences: false) {
            switch segment {
            case ".": continue
            case "..": if kept.count > 3 { kept.removeLast() }
            default: kept.append(segment)
            }
        }
        return kept.joined(separator: "/")
    }

    private static func isUpstreamInterstitial(_ tag: SegmentTag) -> Bool {
        if case .dateRange(let range) = tag { return range.isInterstitial }
        return false
    }
}
