/// A media playlist (§4.4.3, §4.4.4): the header, the segments with the tags that precede each, and what
/// follows the last segment.
public struct MediaPlaylist: Hashable, Sendable {
    public var version: Int?
    public var targetDuration: Int
    public var mediaSequence: Int64
    public var discontinuitySequence: Int64
    public var playlistType: PlaylistType?
    public var independentSegments: Bool
    public var iFramesOnly: Bool
    public var start: StartPoint?
    public var serverControl: ServerControl?
    public var partTarget: DecimalNumber?
    /// `EXT-X-SKIP`, in a delta update.
    public var skip: Skip?
    /// Header tags this code does not model, kept verbatim (whole lines, without the newline).
    public var unknownHeaderTags: [String]
    public var segments: [Segment]
    /// Tags after the last complete segment: date ranges, parts of the segment in progress, preload hints,
    /// rendition reports, unknown tags.
    public var trailingTags: [SegmentTag]
    public var endList: Bool

    public init(
        version: Int? = nil, targetDuration: Int, mediaSequence: Int64 = 0, discontinuitySequence: Int64 = 0,
        playlistType: PlaylistType? = nil, independentSegments: Bool = false, iFramesOnly: Bool = false,
        start: StartPoint? = nil, serverControl: ServerControl? = nil, partTarget: DecimalNumber? = nil,
        skip: Skip? = nil, unknownHeaderTags: [String] = [], segments: [Segment] = [], trailingTags: [SegmentTag] = [],
        endList: Bool = false
    ) {
        self.version = version
        self.targetDuration = targetDuration
        self.mediaSequence = mediaSequence
        self.discontinuitySequence = discontinuitySequence
        self.playlistType = playlistType
        self.independentSegments = independentSegments
        self.iFramesOnly = iFramesOnly
        self.start = start
        self.serverControl = serverControl
        self.partTarget = partTarget
        self.skip = skip
        self.unknownHeaderTags = unknownHeaderTags
        self.segments = segments
        self.trailingTags = trailingTags
        self.endList = endList
    }

    public enum PlaylistType: String, Hashable, Sendable {
        case event = "EVENT", vod = "VOD"
    }

    /// Every date range tag in playlist order, wherever it stands.
    public var dateRanges: [DateRange] {
        var ranges: [DateRange] = []
        for segment in segments {
            for case .dateRange(let range) in segment.tags { ranges.append(range) }
        }
        for case .dateRange(let range) in trailingTags { ranges.append(range) }
        return ranges
    }

    /// The media sequence number of each segment, in order.
    /// Saturates at `Int64.max`: an upstream's EXT-X-MEDIA-SEQUENCE near the top cannot trap.
    public var sequenceNumbers: Range<Int64> {
        let (first, overflow) = mediaSequence.addingReportingOverflow(Int64(skip?.skippedSegments ?? 0))
        let lower = overflow ? Int64.max : first
        let (last, overflow2) = lower.addingReportingOverflow(Int64(segments.count))
        return lower..<(overflow2 ? Int64.max : last)
    }
}

/// `EXT-X-START`.
public struct StartPoint: Hashable, Sendable {
    public var timeOffset: DecimalNumber
    public var precise: Bool

    public init(timeOffset: DecimalNumber, precise: Bool = false) {
        self.timeOffset = timeOffset
        self.precise = precise
    }
}

/// `EXT-X-SERVER-CONTROL` (§4.4.3.8).
public struct ServerControl: Hashable, Sendable {
    public var canBlockReload: Bool
    public var canSkipUntil: DecimalNumber?
    public var canSkipDateRanges: Bool
    public var holdBack: DecimalNumber?
    public var partHoldBack: DecimalNumber?

    public init(
        canBlockReload: Bool = false, canSkipUntil: DecimalNumber? = nil, canSkipDateRanges: Bool = false,
        holdBack: DecimalNumber? = nil, partHoldBack: DecimalNumber? = nil
    ) {
        self.canBlockReload = canBlockReload
        self.canSkipUntil = canSkipUntil
        self.canSkipDateRanges = canSkipDateRanges
        self.holdBack = holdBack
        self.partHoldBack = partHoldBack
    }
}

/// `EXT-X-SKIP` (§4.4.5.2).
public struct Skip: Hashable, Sendable {
    public var skippedSegments: Int
    /// The ids of date ranges removed recently, in an update that skips date ranges (`_HLS_skip=v2`), where the
    /// attribute is required even when it lists none (`""`); nil when date ranges are not skipped.
    public var recentlyRemovedDateRanges: [String]?

