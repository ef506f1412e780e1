/// The LL-HLS rules of one media playlist, and a delta update against its full playlist.
extension Lint {
    /// The LL-HLS rules (§4.4.4.9, §4.4.3.7, §4.4.3.8, §4.4.5.3): part durations against PART-TARGET and against their
    /// segment, parts only within 3 target durations of the end, the preload hint, and the server control parts need.
    static func checkLowLatency(_ playlist: MediaPlaylist, hasParts: Bool) -> [Finding] {
        var findings: [Finding] = []
        let td = Int64(playlist.targetDuration)
        func parts(_ tags: [SegmentTag]) -> [Part] {
            tags.compactMap { if case .part(let part) = $0 { part } else { nil } }
        }
        if let target = playlist.partTarget {
            let all = playlist.segments.map { (parts($0.tags), true) } + [(parts(playlist.trailingTags), false)]
            for (list, complete) in all {
                for (index, part) in list.enumerated() {
                    if part.duration.milliseconds > target.milliseconds {
                        findings.append(
                            Finding(
                                rule: "parts.over-target", line: nil,
                                message: "part \(part.uri) lasts \(part.duration) s, more than PART-TARGET \(target)"))
                    }
                    // Every part but a segment's last lasts at least 85 % of PART-TARGET.
                    let last = complete && index == list.count - 1
                    if !last
                        && part.duration.milliseconds.saturatingMultiplied(by: 100)
                            < target.milliseconds.saturatingMultiplied(by: 85)
                    {
                        findings.append(
                            Finding(
                                rule: "parts.under-target", line: nil,
                                message:
                                    "part \(part.uri) lasts \(part.duration) s, under 85 % of PART-TARGET \(target)"))
                    }
                }
            }
            for segment in playlist.segments {
                let list = parts(segment.tags)
                let sum = list.reduce(Int64(0)) { $0.saturatingAdding($1.duration.milliseconds) }
                if !list.isEmpty && sum != segment.duration.milliseconds {
                    findings.append(
                        Finding(
                            rule: "parts.segment-sum", line: nil,
                            message:
                                "the parts of \(segment.uri) last \(DecimalNumber(milliseconds: sum)) s in all, its EXTINF \(segment.duration) s"
                        ))
                }
            }
            // Parts are listed only near the end: a segment whose parts start more than 3 target durations before it.
            var fromEnd = parts(playlist.trailingTags).reduce(Int64(0)) {
                $0.saturatingAdding($1.duration.milliseconds)
            }
            for segment in playlist.segments.reversed() {
                fromEnd = fromEnd.saturatingAdding(segment.duration.milliseconds)
                if !parts(segment.tags).isEmpty && fromEnd > td.saturatingMultiplied(by: 3000) {
                    findings.append(
                        Finding(
                            rule: "parts.far-from-edge", severity: .warning, line: nil,
                            message:
                                "the parts of \(segment.uri) start \(DecimalNumber(milliseconds: fromEnd)) s before the end of the playlist, more than 3 target durations"
                        ))
                }
            }
            let control = playlist.serverControl
            if hasParts && control?.canBlockReload != true {
                findings.append(
                    Finding(
                        rule: "parts.blocking-reload", line: nil,
                        message: "the playlist has parts but no EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES"))
            }
            if control?.partHoldBack == nil {
                findings.append(
                    Finding(
                        rule: "server-control.part-hold-back-missing", line: nil,
                        message: "the playlist has EXT-X-PART-INF but no PART-HOLD-BACK"))
            }
        }
        let hints = playlist.trailingTags.compactMap { if case .preloadHint(let hint) = $0 { hint } else { nil } }
        for type in [PreloadHint.HintType.part, .map] where hints.filter({ $0.type == type }).count > 1 {
            findings.append(
                Finding(
                    rule: "preload-hint.duplicate", line: nil,
                    message: "more than one EXT-X-PRELOAD-HINT of TYPE=\(type.rawValue)"))
        }
        let listed = Set(
            (playlist.segments.flatMap(\.tags) + playlist.trailingTags).compactMap {
                if case .part(let part) = $0 { part.uri } else { nil }
            })
        for hint in hints where hint.type == .part && listed.contains(hint.uri) {
            findings.append(
                Finding(
                    rule: "preload-hint.listed", line: nil,
                    message: "the preload hint names \(hint.uri), a part already listed"))
        }
        if !hints.isEmpty && playlist.partTarget == nil {
            findings.append(
                Finding(
                    rule: "preload-hint.without-parts", line: nil,
                    message: "EXT-X-PRELOAD-HINT in a playlist without EXT-X-PART-INF"))
        }
        if playlist.skip != nil && playlist.serverControl?.canSkipUntil == nil {
            findings.append(
                Finding(
                    rule: "skip.not-advertised", line: nil,
                    message: "EXT-X-SKIP in a playlist whose server control has no CAN-SKIP-UNTIL"))
        }
        return findings
    }

