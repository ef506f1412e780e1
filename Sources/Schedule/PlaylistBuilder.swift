import HLS
import Synchronization

/// Builds a channel's playlists from its configuration, its schedule and a tick time. Pure: the same inputs
/// give the same playlists, which is what makes replay exact and lets instances serve without a leader.
public enum PlaylistBuilder {
    /// The version of what this builder and `PlaylistRenderer` produce. Any change to the bytes of a playlist for
    /// the same log and tick must bump it and keep the old behaviour reachable, so replay of history stays exact;
    /// `cueline verify` re-renders recorded samples with the version they were served with.
    ///
    /// 2 (issue 33): a channel with signalling gets SCTE-35 on every break and, by its markers, CUE markers or date
    /// ranges without the interstitial class. A channel without signalling renders as version 1 did: its version is
    /// `ChannelConfig.rendererVersion`, the one its render samples record.
    ///
    /// 3 (issue 35): a channel with ad settings gets preload ranges before its breaks, breaks filled by an ad server
    /// point at this service's asset list, and skip control is published. A channel without ad settings renders as
    /// its configuration's version did (`ChannelState.rendererVersion`).
    public static let rendererVersion = 3
    /// The versions this build renders, each for the channels it applies to.
    public static let rendererVersions = 1...3

    /// The media playlist of one rendition at `tick`, or nil before three target durations of segments exist.
    public static func mediaPlaylist(
        config: ChannelConfig, state: ChannelState, rendition: RenditionConfig, at tick: Timestamp
    ) -> MediaPlaylist? {
        guard config.source == .clock else { return nil }
        let timeline = Timeline(config)
        let window = timeline.window(at: tick)
        // A live playlist must hold three target durations: publish nothing until it can.
        guard Int64(window.count) * config.segmentDurationMilliseconds >= Int64(3 * config.targetDuration) * 1000 else {
            return nil
        }
        var starts = window.map { timeline.segmentStart($0) }
        // Low latency: the playlist ends with the last part that has ended, in the segment in progress (`partial`
        // parts of it, none right on a segment boundary); the parts of the segments within 3 target durations of
        // that end are listed (§4.4.4.9).
        let ll = LowLatencyWindow(timeline: timeline, config: config, at: tick)
        let liveEdge = ll?.end ?? timeline.segmentStart(window.upperBound)
        if let ll, ll.partial > 0 { starts.append(timeline.segmentStart(ll.segment)) }
        let placed = dateRanges(config: config, state: state, segmentStarts: starts, liveEdge: liveEdge)
        let cues = cueMarkers(
            config: config, state: state, timeline: timeline,
            segments: window
                .lowerBound...(ll.map { $0.partial > 0 ? $0.segment : window.upperBound - 1 }
                ?? window.upperBound - 1))
        var segments: [Segment] = []
        segments.reserveCapacity(window.count)
        // Parsed once for the window, not once per segment.
        let template = URITemplate(rendition.uriTemplate, substitutions: ["rendition": rendition.name.rawValue])
        let partTemplate = ll.flatMap { _ in
            rendition.partURITemplate.map {
                URITemplate($0, substitutions: ["rendition": rendition.name.rawValue], partIndex: true)
            }
        }
        func parts(of n: Int64, count: Int64) -> [SegmentTag] {
            guard let ll, let partTemplate else { return [] }
            return (0..<Int(count)).map { p in
                .part(
                    Part(
                        duration: ll.partDuration, uri: partTemplate.expand(n, part: p),
                        independent: rendition.isIndependent(part: p)))
            }
        }
        func leadingTags(of n: Int64) -> [SegmentTag] {
            var tags: [SegmentTag] = []
            if let loop = config.loopSegments, n > 0, n % Int64(loop) == 0 { tags.append(.discontinuity) }
            if n == window.lowerBound, let map = rendition.mapURI { tags.append(.map(MediaInitialization(uri: map))) }
            tags.append(.programDateTime(timeline.segmentStart(n)))
            for range in placed.bySegment[Int(n - window.lowerBound)] ?? [] { tags.append(.dateRange(range)) }
            for cue in cues[n] ?? [] { tags.append(.cue(cue)) }
            return tags
        }
        for n in window {
            var tags = leadingTags(of: n)
            if let ll, timeline.segmentStart(n) >= ll.partsFrom { tags += parts(of: n, count: ll.partsPerSegment) }
            segments.append(
                Segment(
                    duration: DecimalNumber(milliseconds: config.segmentDurationMilliseconds), uri: template.expand(n),
                    tags: tags))
        }
        var discontinuitySequence: Int64 = 0
        if let loop = config.loopSegments, window.lowerBound > 0 {
            discontinuitySequence = (window.lowerBound - 1) / Int64(loop)
        }
        var trailing: [SegmentTag] = []
        if let ll, ll.partial > 0 {
            // The segment in progress: its discontinuity and date ranges, then its parts. No program date-time: it
            // follows from the last segment's, and hls.js 1.6.15 given one on a segment without EXTINF anchors date
            // ranges to a fragment that is not in the playlist and never finishes loading the level (README).
            let tags = leadingTags(of: ll.segment).filter { if case .programDateTime = $0 { false } else { true } }
            trailing = tags + parts(of: ll.segment, count: ll.partial)
        }
        trailing += placed.trailing.map { .dateRange($0) }
        var serverControl: ServerControl?
        if let ll, let partTemplate {
            trailing.append(
                .preloadHint(PreloadHint(type: .part, uri: partTemplate.expand(ll.segment, part: Int(ll.partial)))))
            for other in config.renditions where other.name != rendition.name {
                trailing.append(
                    .renditionReport(
                        RenditionReport(
                            uri: "\(other.name).m3u8", lastMediaSequence: ll.lastSegment, lastPart: ll.lastPart)))
            }
            serverControl = ServerControl(
                canBlockReload: true, canSkipUntil: DecimalNumber(milliseconds: ll.skipBoundaryMilliseconds),
                canSkipDateRanges: true,
                partHoldBack: DecimalNumber(milliseconds: 3 * ll.partMilliseconds))
        }
        return MediaPlaylist(
            version: rendition.mapURI != nil ? 6 : 3, targetDuration: config.targetDuration,
            mediaSequence: window.lowerBound, discontinuitySequence: discontinuitySequence,
            independentSegments: rendition.mapURI != nil, serverControl: serverControl, partTarget: ll?.partDuration,
            segments: segments, trailingTags: trailing)
    }

