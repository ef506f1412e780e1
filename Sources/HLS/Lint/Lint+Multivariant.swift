/// The multivariant playlist's rules, and the helpers the checks share.
extension Lint {
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

    /// `|self - other|`, held at `Int64.max` instead of trapping.
    func saturatingDistance(to other: Int64) -> Int64 {
        let (difference, overflow) = subtractingReportingOverflow(other)
        return overflow || difference == .min ? .max : Swift.abs(difference)
    }

    /// `self * factor` for a positive factor, held at the ends of `Int64` instead of trapping.
    func saturatingMultiplied(by factor: Int64) -> Int64 {
        let (product, overflow) = multipliedReportingOverflow(by: factor)
        return overflow ? ((self < 0) != (factor < 0) ? .min : .max) : product
    }
}
