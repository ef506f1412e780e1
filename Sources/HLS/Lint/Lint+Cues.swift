/// The rules of the segment-level ad markers (`EXT-X-CUE-OUT`, `-CONT`, `-IN`) a downstream SSAI reads: within one
/// playlist, between successive versions of it and between the renditions of one tick.
///
/// Cueline writes one spelling (`CueMarker`); encoders and packagers write others (`#EXT-X-CUE-OUT:30.000`, a bare
/// `#EXT-X-CUE-OUT`, `#EXT-X-CUE-OUT-CONT:8.308/30`, `…,SCTE35=…`), which the parser keeps verbatim. The rules read
/// every spelling; an elapsed time is wrong when it is a target duration or more off the segments' sum (less is an
/// encoder counting from the splice point).
extension Lint {
    /// A marker as a downstream reads it.
    struct ReadCue: Equatable {
        enum Kind { case out, cont, `in` }
        var kind: Kind
        var duration: DecimalNumber?
        var elapsed: DecimalNumber?
        /// Cueline's spelling (`CueMarker`).
        var canonical: Bool
        /// The line, for messages and comparisons.
        var line: String
    }

    /// The markers among a segment's tags, in order, in any spelling.
    static func readCues(in tags: [SegmentTag]) -> [ReadCue] {
        tags.compactMap { tag in
            switch tag {
            case .cue(let cue):
                switch cue {
                case .out(let duration):
                    return ReadCue(kind: .out, duration: duration, canonical: true, line: cue.line)
                case .cont(let elapsed, let duration):
                    return ReadCue(kind: .cont, duration: duration, elapsed: elapsed, canonical: true, line: cue.line)
                case .in: return ReadCue(kind: .in, canonical: true, line: cue.line)
                }
            case .unknown(let line): return foreignCue(line)
            default: return nil
            }
        }
    }