    /// Where a channel with parts stands at a tick: the segment in progress and how many of its parts have ended.
    struct LowLatencyWindow {
        var partMilliseconds: Int64
        var partsPerSegment: Int64
        /// The segment in progress (the first one not complete).
        var segment: Int64
        /// Its parts that have ended (0 on a segment boundary).
        var partial: Int64
        /// The end of the last part that has ended: the end of the playlist.
        var end: Timestamp
        /// Segments starting at or after this instant list their parts (within 3 target durations of the end).
        var partsFrom: Timestamp
        /// CAN-SKIP-UNTIL: six target durations, the least the draft allows (§4.4.3.8).
        var skipBoundaryMilliseconds: Int64

        init?(timeline: Timeline, config: ChannelConfig, at tick: Timestamp) {
            guard let part = timeline.partMilliseconds else { return nil }
            partMilliseconds = part
            partsPerSegment = timeline.partsPerSegment
            let completed = timeline.completedTicks(at: tick)
            segment = completed / partsPerSegment
            partial = completed % partsPerSegment
            end = timeline.tickStart(completed)
            partsFrom = end.adding(milliseconds: -Int64(3 * config.targetDuration) * 1000)
            skipBoundaryMilliseconds = Int64(6 * config.targetDuration) * 1000
        }

        var partDuration: DecimalNumber { DecimalNumber(milliseconds: partMilliseconds) }
        /// EXT-X-RENDITION-REPORT's LAST-MSN and LAST-PART: the last part that has ended.
        var lastSegment: Int64 { partial > 0 ? segment : segment - 1 }
        var lastPart: Int { Int(partial > 0 ? partial - 1 : partsPerSegment - 1) }
    }