    /// Checks a Playlist Delta Update against the full playlist of the same instant (§6.2.5.1): same media sequence,
    /// the kept segments and everything after them identical, only segments beyond the skip boundary skipped, and
    /// with `RECENTLY-REMOVED-DATERANGES` (v2) no date range of a break still in the kept segments left out.
    public static func checkDelta(full: ParsedMediaPlaylist, delta: ParsedMediaPlaylist) -> [Finding] {
        var findings: [Finding] = []
        let full = full.playlist, delta = delta.playlist
        guard let skip = delta.skip else {
            return [Finding(rule: "delta.no-skip", line: nil, message: "the delta playlist has no EXT-X-SKIP")]
        }
        if delta.mediaSequence != full.mediaSequence || delta.discontinuitySequence != full.discontinuitySequence {
            findings.append(
                Finding(
                    rule: "delta.sequence", line: nil,
                    message:
                        "the delta's media or discontinuity sequence (\(delta.mediaSequence), \(delta.discontinuitySequence)) differs from the full playlist's (\(full.mediaSequence), \(full.discontinuitySequence))"
                ))
        }
        guard skip.skippedSegments >= 0, skip.skippedSegments + delta.segments.count == full.segments.count else {
            findings.append(
                Finding(
                    rule: "delta.segment-count", line: nil,
                    message:
                        "\(skip.skippedSegments) skipped + \(delta.segments.count) listed segments, the full playlist has \(full.segments.count)"
                ))
            return findings
        }
        for (kept, original) in zip(delta.segments, full.segments[skip.skippedSegments...])
        where kept.uri != original.uri || kept.duration != original.duration {
            findings.append(
                Finding(
                    rule: "delta.segment-differs", line: nil,
                    message:
                        "segment \(kept.uri) (\(kept.duration) s) is \(original.uri) (\(original.duration) s) in the full playlist"
                ))
        }
        // The skip boundary: a skipped segment ends at least CAN-SKIP-UNTIL before the end of the playlist.
        if let until = full.serverControl?.canSkipUntil, skip.skippedSegments > 0 {
            let trailing = full.trailingTags.reduce(Int64(0)) {
                if case .part(let part) = $1 { $0.saturatingAdding(part.duration.milliseconds) } else { $0 }
            }
            let kept = full.segments[skip.skippedSegments...].reduce(trailing) {
                $0.saturatingAdding($1.duration.milliseconds)
            }
            if kept < until.milliseconds {
                findings.append(
                    Finding(
                        rule: "delta.skipped-too-much", line: nil,
                        message:
                            "the segments kept last \(DecimalNumber(milliseconds: kept)) s, under CAN-SKIP-UNTIL \(until) s"
                    ))
            }
        } else if skip.skippedSegments > 0 {
            findings.append(
                Finding(
                    rule: "skip.not-advertised", line: nil,
                    message: "the full playlist does not advertise CAN-SKIP-UNTIL"))
        }
        func strip(_ tags: [SegmentTag]) -> [SegmentTag] {
            tags.filter { if case .dateRange = $0 { false } else { true } }
        }
        if strip(delta.trailingTags) != strip(full.trailingTags) {
            findings.append(
                Finding(
                    rule: "delta.trailing-differs", line: nil,
                    message: "what follows the last segment (parts, hints, reports) differs from the full playlist"))
        }
        let deltaIDs = Set(delta.dateRanges.map(\.id))
        let fullIDs = Set(full.dateRanges.map(\.id))
        if skip.recentlyRemovedDateRanges == nil {
            for id in fullIDs.subtracting(deltaIDs).sorted() {
                findings.append(
                    Finding(
                        rule: "delta.daterange-skipped", line: nil,
                        message:
                            "date range \(id) is left out, but the delta does not skip date ranges (no RECENTLY-REMOVED-DATERANGES)"
                    ))
            }
        } else {
            for id in (skip.recentlyRemovedDateRanges ?? []) where fullIDs.contains(id) {
                findings.append(
                    Finding(
                        rule: "delta.removed-listed", line: nil,
                        message: "date range \(id) is listed as recently removed but is in the playlist"))
            }
            // A date range skipped must be one a client already holds as it is: ended before the first segment kept.
            let firstKept = delta.segments.first?.programDateTime
            let groups = Dictionary(grouping: full.dateRanges, by: \.id)
            for id in fullIDs.subtracting(deltaIDs).sorted() {
                guard let merged = merge(groups[id] ?? [])?.range, let start = merged.startDate else { continue }
                let end = merged.endDate ?? merged.duration.map { start.adding(milliseconds: $0.milliseconds) }
                if let firstKept, end.map({ $0 > firstKept }) ?? true {
                    findings.append(
                        Finding(
                            rule: "delta.daterange-still-running", line: nil,
                            message:
                                "date range \(id) is skipped but does not end before the first segment kept (\(firstKept)): a change to it would be lost"
                        ))
                }
            }
        }
        return findings
    }
}
