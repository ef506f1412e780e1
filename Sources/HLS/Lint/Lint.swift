/// Checks playlists against the rules in `hls-rules.md`: one playlist, two successive versions of one playlist,
/// or the playlists of all renditions at one tick.
public enum Lint {
    /// Parses and checks one playlist of either kind. A parse failure is a single finding.
    public static func check(_ text: String) -> [Finding] {
        let control = controlCharacters(text)
        do {
            switch try PlaylistParser.parse(text) {
            case .media(let parsed): return control + check(parsed)
            case .multivariant(let parsed): return control + check(parsed)
            }
        } catch {
            return [Finding(rule: error.rule, line: error.line, message: error.message)] + control
        }
    }

    /// Control characters (C0, DEL, C1) in URI lines and tag lines, quoted attribute values included: players
    /// disagree on them, a NUL ends a C string, ESC drives the terminal of whoever prints the playlist. The one
    /// exception is the TAB the draft puts between the ids of RECENTLY-REMOVED-DATERANGES. One finding per line.
    public static func controlCharacters(_ text: String) -> [Finding] {
        var findings: [Finding] = []
        // By scalars: "\r\n" is one Character, so splitting the String on "\n" would not split CRLF lines.
        for (index, scalars) in text.unicodeScalars.split(separator: "\n", omittingEmptySubsequences: false)
            .enumerated()
        {
            let raw = String(String.UnicodeScalarView(scalars))
            let line =
                raw.unicodeScalars.last == "\r" ? String(String.UnicodeScalarView(raw.unicodeScalars.dropLast())) : raw
            guard line.containsControlCharacter else { continue }
            let isTag = line.hasPrefix("#EXT")
            if line.hasPrefix("#") && !isTag { continue }  // a comment
            var inQuotes = false
            var name = ""
            var nameStart = true
            for scalar in line.unicodeScalars {
                if scalar == "\"" {
                    inQuotes.toggle()
                    continue
                }
                if !inQuotes && (scalar == "," || scalar == ":") {
                    name = ""
                    nameStart = true
                    continue
                }
                if !inQuotes && scalar == "=" {
                    nameStart = false
                    continue
                }
                guard scalar.isControlCharacter else {
                    if !inQuotes && nameStart { name.unicodeScalars.append(scalar) }
                    continue
                }
                if isTag && inQuotes && scalar == "\t" && name == "RECENTLY-REMOVED-DATERANGES" { continue }
                let code = String(scalar.value, radix: 16, uppercase: true)
                let place = !isTag ? "the URI line" : inQuotes ? "the quoted value of \(name)" : "the tag"
                findings.append(
                    Finding(
                        rule: "syntax.control-character", line: index + 1,
                        message:
                            "control character U+\(String(repeating: "0", count: max(0, 4 - code.count)) + code) in \(place)"
                    ))
                break
            }
        }
        return findings
    }

    // MARK: - One media playlist