    // MARK: Delta updates

    /// Which delta update a client asked for (`_HLS_skip`).
    public enum DeltaUpdate: String, Hashable, Sendable, CaseIterable {
        /// `YES`: older segments are skipped; every date range is still listed.
        case segments = "YES"
        /// `v2`: date ranges of breaks that ended before the first segment listed are skipped too, and the ids of those
        /// removed recently (garbage-collected, or cancelled before they started) are listed.
        case segmentsAndDateRanges = "v2"
    }

    /// The Playlist Delta Update (§6.2.5.1) of `full`, the media playlist of a channel with parts at `tick`: the segments
    /// that ended more than CAN-SKIP-UNTIL before the playlist's end are replaced by `EXT-X-SKIP`. Applied to any full
    /// playlist served in the last CAN-SKIP-UNTIL, it gives `full` again (segments, parts and the date ranges a player
    /// holds by id). Nil for a playlist without `CAN-SKIP-UNTIL`.
    public static func deltaPlaylist(
        _ full: MediaPlaylist, config: ChannelConfig, state: ChannelState, at tick: Timestamp, update: DeltaUpdate
    ) -> MediaPlaylist? {
        let timeline = Timeline(config)
        guard full.serverControl?.canSkipUntil != nil,
            let ll = LowLatencyWindow(timeline: timeline, config: config, at: tick)
        else { return nil }
        let boundary = ll.end.adding(milliseconds: -ll.skipBoundaryMilliseconds)
        var skipped = 0
        while skipped < full.segments.count, timeline.segmentStart(full.mediaSequence + Int64(skipped) + 1) <= boundary
        { skipped += 1 }
        var delta = full
        delta.version = update == .segments ? 9 : 10
        delta.segments = Array(full.segments[skipped...])
        var removed: [String]?
        if update == .segmentsAndDateRanges {
            removed = recentlyRemovedDateRanges(
                config: config, state: state, at: tick, listed: Set(full.dateRanges.map(\.id)))
        }
        delta.skip = Skip(skippedSegments: skipped, recentlyRemovedDateRanges: removed)
        guard skipped > 0, !delta.segments.isEmpty else { return delta }
        // What the skipped segments carried that the rest still needs: the date ranges (all with YES; with v2 those of
        // breaks still running at the first segment kept, which may yet change), and the media initialization section.
        let firstKept = timeline.segmentStart(full.mediaSequence + Int64(skipped))
        var carried: [SegmentTag] = []
        var map: SegmentTag?
        for segment in full.segments[..<skipped] {
            for tag in segment.tags {
                switch tag {
                case .map: map = tag
                case .dateRange(let range):
                    if update == .segmentsAndDateRanges, let id = BreakID(stored: range.id),
                        let item = state.breakState(id), item.end <= firstKept
                    {
                        continue
                    }
                    // A preroll range, by its own dates.
                    if update == .segmentsAndDateRanges, prerollIndex(fromID: range.id) != nil,
                        let start = range.startDate, let duration = range.duration,
                        start.adding(milliseconds: duration.milliseconds) <= firstKept
                    {
                        continue
                    }
                    // A preload range ends at its break's start.
                    if update == .segmentsAndDateRanges, let id = preloadTarget(range.id),
                        let item = state.breakState(id), item.start <= firstKept
                    {
                        continue
                    }
                    carried.append(tag)
                default: break
                }
            }
        }
        var tags = delta.segments[0].tags
        if let date = tags.firstIndex(where: { if case .programDateTime = $0 { true } else { false } }) {
            tags.insert(contentsOf: carried, at: date + 1)
        } else {
            tags += carried
        }
        if let map, delta.segments[0].map == nil {
            tags.insert(map, at: tags.first == .discontinuity ? 1 : 0)
        }
        delta.segments[0].tags = tags
        return delta
    }