    public init(skippedSegments: Int, recentlyRemovedDateRanges: [String]? = nil) {
        self.skippedSegments = skippedSegments
        self.recentlyRemovedDateRanges = recentlyRemovedDateRanges
    }
}

/// One media segment: the tags before it, its `EXTINF`, its URI.
public struct Segment: Hashable, Sendable {
    public var duration: DecimalNumber
    public var title: String
    public var uri: String
    /// Tags that precede the `EXTINF` line, in order.
    public var tags: [SegmentTag]

    public init(duration: DecimalNumber, title: String = "", uri: String, tags: [SegmentTag] = []) {
        self.duration = duration
        self.title = title
        self.uri = uri
        self.tags = tags
    }

    public var programDateTime: Timestamp? {
        for case .programDateTime(let date) in tags { return date }
        return nil
    }

    public var hasDiscontinuity: Bool { tags.contains(.discontinuity) }
    public var isGap: Bool { tags.contains(.gap) }

    public var map: MediaInitialization? {
        for case .map(let map) in tags { return map }
        return nil
    }
}

/// A tag attached to a segment (or trailing the last one).
public enum SegmentTag: Hashable, Sendable {
    case discontinuity
    case programDateTime(Timestamp)
    case key(Key)
    case map(MediaInitialization)
    case byteRange(ByteRange)
    case gap
    case bitrate(Int)
    /// Indirect: a date range is some 340 bytes, and inline it made every tag that size (a program date-time
    /// included), so that each copy of any tag moved 340 bytes.
    indirect case dateRange(DateRange)
    case part(Part)
    case preloadHint(PreloadHint)
    case renditionReport(RenditionReport)
    /// `EXT-X-CUE-OUT`, `EXT-X-CUE-OUT-CONT` or `EXT-X-CUE-IN`: the markers a downstream SSAI reads.
    case cue(CueMarker)
    /// A tag this code does not model, kept verbatim.
    case unknown(String)
}

/// `EXT-X-BYTERANGE` / `BYTERANGE=`: `length[@offset]`.
public struct ByteRange: Hashable, Sendable {
    public var length: Int64
    public var offset: Int64?

    public init(length: Int64, offset: Int64? = nil) {
        self.length = length
        self.offset = offset
    }
}

/// `EXT-X-MAP`.
public struct MediaInitialization: Hashable, Sendable {
    public var uri: String
    public var byteRange: ByteRange?

    public init(uri: String, byteRange: ByteRange? = nil) {
        self.uri = uri
        self.byteRange = byteRange
    }
}

/// `EXT-X-KEY`.
public struct Key: Hashable, Sendable {
    public var method: String
    public var uri: String?
    public var iv: HexBytes?
    public var keyFormat: String?
    public var keyFormatVersions: String?

    public init(
        method: String, uri: String? = nil, iv: HexBytes? = nil, keyFormat: String? = nil,
        keyFormatVersions: String? = nil
    ) {
        self.method = method
        self.uri = uri
        self.iv = iv
        self.keyFormat = keyFormat
        self.keyFormatVersions = keyFormatVersions
    }
}

/// `EXT-X-PART` (§4.4.4.9).
public struct Part: Hashable, Sendable {
    public var duration: DecimalNumber
    public var uri: String
    public var independent: Bool
    public var byteRange: ByteRange?
    public var gap: Bool

    public init(
        duration: DecimalNumber, uri: String, independent: Bool = false, byteRange: ByteRange? = nil, gap: Bool = false
    ) {
        self.duration = duration
        self.uri = uri
        self.independent = independent
        self.byteRange = byteRange
        self.gap = gap
    }
}

/// `EXT-X-PRELOAD-HINT` (§4.4.5.3).
public struct PreloadHint: Hashable, Sendable {
    public enum HintType: String, Hashable, Sendable { case part = "PART", map = "MAP" }
    public var type: HintType
    public var uri: String
    public var byteRangeStart: Int64?
    public var byteRangeLength: Int64?

    public init(type: HintType, uri: String, byteRangeStart: Int64? = nil, byteRangeLength: Int64? = nil) {
        self.type = type
        self.uri = uri
        self.byteRangeStart = byteRangeStart
        self.byteRangeLength = byteRangeLength
    }
}

/// `EXT-X-RENDITION-REPORT` (§4.4.5.4).
public struct RenditionReport: Hashable, Sendable {
    public var uri: String
    public var lastMediaSequence: Int64?
    public var lastPart: Int?

    public init(uri: String, lastMediaSequence: Int64? = nil, lastPart: Int? = nil) {
        self.uri = uri
        self.lastMediaSequence = lastMediaSequence
        self.lastPart = lastPart
    }
}
