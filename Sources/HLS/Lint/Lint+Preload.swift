/// Preload ranges (rfc8216bis-22 Appendix F) and an interstitial's skip control (Appendix D.3).
extension Lint {
    static let preloadClass = "com.apple.hls.preload"

    static func checkPreloadAndSkip(_ parsed: ParsedMediaPlaylist) -> [Finding] {
        var findings: [Finding] = []
        let playlist = parsed.playlist
        let ranges = playlist.dateRanges
        let lines = parsed.lines.dateRangeLines
        var merged: [String: (range: DateRange, line: Int?)] = [:]
        let groups = groupByID(ranges)
        for (id, indices) in groups {
            if let range = merge(indices.map { ranges[$0] })?.range { merged[id] = (range, lines[indices[0]]) }
        }
        for (id, _) in groups {
            guard let entry = merged[id] else { continue }
            let (range, line) = entry
            if range.isInterstitial { findings += checkSkipControl(id, range, line: line) }
            guard range.classAttribute == preloadClass else { continue }
            func attribute(_ name: String) -> String? {
                guard case .string(let value)? = range.clientAttributes.first(where: { $0.name == name })?.value else {
                    return nil
                }
                return value
            }
            let missing = ["X-URI", "X-TARGET-ID", "X-TARGET-CLASS"].filter { attribute($0) == nil }
            if !missing.isEmpty {
                findings.append(
                    Finding(
                        rule: "preload.attribute-missing", line: line,
                        message: "preload range \(id) has no \(missing.joined(separator: ", ")) (quoted strings)"))
            }
            if range.duration == nil && range.endDate == nil {
                findings.append(
                    Finding(
                        rule: "preload.no-end", line: line,
                        message: "preload range \(id) has neither DURATION nor END-DATE"))
            }
            if range.cue != nil || range.endOnNext {
                findings.append(
                    Finding(
                        rule: "preload.cue", line: line, message: "preload range \(id) carries CUE or END-ON-NEXT"))
            }
            guard let targetID = attribute("X-TARGET-ID"), let target = merged[targetID]?.range else { continue }
            if let targetClass = attribute("X-TARGET-CLASS"), target.classAttribute != targetClass {
                findings.append(
                    Finding(
                        rule: "preload.target-class", severity: .warning, line: line,
                        message:
                            "preload range \(id) names class \(targetClass) for \(targetID), whose CLASS is \(target.classAttribute ?? "missing"): players will not use it"
                    ))
            }
            if let uri = attribute("X-URI"), let targetURI = target.assetList ?? target.assetURI, uri != targetURI {
                findings.append(
                    Finding(
                        rule: "preload.uri-mismatch", severity: .warning, line: line,
                        message:
                            "preload range \(id) fetches \(uri), but \(targetID) plays \(targetURI): players discard what they preloaded"
                    ))
            }
            if let start = range.startDate, let targetStart = target.startDate {
                let end = range.endDate ?? range.duration.map { start.adding(milliseconds: $0.milliseconds) }
                if let end, end > targetStart {
                    findings.append(
                        Finding(
                            rule: "preload.after-target", severity: .warning, line: line,
                            message: "preload range \(id) ends at \(end), after \(targetID) starts (\(targetStart))"))
                }
            }
        }
        return findings
    }

    /// `X-SKIP-CONTROL-OFFSET` and `-DURATION` decimal integers of seconds, `-LABEL-ID` of `[a-zA-Z_-]`, an offset
    /// inside the interstitial.
    static func checkSkipControl(_ id: String, _ range: DateRange, line: Int?) -> [Finding] {
        var findings: [Finding] = []
        for (name, value) in [
            ("X-SKIP-CONTROL-OFFSET", range.skipControlOffset), ("X-SKIP-CONTROL-DURATION", range.skipControlDuration),
        ] {
            if let value, !value.isInteger || value.milliseconds < 0 {
                findings.append(
                    Finding(
                        rule: "interstitial.skip-control", line: line,
                        message: "interstitial \(id): \(name)=\(value) is not a whole number of seconds, 0 or more"))
            }
        }
        if let label = range.skipControlLabelID,
            label.isEmpty
                || !label.unicodeScalars.allSatisfy({ scalar in
                    switch scalar {
                    case "a"..."z", "A"..."Z", "-", "_": true
                    default: false
                    }
                })
        {
            findings.append(
                Finding(
                    rule: "interstitial.skip-control", line: line,
                    message:
                        "interstitial \(id): X-SKIP-CONTROL-LABEL-ID \"\(label)\" holds characters other than a-z, A-Z, '-' and '_'"
                ))
        }
        if let offset = range.skipControlOffset,
            let length = range.playoutLimit ?? range.duration ?? range.plannedDuration,
            offset.milliseconds >= length.milliseconds
        {
            findings.append(
                Finding(
                    rule: "interstitial.skip-never-shown", severity: .warning, line: line,
                    message:
                        "interstitial \(id): the skip button would show \(offset) s in, but it lasts \(length) s"))
        }
        return findings
    }
}