    /// The ids of date ranges that left the playlist within the last CAN-SKIP-UNTIL before `tick` (`RECENTLY-REMOVED-DATERANGES`):
    /// breaks garbage-collected (ended before the window's start) and breaks cancelled, whose tags a player holding an
    /// earlier playlist still has. An id listed again in the playlist (`listed`) is left out. In the schedule's order.
    static func recentlyRemovedDateRanges(
        config: ChannelConfig, state: ChannelState, at tick: Timestamp, listed: Set<String>
    ) -> [String] {
        let timeline = Timeline(config)
        let skipUntil = Int64(6 * config.targetDuration) * 1000
        let since = tick.adding(milliseconds: -skipUntil)
        let windowStartThen = timeline.segmentStart(timeline.window(at: since).lowerBound)
        let windowStartNow = timeline.segmentStart(timeline.window(at: tick).lowerBound)
        var ids: [String] = []
        for item in state.breaks[state.firstIndex(coveringOrAfter: windowStartThen)...] {
            if let horizon = config.horizonMilliseconds,
                item.start >= timeline.segmentStart(timeline.window(at: tick).upperBound).adding(milliseconds: horizon)
            {
                break
            }
            let gone: Bool
            if let cancelled = item.cancelled {
                gone = cancelled.at > since && cancelled.at <= tick && item.end > windowStartThen
            } else {
                gone = item.end > windowStartThen && item.end <= windowStartNow
            }
            if gone, !listed.contains(item.id.rawValue), !ids.contains(item.id.rawValue) {
                ids.append(item.id.rawValue)
            }
            // Its preload range left with it when it was cancelled, or when it ended (at the break's start) before the
            // window's start.
            if preloadStart(item, config: config) != nil {
                let preloadGone =
                    item.cancelled.map { $0.at > since && $0.at <= tick && item.start > windowStartThen }
                    ?? (item.start > windowStartThen && item.start <= windowStartNow)
                let id = preloadID(item.id)
                if preloadGone, !listed.contains(id), !ids.contains(id) { ids.append(id) }
            }
        }
        if let preroll = prerollRemoved(
            config: config, settings: state.adSettings, from: windowStartThen, to: windowStartNow),
            !listed.contains(preroll)
        {
            ids.append(preroll)
        }
        // A preroll replaced or removed by the operator: the range published then left with it.
        for replaced in state.replacedPrerolls where replaced.at > since && replaced.at <= tick {
            guard config.signalling?.markers.interstitials ?? true else { break }
            let windowStart = timeline.segmentStart(timeline.window(at: replaced.at).lowerBound)
            let id = prerollID(
                replaced.preroll,
                index: prerollIndex(config: config, preroll: replaced.preroll, windowStart: windowStart))
            if !listed.contains(id), !ids.contains(id) { ids.append(id) }
        }
        return ids
    }

    /// The multivariant playlist: one variant per rendition, media playlists named `<rendition>.m3u8`.
    public static func multivariant(config: ChannelConfig) -> MultivariantPlaylist {
        MultivariantPlaylist(
            version: 3, independentSegments: config.renditions.contains { $0.mapURI != nil },
            variants: config.renditions.map { rendition in
                Variant(
                    bandwidth: rendition.bandwidth, codecs: rendition.codecs,
                    resolution: rendition.resolution.flatMap { Resolution($0) },
                    frameRate: rendition.frameRate, uri: "\(rendition.name).m3u8")
            })
    }

