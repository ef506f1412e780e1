/// The rules of one media playlist's date ranges (interstitials).
extension Lint {
    static func checkDateRanges(_ parsed: ParsedMediaPlaylist, isLive: Bool) -> [Finding] {
        var findings: [Finding] = []
        let playlist = parsed.playlist
        let ranges = playlist.dateRanges
        let lines = parsed.lines.dateRangeLines
        let windowStart = playlist.segments.first?.programDateTime
        let liveEdge = windowEdge(playlist)

        // A viewer who joins plays every PRE interstitial it finds: a live playlist should offer one at a time.
        if isLive {
            var prerolls: [String] = []
            var secondPrerollLine: Int?
            for (offset, range) in ranges.enumerated()
            where range.isInterstitial && range.cue?.contains(.pre) == true && !prerolls.contains(range.id) {
                prerolls.append(range.id)
                if prerolls.count == 2 { secondPrerollLine = lines[offset] }
            }
            if let line = secondPrerollLine {
                findings.append(
                    Finding(
                        rule: "interstitial.preroll-many", severity: .warning, line: line,
                        message:
                            "\(prerolls.count) interstitials with CUE=PRE (\(prerolls.joined(separator: ", "))): a viewer who joins plays them all"
                    ))
            }
        }
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
        return findings + checkPreloadAndSkip(parsed)
    }
}
