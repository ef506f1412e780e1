import HLS

/// The "relay" source: an upstream encoder's live media playlist, decorated with the channel's date ranges.
///
/// The segments and their program date-times come from upstream; Cueline adds a program date-time to every
/// segment (carried forward from the last one upstream gave), resolves relative segment URIs against the
/// upstream URL, drops upstream interstitial date ranges (this channel's schedule owns them) and places its own.
public enum RelayDecorator {
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
        let liveEdge = starts[last].adding(milliseconds: upstream.segments[last].duration.milliseconds)
        let placed = PlaylistBuilder.dateRanges(config: config, state: state, segmentStarts: starts, liveEdge: liveEdge)

        var playlist = upstream
        playlist.version = max(upstream.version ?? 1, 3)
        playlist.playlistType = nil
        playlist.trailingTags = upstream.trailingTags.filter { !isUpstreamInterstitial($0) } + placed.trailing.map { .dateRange($0) }
        for (index, segment) in upstream.segments.enumerated() {
            var tags: [SegmentTag] = []
            for tag in segment.tags where !isUpstreamInterstitial(tag) {
                switch tag {
                case .programDateTime: continue
                case .map(var map):
                    map.uri = PlaylistURI.resolve(map.uri, against: upstreamURL)
                    tags.append(.map(map))
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

    private static func isUpstreamInterstitial(_ tag: SegmentTag) -> Bool {
        if case .dateRange(let range) = tag { return range.isInterstitial }
        return false
    }
}