    /// `#EXT-X-CUE-IN[:…]`, `#EXT-X-CUE-OUT[:30.000 | :DURATION=30,…]`, `#EXT-X-CUE-OUT-CONT[:8.308/30 |
    /// :ElapsedTime=8.308,Duration=30,…]`; nil for any other line.
    static func foreignCue(_ line: String) -> ReadCue? {
        let (name, value) =
            line.firstIndex(of: ":").map { (line[..<$0], line[line.index(after: $0)...]) }
            ?? (line[...], "")
        func attribute(_ key: String) -> DecimalNumber? {
            for pair in value.split(separator: ",") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                if parts.count == 2, parts[0].lowercased() == key.lowercased() { return DecimalNumber(parts[1]) }
            }
            return nil
        }
        switch name {
        case "#EXT-X-CUE-IN": return ReadCue(kind: .in, canonical: false, line: line)
        case "#EXT-X-CUE-OUT":
            return ReadCue(
                kind: .out, duration: DecimalNumber(value) ?? attribute("DURATION"), canonical: false, line: line)
        case "#EXT-X-CUE-OUT-CONT":
            let slash = value.split(separator: "/", maxSplits: 1)
            if slash.count == 2, let elapsed = DecimalNumber(slash[0]) {
                return ReadCue(
                    kind: .cont, duration: DecimalNumber(slash[1]), elapsed: elapsed, canonical: false, line: line)
            }
            return ReadCue(
                kind: .cont, duration: attribute("Duration"), elapsed: attribute("ElapsedTime"), canonical: false,
                line: line)
        default: return nil
        }
    }

    /// Within one playlist: every CONT and IN belongs to an open break (or stands first, where the break's OUT has
    /// slid out of the window), an OUT never opens a break inside another, each CONT repeats the OUT's duration and
    /// counts the time since it, and a break never runs past its duration without an IN.
    static func checkCues(_ parsed: ParsedMediaPlaylist) -> [Finding] {
        let playlist = parsed.playlist
        var findings: [Finding] = []
        // The open break: its duration and the time since its OUT at the start of the segment being read (nil when
        // the window starts inside it and no CONT has said yet).
        var open: (duration: DecimalNumber?, elapsed: Int64?)?
        var warnedMissing = false
        let tolerance = Int64(playlist.targetDuration).saturatingMultiplied(by: 1000)
        func read(_ cues: [ReadCue], first: Bool, segmentMilliseconds: Int64?, line: Int?) {
            // One marker, or a break's IN then the next one's OUT (back to back).
            if cues.count > 1, cues.count > 2 || cues[0].kind != .in || cues[1].kind != .out {
                findings.append(
                    Finding(
                        rule: "cue.unmatched", line: line,
                        message:
                            "\(cues.count) CUE markers before one segment: \(cues.map(\.line).joined(separator: ", "))"
                    ))
            }
            for cue in cues {
                switch cue.kind {
                case .out:
                    if open != nil {
                        findings.append(
                            Finding(
                                rule: "cue.unmatched", line: line,
                                message: "EXT-X-CUE-OUT while a break is open: the earlier break has no EXT-X-CUE-IN"))
                    }
                    open = (cue.duration, 0)
                case .cont:
                    if let current = open {
                        let durationDiffers =
                            cue.duration != nil && current.duration != nil
                            && cue.duration.map(\.milliseconds) != current.duration.map(\.milliseconds)
                        // Off by a target duration or more: a segment counted twice or missed. Less is where the
                        // encoder counts from the splice point rather than the segment (MediaLive).
                        let elapsedDiffers =
                            current.elapsed.map { expected in
                                cue.elapsed.map { $0.milliseconds.saturatingDistance(to: expected) >= tolerance }
                                    ?? false
                            } ?? false
                        if durationDiffers || elapsedDiffers {
                            let expected = current.elapsed.map { "\(DecimalNumber(milliseconds: $0))" } ?? "?"
                            findings.append(
                                Finding(
                                    rule: "cue.cont-mismatch", line: line,
                                    message:
                                        "\(cue.line) should read ElapsedTime=\(expected),Duration=\(current.duration.map { "\($0)" } ?? "?") (the time since the break's EXT-X-CUE-OUT and its duration)"
                                ))
                        }
                    } else if !first {
                        findings.append(
                            Finding(
                                rule: "cue.unmatched", line: line,
                                message: "\(cue.line) with no break open (no EXT-X-CUE-OUT before it)"))
                    }
                    if let elapsed = cue.elapsed, let duration = cue.duration ?? open?.duration,
                        elapsed.milliseconds >= duration.milliseconds
                    {
                        findings.append(
                            Finding(
                                rule: "cue.past-duration", line: line,
                                message:
                                    "the break is still open \(elapsed) s after its EXT-X-CUE-OUT, past its duration \(duration) s, with no EXT-X-CUE-IN"
                            ))
                    }
                    open = (cue.duration ?? open?.duration, cue.elapsed?.milliseconds ?? open?.elapsed)
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
                readCues(in: segment.tags), first: index == 0,
                segmentMilliseconds: segment.duration.milliseconds, line: parsed.lines.segmentLines[index])
        }
        let trailing = readCues(in: playlist.trailingTags)
        if !trailing.isEmpty {
            read(trailing, first: playlist.segments.isEmpty, segmentMilliseconds: nil, line: nil)
        }
        return findings
    }

    /// The markers of each segment by media sequence number, the segment in progress of a playlist with parts (its
    /// markers stand before its parts, after the last segment) included.
    static func cuesBySegment(_ playlist: MediaPlaylist) -> [Int64: [String]] {
        var cues = Dictionary(
            zip(playlist.sequenceNumbers, playlist.segments.map { readCues(in: $0.tags).map(\.line) }),
            uniquingKeysWith: { a, _ in a })
        if playlist.trailingTags.contains(where: { if case .part = $0 { true } else { false } }) {
            let partial = playlist.trailingTags.prefix { if case .part = $0 { false } else { true } }
            cues[playlist.sequenceNumbers.upperBound] = readCues(in: Array(partial)).map(\.line)
        }
        return cues
    }

    /// Between successive versions: a segment keeps the markers it was published with (a downstream SSAI has acted on
    /// them), the segment in progress included.
    static func checkCueUpdate(previous: ParsedMediaPlaylist, current: ParsedMediaPlaylist) -> [Finding] {
        let before = cuesBySegment(previous.playlist)
        let after = cuesBySegment(current.playlist)
        let numbers = current.playlist.sequenceNumbers
        var findings: [Finding] = []
        for msn in after.keys.sorted() {
            guard let earlier = before[msn], let now = after[msn], now != earlier else { continue }
            let index = Int(msn - numbers.lowerBound)
            findings.append(
                Finding(
                    rule: "cue.changed",
                    line: index < current.lines.segmentLines.count ? current.lines.segmentLines[index] : nil,
                    message:
                        "media sequence \(msn) was published with \(describe(earlier)) and now has \(describe(now))"))
        }
        return findings
    }

    /// Between the renditions of one tick: the same segment carries the same markers in every rendition.
    static func checkCueRenditions(
        reference: (name: String, parsed: ParsedMediaPlaylist), other: (name: String, parsed: ParsedMediaPlaylist)
    ) -> [Finding] {
        let theirs = cuesBySegment(reference.parsed.playlist)
        let ours = cuesBySegment(other.parsed.playlist)
        let numbers = other.parsed.playlist.sequenceNumbers
        for msn in ours.keys.sorted() {
            guard let expected = theirs[msn], let actual = ours[msn], actual != expected else { continue }
            let index = Int(msn - numbers.lowerBound)
            return [
                Finding(
                    rule: "renditions.cue-mismatch",
                    line: index < other.parsed.lines.segmentLines.count ? other.parsed.lines.segmentLines[index] : nil,
                    message:
                        "media sequence \(msn) has \(describe(actual)) in \(other.name) and \(describe(expected)) in \(reference.name)",
                    source: other.name)
            ]
        }
        return []
    }

    private static func describe(_ cues: [String]) -> String {
        cues.isEmpty ? "no CUE marker" : cues.joined(separator: ", ")
    }
}