    /// The date ranges in a window of segments, placed: before the segment holding their start, on the first
    /// segment if they started before the window, after the last segment if they start at or after the live edge.
    ///
    /// - Parameters:
    ///   - segmentStarts: the program date-time of each segment in the window, in order.
    ///   - liveEdge: the end of the last segment.
    /// - Returns: the ranges by index into `segmentStarts`, and those trailing the last segment.
    public static func dateRanges(
        config: ChannelConfig, state: ChannelState, segmentStarts: [Timestamp], liveEdge: Timestamp
    ) -> PlacedDateRanges {
        var placed = PlacedDateRanges()
        guard let windowStart = segmentStarts.first else { return placed }
        // Future breaks beyond the horizon are not published yet (breaks are sorted by start: stop there).
        let horizonEnd = config.horizonMilliseconds.map { liveEdge.adding(milliseconds: $0) }
        // Breaks ending before the window start are left out, so the walk starts where a break could still reach it.
        for item in state.breaks[state.firstIndex(coveringOrAfter: windowStart)...] where !item.isCancelled {
            if let horizonEnd, item.start >= horizonEnd { break }
            // Garbage-collect all tags of an ID together once the range ends before the window's first segment.
            guard item.end > windowStart else { continue }
            let placing = keptPlacingTag(item.spec, config: config)
            // The preload range, from its start until the break's (rfc8216bis-22 Appendix F), while it is in the window.
            if let preload = preloadTag(item, placing: placing, config: config),
                item.start > windowStart, let preloadStart = preload.startDate
            {
                if preloadStart >= liveEdge {
                    placed.trailing.append(preload)
                } else {
                    var index = 0
                    for (offset, start) in segmentStarts.enumerated() where start <= preloadStart { index = offset }
                    placed.bySegment[index, default: []].append(preload)
                }
            }
            var tags = [placing]
            if let limit = item.playoutLimitMilliseconds {
                // The return as received, else the end this channel's signalling writes for the break.
                tags.append(
                    keptClosingTag(
                        item.spec, config: config, duration: limit, playoutLimit: true, receivedIn: item.scte35In))
            } else if liveEdge >= item.spec.plannedEnd {
                // With signalling, the planned end carries the paired end section too: a downstream that pairs
                // SCTE35-OUT with SCTE35-IN (MediaTailor) closes the avail.
                tags.append(
                    keptClosingTag(
                        item.spec, config: config, duration: item.spec.plannedDurationMilliseconds, playoutLimit: false,
                        receivedIn: nil))
            }
            if item.start >= liveEdge {
                // For a downstream SSAI (markers scte35) a break is announced once its first segment is published:
                // an SSAI that ignores START-DATE reads an SCTE35-OUT where it stands, and a break cancelled before
                // then was never announced. Players (interstitials) get it ahead, up to the horizon, to preload.
                if config.signalling?.markers.interstitials == false { continue }
                placed.trailing += tags
            } else {
                // The last segment starting at or before the break's start (the first one if none does).
                var index = 0
                for (offset, start) in segmentStarts.enumerated() where start <= item.start { index = offset }
                placed.bySegment[index, default: []] += tags
            }
        }
        // The preroll on join: one range in every playlist (`PlaylistBuilder+Preroll.swift`).
        if let preroll = prerollRange(config: config, settings: state.adSettings, windowStart: windowStart),
            let start = preroll.startDate
        {
            if start >= liveEdge {
                placed.trailing.append(preroll)
            } else {
                var index = 0
                for (offset, segmentStart) in segmentStarts.enumerated() where segmentStart <= start { index = offset }
                placed.bySegment[index, default: []].append(preroll)
            }
        }
        return placed
    }

    // MARK: Tags kept between ticks

    /// A break's tags as last built, by channel and break id: a placing tag never changes once published and a
    /// closing tag changes only with its duration, so each tick reuses them (with their lines rendered at
    /// construction) instead of building and rendering them again. A cache keyed by value: an entry is used only
    /// when the spec and the channel's public base URL it was built from equal the ones asked for, so what is built
    /// is the same whether or not an entry exists (renders stay a pure function of their inputs).
    struct KeptTags: Sendable {
        var spec: BreakSpec
        var publicBaseURL: String
        var signalling: Signalling?
        var placing: DateRange
        var closing: (duration: Int64, playoutLimit: Bool, receivedIn: String?, tag: DateRange)?
        var preload: (start: Timestamp, tag: DateRange)?
    }

    struct KeptTagsKey: Hashable, Sendable {
        var channel: ChannelID
        var breakID: BreakID
    }

