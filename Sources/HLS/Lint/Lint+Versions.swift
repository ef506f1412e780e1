/// The rules between two successive versions of one playlist, and between the renditions of one tick.
extension Lint {
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
                // A preload range may go at any time: its removal tells players to drop what they fetched
                // (rfc8216bis-22 Appendix F), the way a cancelled break's preload is withdrawn.
                let preload = merged.classAttribute == "com.apple.hls.preload"
                if !notStarted && !slidOut && !preload {
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
        return findings + checkCueUpdate(previous: previous, current: current)
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
            findings += checkCueRenditions(reference: (referenceName, reference), other: (name, parsed))
        }
        return findings
    }
}
