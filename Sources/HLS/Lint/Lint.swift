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
        findings += checkCues(parsed)
        return findings
    }
}
