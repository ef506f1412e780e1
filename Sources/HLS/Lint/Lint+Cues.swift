/// The rules of the segment-level ad markers (`EXT-X-CUE-OUT`, `-CONT`, `-IN`) a downstream SSAI reads: within one
/// playlist, between successive versions of it and between the renditions of one tick.
extension Lint {
    /// Within one playlist: every CONT and IN belongs to an open break (or stands first, where the break's OUT has
    /// slid out of the window), an OUT never opens a break inside another, each CONT repeats the OUT's duration and
    /// counts the time since it, and a break never runs past its duration without an IN.
    static func checkCues(_ parsed: ParsedMediaPlaylist) -> [Finding] {
        let playlist = parsed.playlist
        var findings: [Finding] = []
        // The open break: its duration and the time since its OUT at the start of the segment being read (nil when
        // the window starts inside it and no CONT has said yet).
        var open: (duration: DecimalNumber, elapsed: Int64?)?
        var warnedMissing = false
        func read(_ cues: [CueMarker], first: Bool, segmentMilliseconds: Int64?, line: Int?) {
            // One marker, or a break's IN then the next one's OUT (back to back).
            if cues.count > 1, cues.count > 2 || cues[0] != .in || !cues[1].isOut {
                findings.append(
                    Finding(
                        rule: "cue.unmatched", line: line,
                        message:
                            "\(cues.count) CUE markers before one segment: \(cues.map(\.line).joined(separator: ", "))"
                    ))
            }
            for cue in cues {
                switch cue {
                case .out(let duration):
                    if open != nil {
                        findings.append(
                            Finding(
                                rule: "cue.unmatched", line: line,
                                message: "EXT-X-CUE-OUT while a break is open: the earlier break has no EXT-X-CUE-IN"))
                    }
                    open = (duration, 0)
                case .cont(let elapsed, let duration):
                    if let current = open {
                        if duration != current.duration
                            || current.elapsed.map({ $0 != elapsed.milliseconds }) ?? false
                        {
                            let expected = current.elapsed.map { "\(DecimalNumber(milliseconds: $0))" } ?? "\(elapsed)"
                            findings.append(
                                Finding(
                                    rule: "cue.cont-mismatch", line: line,
                                    message:
                                        "\(cue.line) should read ElapsedTime=\(expected),Duration=\(current.duration) (the time since the break's EXT-X-CUE-OUT and its duration)"
                                ))
                        }
                    } else if !first {
                        findings.append(
                            Finding(
                                rule: "cue.unmatched", line: line,
                                message: "\(cue.line) with no break open (no EXT-X-CUE-OUT before it)"))
                    }
                    if elapsed.milliseconds >= duration.milliseconds {
                        findings.append(
                            Finding(
                                rule: "cue.past-duration", line: line,
                                message:
                                    "the break is still open \(elapsed) s after its EXT-X-CUE-OUT, past its duration \(duration) s, with no EXT-X-CUE-IN"
                            ))
                    }
                    open = (duration, elapsed.milliseconds)
                case .in:
                    if open == nil && !first {
                        findings.append(
                            Finding(
                                rule: "cue.unmatched", line: line,
                                message: "EXT-X-CUE-IN with no break open (no EXT-X-CUE-OUT before it)"))
                    }
                    open = nil
                }
            }
            if cues.isEmpty, open != nil, !warnedMissing {
                warnedMissing = true
                findings.append(
                    Finding(
                        rule: "cue.missing-cont", severity: .warning, line: line,
                        message:
                            "a segment inside an open break has no EXT-X-CUE-OUT-CONT (a player or SSAI joining here does not know it is in the break)"
                    ))
            }
            if let segmentMilliseconds, let current = open {
                open = (current.duration, current.elapsed.map { $0.saturatingAdding(segmentMilliseconds) })
            }
        }
        for (index, segment) in playlist.segments.enumerated() {
            read(
                cues(in: segment.tags), first: index == 0,
                segmentMilliseconds: segment.duration.milliseconds, line: parsed.lines.segmentLines[index])
        }
        let trailing = cues(in: playlist.trailingTags)
        if !trailing.isEmpty {
            read(trailing, first: playlist.segments.isEmpty, segmentMilliseconds: nil, line: nil)
        }
        return findings
    }

    /// Between successive versions: a segment keeps the markers it was published with (a downstream SSAI has acted on
    /// them).
    static func checkCueUpdate(previous: ParsedMediaPlaylist, current: ParsedMediaPlaylist) -> [Finding] {
        let old = previous.playlist
        let new = current.playlist
        let before = Dictionary(
            zip(old.sequenceNumbers, old.segments.map { cues(in: $0.tags) }), uniquingKeysWith: { a, _ in a })
        var findings: [Finding] = []
        for (index, (msn, segment)) in zip(new.sequenceNumbers, new.segments).enumerated() {
            guard let earlier = before[msn] else { continue }
            let now = cues(in: segment.tags)
            if now != earlier {
                findings.append(
                    Finding(
                        rule: "cue.changed", line: current.lines.segmentLines[index],
                        message:
                            "media sequence \(msn) was published with \(describe(earlier)) and now has \(describe(now))"
                    ))
            }
        }
        return findings
    }

    /// Between the renditions of one tick: the same segment carries the same markers in every rendition.
    static func checkCueRenditions(
        reference: (name: String, parsed: ParsedMediaPlaylist), other: (name: String, parsed: ParsedMediaPlaylist)
    ) -> [Finding] {
        let theirs = Dictionary(
            zip(
                reference.parsed.playlist.sequenceNumbers,
                reference.parsed.playlist.segments.map { cues(in: $0.tags) }), uniquingKeysWith: { a, _ in a })
        let playlist = other.parsed.playlist
        for (index, (msn, segment)) in zip(playlist.sequenceNumbers, playlist.segments).enumerated() {
            guard let expected = theirs[msn] else { continue }
            let ours = cues(in: segment.tags)
            if ours != expected {
                return [
                    Finding(
                        rule: "renditions.cue-mismatch", line: other.parsed.lines.segmentLines[index],
                        message:
                            "media sequence \(msn) has \(describe(ours)) in \(other.name) and \(describe(expected)) in \(reference.name)",
                        source: other.name)
                ]
            }
        }
        return []
    }

    static func cues(in tags: [SegmentTag]) -> [CueMarker] {
        tags.compactMap { if case .cue(let cue) = $0 { cue } else { nil } }
    }

    private static func describe(_ cues: [CueMarker]) -> String {
        cues.isEmpty ? "no CUE marker" : cues.map(\.line).joined(separator: ", ")
    }
}