    /// One part of the cache: 16 of them, by the key's hash, so renders on both cores (ticks rendered ahead in
    /// parallel) rarely wait for each other's lookups. Each is bounded: emptied when it reaches `keptTagsLimit / 16`
    /// entries (~1 KB each), then refilled by the next ticks.
    final class KeptTagsShard: Sendable {
        let entries = Mutex<[KeptTagsKey: KeptTags]>([:])
    }

    static let keptTagsShards = (0..<16).map { _ in KeptTagsShard() }
    static let keptTagsLimit = 50_000

    static func keptPlacingTag(_ spec: BreakSpec, config: ChannelConfig) -> DateRange {
        let key = KeptTagsKey(channel: config.id, breakID: spec.id)
        let shard = keptTagsShards[Int(UInt(bitPattern: key.hashValue) % 16)]
        if let kept = shard.entries.withLock({ $0[key] }), kept.spec == spec,
            kept.publicBaseURL == config.publicBaseURL,
            kept.signalling == config.signalling
        {
            return kept.placing
        }
        let tag = placingTag(spec, config: config)
        shard.entries.withLock { kept in
            if kept.count >= keptTagsLimit / 16 { kept.removeAll(keepingCapacity: true) }
            kept[key] = KeptTags(
                spec: spec, publicBaseURL: config.publicBaseURL, signalling: config.signalling, placing: tag)
        }
        return tag
    }

    static func keptClosingTag(
        _ spec: BreakSpec, config: ChannelConfig, duration: Int64, playoutLimit: Bool, receivedIn: String?
    ) -> DateRange {
        let key = KeptTagsKey(channel: config.id, breakID: spec.id)
        let shard = keptTagsShards[Int(UInt(bitPattern: key.hashValue) % 16)]
        if let kept = shard.entries.withLock({ $0[key] }), kept.spec == spec, kept.signalling == config.signalling,
            let closing = kept.closing, closing.duration == duration, closing.playoutLimit == playoutLimit,
            closing.receivedIn == receivedIn
        {
            return closing.tag
        }
        // The return as received, else (built only here, when the tag is not kept) the end this channel's signalling
        // writes for the break: with signalling, the planned end carries it too.
        let scte35In = receivedIn ?? config.signalling?.endSection(channel: config.id, spec: spec)?.description
        let tag = closingTag(
            spec, duration: duration, playoutLimit: playoutLimit, scte35In: scte35In,
            interstitial: config.signalling?.markers.interstitials ?? true)
        shard.entries.withLock { kept in
            guard var entry = kept[key], entry.spec == spec, entry.signalling == config.signalling else { return }
            entry.closing = (duration, playoutLimit, receivedIn, tag)
            kept[key] = entry
        }
        return tag
    }