    public static func check(_ parsed: ParsedMediaPlaylist) -> [Finding] {
        let playlist = parsed.playlist
        let lines = parsed.lines
        var findings = parsed.issues.map { Finding(rule: $0.rule, line: $0.line, message: $0.message) }
        let isLive = !playlist.endList && playlist.playlistType != .vod
        let td = Int64(playlist.targetDuration)

        for (index, segment) in playlist.segments.enumerated() where segment.duration.roundedToInteger > td {
            findings.append(
                Finding(
                    rule: "targetduration.exceeded", line: lines.segmentLines[index],
                    message: "segment \(segment.uri) lasts \(segment.duration) s, more than the target duration \(td) s"
                ))
        }

        var needed = 1
        if playlist.segments.contains(where: { !$0.duration.isInteger }) { needed = 3 }
        if playlist.segments.contains(where: { $0.tags.contains { if case .byteRange = $0 { true } else { false } } }) {
            needed = max(needed, 4)
        }
        if playlist.segments.contains(where: { $0.map != nil }) { needed = max(needed, playlist.iFramesOnly ? 5 : 6) }
        if playlist.skip != nil { needed = max(needed, playlist.skip!.recentlyRemovedDateRanges == nil ? 9 : 10) }
        let declared = playlist.version ?? 1
        if declared < needed {
            findings.append(
                Finding(
                    rule: "version.too-low", line: lines.versionLine ?? 1,
                    message: "EXT-X-VERSION is \(declared) but the playlist uses features of version \(needed)"))
        } else if declared > max(needed, 3) && playlist.skip == nil {
            findings.append(
                Finding(
                    rule: "version.not-lowest", severity: .warning, line: lines.versionLine,
                    message: "EXT-X-VERSION is \(declared); version \(needed) covers what this playlist uses"))
        }

        if isLive {
            if playlist.playlistType != nil {
                findings.append(
                    Finding(
                        rule: "live.playlist-type", line: lines.playlistTypeLine,
                        message: "a live playlist (no EXT-X-ENDLIST) carries EXT-X-PLAYLIST-TYPE"))
            }
            let total = playlist.segments.reduce(Int64(0)) { $0.saturatingAdding($1.duration.milliseconds) }
            if playlist.segments.isEmpty {
                findings.append(Finding(rule: "live.empty", line: 1, message: "the live playlist has no segments"))
            } else if total < td.saturatingMultiplied(by: 3000) && playlist.skip == nil {
                findings.append(
                    Finding(
                        rule: "live.window-too-short", line: lines.segmentLines.first,
                        message:
                            "the playlist holds \(DecimalNumber(milliseconds: total)) s of segments, under 3 target durations (\(td.saturatingMultiplied(by: 3)) s)"
                    ))
            }
        }

        let ranges = playlist.dateRanges
        if !ranges.isEmpty {
            let dated = playlist.segments.filter { $0.programDateTime != nil }.count
            if dated == 0 {
                findings.append(
                    Finding(
                        rule: "pdt.missing", line: lines.dateRangeLines.first,
                        message:
                            "the playlist has EXT-X-DATERANGE but no EXT-X-PROGRAM-DATE-TIME: players cannot place the ranges"
                    ))
            } else if dated < playlist.segments.count {
                let index = playlist.segments.firstIndex { $0.programDateTime == nil }!
                findings.append(
                    Finding(
                        rule: "pdt.every-segment", severity: .warning, line: lines.segmentLines[index],
                        message: "segment \(playlist.segments[index].uri) has no EXT-X-PROGRAM-DATE-TIME"))
            }
        }

        if let control = playlist.serverControl {
            if let holdBack = control.holdBack, holdBack.milliseconds < td.saturatingMultiplied(by: 3000) {
                findings.append(
                    Finding(
                        rule: "server-control.hold-back", line: nil,
                        message: "HOLD-BACK \(holdBack) is under 3 target durations (\(td.saturatingMultiplied(by: 3)))"
                    ))
            }
            if let until = control.canSkipUntil, until.milliseconds < td.saturatingMultiplied(by: 6000) {
                findings.append(
                    Finding(
                        rule: "server-control.can-skip-until", line: nil,
                        message:
                            "CAN-SKIP-UNTIL \(until) is under 6 target durations (\(td.saturatingMultiplied(by: 6)))"))
            }
            if let partHoldBack = control.partHoldBack, let target = playlist.partTarget,
                partHoldBack.milliseconds < target.milliseconds.saturatingMultiplied(by: 2)
            {
                findings.append(
                    Finding(
                        rule: "server-control.part-hold-back", line: nil,
                        message: "PART-HOLD-BACK \(partHoldBack) is under twice PART-TARGET \(target)"))
            }
        }
        let hasParts = (playlist.segments.flatMap(\.tags) + playlist.trailingTags).contains {
            if case .part = $0 { true } else { false }
        }
        if hasParts && playlist.partTarget == nil {
            findings.append(
                Finding(
                    rule: "parts.part-inf-missing", line: nil,
                    message: "the playlist has EXT-X-PART but no EXT-X-PART-INF"))
        }
        findings += checkLowLatency(playlist, hasParts: hasParts)

        findings += checkDateRanges(parsed, isLive: isLive)
        return findings
    }

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