    /// The tag published when the break is placed; it never changes afterwards. Built by one initializer call, so
    /// that its line is rendered and checked once, here (`DateRange.Storage`), not at every render.
    static func placingTag(_ spec: BreakSpec, config: ChannelConfig) -> DateRange {
        // The section the break was placed with (an ingested cue, kept as received), else the one this channel's
        // signalling writes for it.
        let scte35Out =
            spec.options.scte35Out.flatMap { HexBytes(hex: $0) }
            ?? config.signalling?.startSection(channel: config.id, spec: spec)
        if let signalling = config.signalling, !signalling.markers.interstitials {
            // For a downstream SSAI: the break's time and its SCTE-35, no class and no asset for players to play.
            return DateRange(
                id: spec.id.rawValue, startDate: spec.start,
                plannedDuration: DecimalNumber(milliseconds: spec.plannedDurationMilliseconds),
                clientAttributes: spec.options.clientAttributes, scte35Out: scte35Out)
        }
        var assetURI: String?
        var assetList: String?
        switch spec.asset {
        case _ where spec.adServer != nil:
            // Each viewer's list is decided by the ad server, behind this service's asset-list endpoint.
            assetList = assetListURI(config: config, breakID: spec.id)
        case .uri(let uri):
            // A single asset Cueline measured is served as its own list of chunks (see `assetList`).
            if spec.media?.isChunked == true {
                assetList = assetListURI(config: config, breakID: spec.id)
            } else {
                assetURI = withInterstitialID(uri, spec.id)
            }
        case .list(let uri): assetList = withInterstitialID(uri, spec.id)
        case .pod: assetList = assetListURI(config: config, breakID: spec.id)
        }
        return DateRange(
            id: spec.id.rawValue, classAttribute: DateRange.interstitialClass, startDate: spec.start,
            cue: spec.options.cue,
            plannedDuration: DecimalNumber(milliseconds: spec.plannedDurationMilliseconds), assetURI: assetURI,
            assetList: assetList,
            snap: spec.options.snap, restrict: spec.options.restrict, contentMayVary: spec.options.contentMayVary,
            timelineOccupies: spec.options.timelineOccupies, timelineStyle: spec.options.timelineStyle,
            // decimal-integer seconds (rfc8216bis-22 D.3): whole seconds, checked when the break was placed.
            skipControlOffset: spec.options.skipControl.map { DecimalNumber(integer: $0.offsetMilliseconds / 1000) },
            skipControlDuration: spec.options.skipControl?.durationMilliseconds.map {
                DecimalNumber(integer: $0 / 1000)
            },
            skipControlLabelID: spec.options.skipControl?.labelID,
            clientAttributes: spec.options.clientAttributes, scte35Out: scte35Out)
    }

    /// The augmenting tag: same ID, CLASS, START-DATE, plus DURATION (and X-PLAYOUT-LIMIT on an early return).
    /// Without `interstitial` (markers `scte35`): no CLASS and no X-PLAYOUT-LIMIT, a client attribute of interstitials.
    static func closingTag(
        _ spec: BreakSpec, duration: Int64, playoutLimit: Bool, scte35In: String? = nil, interstitial: Bool = true
    ) -> DateRange {
        DateRange(
            id: spec.id.rawValue, classAttribute: interstitial ? DateRange.interstitialClass : nil,
            startDate: spec.start, duration: DecimalNumber(milliseconds: duration),
            playoutLimit: playoutLimit && interstitial ? DecimalNumber(milliseconds: duration) : nil,
            scte35In: scte35In.flatMap { HexBytes(hex: $0) })
    }

    /// This service's asset-list URL for a pod break.
    public static func assetListURI(config: ChannelConfig, breakID: BreakID) -> String {
        let base = config.publicBaseURL.hasSuffix("/") ? String(config.publicBaseURL.dropLast()) : config.publicBaseURL
        return "\(base)/channels/\(config.id)/breaks/\(breakID)/assets.json?_HLS_interstitial_id=\(breakID)"
    }

    static func withInterstitialID(_ uri: String, _ id: BreakID) -> String {
        uri + (uri.contains("?") ? "&" : "?") + "_HLS_interstitial_id=" + id.rawValue
    }

    /// The asset list JSON (`{"ASSETS":[…]}`) of a break, or nil for an unknown id. A cancelled break answers an
    /// empty list, which makes players skip it.
    ///
    /// The list is the same whatever `_HLS_start_offset` a joining player sends: hls.js 1.6 lays the returned assets
    /// out from the break's start and seeks into them itself, so a list trimmed to the offset shows the wrong ad and
    /// plays the pod again (issue 16). Measured assets are listed as chunks (`chunkURI`), each a VOD playlist of some of
    /// the asset's own segments, so a playout limit that reaches a player mid-ad ends it at the next chunk boundary.
    public static func assetList(state: ChannelState, breakID: BreakID) -> String? {
        guard let config = state.config, let item = state.breakState(breakID) else { return nil }
        var items: [String] = []
        if !item.isCancelled {
            let assets: [PodAsset]
            switch item.spec.asset {
            case .pod(let pod): assets = pod
            case .uri(let uri):
                assets = [PodAsset(uri: uri, durationMilliseconds: item.spec.plannedDurationMilliseconds)]
            case .list: assets = []
            }
            for (index, asset) in assets.enumerated() {
                let measured = item.spec.media.flatMap { index < $0.assets.count ? $0.assets[index] : nil }
                guard let chunks = measured?.chunkMilliseconds else {
                    items.append(assetItem(uri: asset.uri, durationMilliseconds: asset.durationMilliseconds))
                    continue
                }
                for (chunk, length) in chunks.enumerated() {
                    items.append(
                        assetItem(
                            uri: chunkURI(config: config, breakID: breakID, asset: index, chunk: chunk),
                            durationMilliseconds: length))
                }
            }
        }
        // A break filled by an ad server with no assets of its own falls back to the channel's slate, repeated to
        // fill the break (the break's playout limit ends the last one).
        if items.isEmpty, !item.isCancelled, item.spec.adServer != nil, let slate = state.adSettings?.slate {
            items = slateItems(slate, breakMilliseconds: item.spec.plannedDurationMilliseconds)
        }
        return #"{"ASSETS":[\#(items.joined(separator: ","))]}"#
    }

    /// The slate as asset-list items within `breakMilliseconds`: as many whole plays as fit (at most a pod's worth;
    /// a break that runs its planned length gets no playout limit to cut an extra play, and viewers would rejoin
    /// further behind live), once when it is longer than the break or its length is unknown.
    public static func slateItems(_ slate: AdSettings.Slate, breakMilliseconds: Int64) -> [String] {
        guard let length = slate.durationMilliseconds, length > 0 else {
            return [assetItem(uri: slate.uri, durationMilliseconds: breakMilliseconds)]
        }
        let plays = min(Int(breakMilliseconds / length), Limits.maximumPodAssets)
        return Array(repeating: assetItem(uri: slate.uri, durationMilliseconds: length), count: max(plays, 1))
    }

    static func assetItem(uri: String, durationMilliseconds: Int64) -> String {
        #"{"URI":\#(jsonString(uri)),"DURATION":\#(DecimalNumber(milliseconds: durationMilliseconds))}"#
    }

    /// This service's URL of chunk `chunk` of asset `asset` (0-based, in the break's order) of a break.
    public static func chunkURI(config: ChannelConfig, breakID: BreakID, asset: Int, chunk: Int) -> String {
        let base = config.publicBaseURL.hasSuffix("/") ? String(config.publicBaseURL.dropLast()) : config.publicBaseURL
        return "\(base)/channels/\(config.id)/breaks/\(breakID)/chunks/\(asset)-\(chunk).m3u8"
    }

    /// The span of a chunk in milliseconds from the asset's start, or nil when the break has no such chunk.
    public static func chunkSpan(state: ChannelState, breakID: BreakID, asset: Int, chunk: Int) -> (
        uri: String, from: Int64, to: Int64
    )? {
        guard let item = state.breakState(breakID), !item.isCancelled, let media = item.spec.media, asset >= 0,
            asset < media.assets.count,
            let chunks = media.assets[asset]?.chunkMilliseconds, chunk >= 0, chunk < chunks.count
        else { return nil }
        let uri: String
        switch item.spec.asset {
        case .uri(let single): uri = single
        case .pod(let pod) where asset < pod.count: uri = pod[asset].uri
        default: return nil
        }
        let from = chunks[..<chunk].reduce(0, +)
        return (uri, from, from + chunks[chunk])
    }
}

/// Date ranges of one window, already placed.
public struct PlacedDateRanges: Hashable, Sendable {
    /// By index of the segment in the window.
    public var bySegment: [Int: [DateRange]] = [:]
    public var trailing: [DateRange] = []
}

/// A JSON string literal with the escapes RFC 8259 requires.
public func jsonString(_ text: String) -> String {
    var out = "\""
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case "\r": out += "\\r"
        case "\t": out += "\\t"
        case _ where scalar.value < 0x20:
            let hex = String(scalar.value, radix: 16)
            out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
        default: out.unicodeScalars.append(scalar)
        }
    }
    return out + "\""
}