    private static func checkDateRanges(_ parsed: ParsedMediaPlaylist, isLive: Bool) -> [Finding] {
        var findings: [Finding] = []
        let playlist = parsed.playlist
        let ranges = playlist.dateRanges
        let lines = parsed.lines.dateRangeLines
        let windowStart = playlist.segments.first?.programDateTime
        let liveEdge = windowEdge(playlist)

        for (id, indices) in groupByID(ranges) {
            let tags = indices.map { ranges[$0] }
            let firstLine = lines[indices[0]]
            guard let merged = merge(tags) else { continue }
            for (offset, index) in indices.enumerated() {
                let tag = ranges[index]
                if offset == 0 && tag.startDate == nil {
                    findings.append(
                        Finding(
                            rule: "daterange.start-date-missing", line: lines[index],
                            message: "date range \(id) has no START-DATE"))
                }
                if offset > 0 && (tag.startDate == nil || tag.classAttribute != tags[0].classAttribute) {
                    findings.append(
                        Finding(
                            rule: "daterange.augment-shape", severity: .warning, line: lines[index],
                            message:
                                "augmenting tag of \(id) does not repeat CLASS and START-DATE (Shaka drops such tags)"))
                }
            }
            for conflict in merged.conflicts {
                findings.append(
                    Finding(
                        rule: "daterange.conflict", line: lines[indices[conflict.tag]],
                        message:
                            "date range \(id): \(conflict.name) is \(conflict.first) in one tag and \(conflict.second) in another"
                    ))
            }
            let start = merged.range.startDate
            let durationEnd = start.flatMap { s in merged.range.duration.map { s.adding(milliseconds: $0.milliseconds) }
            }
            if let end = merged.range.endDate, let durationEnd, end != durationEnd {
                findings.append(
                    Finding(
                        rule: "daterange.end-date-mismatch", line: firstLine,
                        message: "date range \(id): END-DATE \(end) is not START-DATE + DURATION (\(durationEnd))"))
            }
            if let end = merged.range.endDate, let start, end < start {
                findings.append(
                    Finding(
                        rule: "daterange.negative-duration", line: firstLine,
                        message: "date range \(id) ends before it starts"))
            }
            let end = merged.range.endDate ?? durationEnd
            if let end, let windowStart, end <= windowStart, isLive, playlist.skip == nil {
                findings.append(
                    Finding(
                        rule: "daterange.stale", line: firstLine,
                        message:
                            "date range \(id) ended at \(end), before the window's first segment (\(windowStart)); players may replay it"
                    ))
            }
            if end == nil, let start, let planned = merged.range.plannedDuration, let liveEdge,
                start.adding(milliseconds: planned.milliseconds) <= liveEdge, merged.range.isInterstitial
            {
                findings.append(
                    Finding(
                        rule: "daterange.not-closed", line: firstLine,
                        message:
                            "date range \(id) reached its planned end at \(start.adding(milliseconds: planned.milliseconds)) but has no DURATION or END-DATE"
                    ))
            }
            let hasAsset = merged.range.assetURI != nil || merged.range.assetList != nil
            if merged.range.isInterstitial {
                if (merged.range.assetURI == nil) == (merged.range.assetList == nil) {
                    findings.append(
                        Finding(
                            rule: "interstitial.asset", line: firstLine,
                            message:
                                "interstitial \(id) has \(hasAsset ? "both" : "neither of") X-ASSET-URI and X-ASSET-LIST"
                        ))
                }
                for uri in [merged.range.assetURI, merged.range.assetList].compactMap({ $0 }) where !isAbsolute(uri) {
                    findings.append(
                        Finding(
                            rule: "interstitial.asset-uri-absolute", line: firstLine,
                            message:
                                "interstitial \(id): \(uri) is not an absolute URI (players resolve it against the page and fail)"
                        ))
                }
                if let cue = merged.range.cue, cue.contains(.pre) && cue.contains(.post) {
                    findings.append(
                        Finding(
                            rule: "interstitial.cue", line: firstLine,
                            message: "interstitial \(id) has CUE with both PRE and POST"))
                }
                if isLive, merged.range.resumeOffset != nil {
                    findings.append(
                        Finding(
                            rule: "interstitial.resume-offset-live", severity: .warning, line: firstLine,
                            message:
                                "interstitial \(id) sets X-RESUME-OFFSET on a live playlist; viewers will drift from the live edge"
                        ))
                }
                if let limit = merged.range.playoutLimit,
                    merged.range.duration.map({ !$0.hasSameValue(as: limit) }) ?? true
                {
                    findings.append(
                        Finding(
                            rule: "interstitial.playout-limit-duration", severity: .warning, line: firstLine,
                            message: "interstitial \(id) has X-PLAYOUT-LIMIT \(limit) without a DURATION equal to it"))
                }
            } else if hasAsset {
                findings.append(
                    Finding(
                        rule: "interstitial.class", line: firstLine,
                        message:
                            "date range \(id) carries an asset but CLASS is \(merged.range.classAttribute.map { "\"\($0)\"" } ?? "missing")"
                    ))
            }
        }
        return findings
    }

    // MARK: - Successive versions

    /// Checks the rules that hold between two successive versions of the same media playlist.
    public static func checkUpdate(previous: ParsedMediaPlaylist, current: ParsedMediaPlaylist) -> [Finding] {
        var findings: [Finding] = []
        let old = previous.playlist
        let new = current.playlist
        if old.targetDuration != new.targetDuration {
            findings.append(
                Finding(
                    rule: "targetduration.changed", line: current.lines.targetDurationLine,
                    message: "EXT-X-TARGETDURATION changed from \(old.targetDuration) to \(new.targetDuration)"))
        }
        if new.mediaSequence < old.mediaSequence {
            findings.append(
                Finding(
                    rule: "mediasequence.decreased", line: current.lines.mediaSequenceLine,
                    message: "EXT-X-MEDIA-SEQUENCE went back from \(old.mediaSequence) to \(new.mediaSequence)"))
        }
        if old.endList && !new.endList {
            findings.append(
                Finding(rule: "playlist.endlist-removed", line: nil, message: "EXT-X-ENDLIST was published and is gone")
            )
        }
        let oldNumbers = old.sequenceNumbers
        let newNumbers = new.sequenceNumbers
        for (index, msn) in newNumbers.enumerated() where oldNumbers.contains(msn) {
            let before = old.segments[Int(msn - oldNumbers.lowerBound)]
            let now = new.segments[index]
            let line = current.lines.segmentLines[index]
            if before.uri != now.uri {
                findings.append(
                    Finding(
                        rule: "mediasequence.uri-changed", line: line,
                        message: "media sequence \(msn) was \(before.uri) and is now \(now.uri)"))
            }
            if before.duration != now.duration {
                findings.append(
                    Finding(
                        rule: "segment.changed", line: line,
                        message: "segment \(msn) changed duration from \(before.duration) to \(now.duration)"))
            }
            if let a = before.programDateTime, let b = now.programDateTime, a != b {
                findings.append(
                    Finding(
                        rule: "pdt.mapping-changed", line: line,
                        message: "segment \(msn) was dated \(a) and is now \(b)"))
            }
        }
        if !oldNumbers.isEmpty, newNumbers.upperBound < oldNumbers.upperBound {
            findings.append(
                Finding(
                    rule: "playlist.shrunk", line: nil,
                    message: "the last segment was \(oldNumbers.upperBound - 1) and is now \(newNumbers.upperBound - 1)"
                ))
        }
        if new.skip == nil && old.skip == nil && newNumbers.lowerBound <= oldNumbers.upperBound {
            let removed = old.segments.prefix(max(0, Int(newNumbers.lowerBound - oldNumbers.lowerBound)))
            let expected = old.discontinuitySequence.saturatingAdding(Int64(removed.filter(\.hasDiscontinuity).count))
            if new.discontinuitySequence != expected {
                findings.append(
                    Finding(
                        rule: "discontinuity-sequence.wrong", line: nil,
                        message:
                            "EXT-X-DISCONTINUITY-SEQUENCE is \(new.discontinuitySequence); with the discontinuities that slid out it should be \(expected)"
                    ))
            }
        }

        let oldRanges = old.dateRanges
        let newRanges = new.dateRanges
        let oldGroups = groupByID(oldRanges)
        let newGroups = Dictionary(uniqueKeysWithValues: groupByID(newRanges))
        let oldEdge = windowEdge(old)
        let newStart = new.segments.first?.programDateTime
        for (id, indices) in oldGroups {
            let before = attributeMap(indices.map { oldRanges[$0] })
            guard let newIndices = newGroups[id] else {
                guard let merged = merge(indices.map { oldRanges[$0] })?.range, let start = merged.startDate else {
                    continue
                }
                let end = merged.endDate ?? merged.duration.map { start.adding(milliseconds: $0.milliseconds) }
                let notStarted = oldEdge.map { start >= $0 } ?? true
                let slidOut = end.flatMap { end in newStart.map { end <= $0 } } ?? false
                if !notStarted && !slidOut {
                    findings.append(
                        Finding(
                            rule: "daterange.removed-early", line: nil,
                            message:
                                "date range \(id) disappeared although it had started (\(start)) and had not left the window"
                        ))
                }
                continue
            }
            let after = attributeMap(newIndices.map { newRanges[$0] })
            let line = current.lines.dateRangeLines[newIndices[0]]
            for (name, value) in before {
                guard let now = after[name] else {
                    findings.append(
                        Finding(
                            rule: "daterange.attribute-removed", line: line,
                            message: "date range \(id): \(name)=\(value) was published and is gone"))
                    continue
                }
                if now != value {
                    findings.append(
                        Finding(
                            rule: "daterange.attribute-changed", line: line,
                            message: "date range \(id): \(name) changed from \(value) to \(now)"))
                }
            }
        }
        return findings
    }

    // MARK: - Renditions at one tick

    /// Checks that the playlists of all renditions at one tick agree: target duration, date ranges, dates.
    public static func checkRenditions(_ playlists: [(name: String, parsed: ParsedMediaPlaylist)]) -> [Finding] {
        guard let (referenceName, reference) = playlists.first else { return [] }
        var findings: [Finding] = []
        let referenceRanges = renderedRanges(reference.playlist)
        for (name, parsed) in playlists.dropFirst() {
            if parsed.playlist.targetDuration != reference.playlist.targetDuration {
                findings.append(
                    Finding(
                        rule: "renditions.targetduration-mismatch", line: parsed.lines.targetDurationLine,
                        message:
                            "\(name) has EXT-X-TARGETDURATION \(parsed.playlist.targetDuration), \(referenceName) has \(reference.playlist.targetDuration)",
                        source: name))
            }
            let ranges = renderedRanges(parsed.playlist)
            if ranges != referenceRanges {
                let index =
                    zip(ranges, referenceRanges).enumerated().first { $0.element.0 != $0.element.1 }?.offset
                    ?? min(ranges.count, referenceRanges.count)
                let line = index < parsed.lines.dateRangeLines.count ? parsed.lines.dateRangeLines[index] : nil
                findings.append(
                    Finding(
                        rule: "renditions.daterange-mismatch", line: line,
                        message:
                            "\(name) and \(referenceName) differ in their date ranges (tag \(index + 1): \(index < ranges.count ? ranges[index] : "none") vs \(index < referenceRanges.count ? referenceRanges[index] : "none"))",
                        source: name))
            }
            let referenceDates = Dictionary(
                zip(reference.playlist.sequenceNumbers, reference.playlist.segments.map(\.programDateTime)),
                uniquingKeysWith: { a, _ in a })
            for (index, (msn, segment)) in zip(parsed.playlist.sequenceNumbers, parsed.playlist.segments).enumerated() {
                if let theirs = referenceDates[msn], let theirs, let ours = segment.programDateTime, theirs != ours {
                    findings.append(
                        Finding(
                            rule: "renditions.pdt-mismatch", line: parsed.lines.segmentLines[index],
                            message:
                                "media sequence \(msn) is dated \(ours) in \(name) and \(theirs) in \(referenceName)",
                            source: name))
                    break
                }
            }
        }
        return findings
    }

    // MARK: - Multivariant

    public static func check(_ parsed: ParsedMultivariantPlaylist) -> [Finding] {
        var findings = parsed.issues.map { Finding(rule: $0.rule, line: $0.line, message: $0.message) }
        let playlist = parsed.playlist
        if playlist.variants.isEmpty {
            findings.append(
                Finding(rule: "variant.none", line: nil, message: "the multivariant playlist lists no variant"))
        }
        for variant in playlist.variants {
            if variant.codecs.isEmpty {
                findings.append(
                    Finding(
                        rule: "variant.codecs-missing", severity: .warning, line: nil,
                        message: "variant \(variant.uri) has no CODECS"))
            }
            let references: [(Rendition.MediaType, String?)] = [
                (.audio, variant.audio), (.video, variant.video), (.subtitles, variant.subtitles),
                (.closedCaptions, variant.closedCaptions),
            ]
            for (type, group) in references {
                guard let group else { continue }
                if !playlist.media.contains(where: { $0.type == type && $0.groupID == group }) {
                    findings.append(
                        Finding(
                            rule: "variant.group-undefined", line: nil,
                            message:
                                "variant \(variant.uri) names \(type.rawValue) group \(group), which no EXT-X-MEDIA defines"
                        ))
                }
            }
        }
        return findings
    }

    // MARK: - Helpers

    /// Indices of the tags of each ID, IDs in order of first appearance.
    static func groupByID(_ ranges: [DateRange]) -> [(String, [Int])] {
        var order: [String] = []
        var groups: [String: [Int]] = [:]
        for (index, range) in ranges.enumerated() {
            if groups[range.id] == nil { order.append(range.id) }
            groups[range.id, default: []].append(index)
        }
        return order.map { ($0, groups[$0]!) }
    }

    struct Merged {
        var range: DateRange
        var conflicts: [(tag: Int, name: String, first: String, second: String)]
    }

    /// The union of the attributes of all tags of one ID, with the values that disagree.
    static func merge(_ tags: [DateRange]) -> Merged? {
        guard var range = tags.first else { return nil }
        var conflicts: [(Int, String, String, String)] = []
        var seen = attributeMap([range])
        for (offset, tag) in tags.enumerated().dropFirst() {
            for (name, value) in attributeMap([tag]) {
                if let existing = seen[name], existing != value { conflicts.append((offset, name, existing, value)) }
                seen[name] = seen[name] ?? value
            }
            range.classAttribute = range.classAttribute ?? tag.classAttribute
            range.startDate = range.startDate ?? tag.startDate
            range.endDate = range.endDate ?? tag.endDate
            range.duration = range.duration ?? tag.duration
            range.plannedDuration = range.plannedDuration ?? tag.plannedDuration
            range.assetURI = range.assetURI ?? tag.assetURI
            range.assetList = range.assetList ?? tag.assetList
            range.resumeOffset = range.resumeOffset ?? tag.resumeOffset
            range.playoutLimit = range.playoutLimit ?? tag.playoutLimit
            range.cue = range.cue ?? tag.cue
        }
        return Merged(range: range, conflicts: conflicts)
    }

    /// Attribute name → rendered value over all tags of one ID (the first value of a name wins).
    static func attributeMap(_ tags: [DateRange]) -> [String: String] {
        var map: [String: String] = [:]
        for tag in tags {
            guard let line = try? PlaylistRenderer.render(tag),
                let pairs = try? AttributeListParser.parse(line.dropFirst("#EXT-X-DATERANGE:".count).dropLast())
            else { continue }
            for (name, value) in pairs where map[name] == nil {
                if case .quoted(let text) = value { map[name] = "\"\(text)\"" } else { map[name] = value.text }
            }
        }
        return map
    }

    /// Every date range tag rendered, in order: the unit of comparison across renditions.
    static func renderedRanges(_ playlist: MediaPlaylist) -> [String] {
        playlist.dateRanges.map { (try? PlaylistRenderer.render($0))?.dropLast().description ?? "\($0)" }
    }

    /// The end of the last segment on the program timeline (the live edge).
    static func windowEdge(_ playlist: MediaPlaylist) -> Timestamp? {
        guard let last = playlist.segments.last, let date = last.programDateTime else { return nil }
        return date.adding(milliseconds: last.duration.milliseconds)
    }

    static func isAbsolute(_ uri: String) -> Bool {
        guard let colon = uri.firstIndex(of: ":") else { return false }
        let scheme = uri[..<colon]
        return !scheme.isEmpty
            && scheme.allSatisfy { $0.isLetter || $0.isNumber || $0 == "+" || $0 == "-" || $0 == "." }
            && uri[colon...].hasPrefix("://")
    }
}

extension Int64 {
    /// `self + other`, held at the ends of `Int64` instead of trapping: a lint reads playlists from anywhere.
    func saturatingAdding(_ other: Int64) -> Int64 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? (other < 0 ? .min : .max) : sum
    }

    /// `self * factor` for a positive factor, held at the ends of `Int64` instead of trapping.
    func saturatingMultiplied(by factor: Int64) -> Int64 {
        let (product, overflow) = multipliedReportingOverflow(by: factor)
        return overflow ? ((self < 0) != (factor < 0) ? .min : .max) : product
    }
}
