/// A problem found while parsing, with its 1-based line.
public struct ParseIssue: Error, Hashable, Sendable, CustomStringConvertible {
    /// A stable rule id, the same namespace as the lint's (`syntax.*`, `daterange.*`…).
    public var rule: String
    public var line: Int
    public var message: String

    public init(rule: String, line: Int, message: String) {
        self.rule = rule
        self.line = line
        self.message = message
    }

    public var description: String { "line \(line): \(message) [\(rule)]" }
}

/// Where things stand in the parsed text, for findings that name a line.
public struct LineMap: Hashable, Sendable {
    /// The `EXTINF` line of each segment.
    public var segmentLines: [Int] = []
    /// The line of each date range tag, in `MediaPlaylist.dateRanges` order.
    public var dateRangeLines: [Int] = []
    public var targetDurationLine: Int?
    public var mediaSequenceLine: Int?
    public var versionLine: Int?
    public var playlistTypeLine: Int?

    public init() {}
}

public struct ParsedMediaPlaylist: Hashable, Sendable {
    public var playlist: MediaPlaylist
    public var lines: LineMap
    /// Problems that did not stop parsing (an invalid enumerated value, a duplicate attribute…).
    public var issues: [ParseIssue]
}

public struct ParsedMultivariantPlaylist: Hashable, Sendable {
    public var playlist: MultivariantPlaylist
    public var issues: [ParseIssue]
}

/// A playlist of either kind.
public enum ParsedPlaylist: Hashable, Sendable {
    case media(ParsedMediaPlaylist)
    case multivariant(ParsedMultivariantPlaylist)
}

/// Parses playlists: ours byte for byte (parse → render gives the same text), and upstream encoders' with
/// tolerance: unknown tags are kept verbatim where they stood, CRLF line endings are accepted.
public enum PlaylistParser {
    /// Parses either kind, telling them apart by their tags.
    public static func parse(_ text: String) throws(ParseIssue) -> ParsedPlaylist {
        let isMultivariant =
            text.contains("#EXT-X-STREAM-INF") || (text.contains("#EXT-X-MEDIA:") && !text.contains("#EXTINF"))
        return isMultivariant ? .multivariant(try parseMultivariant(text)) : .media(try parseMedia(text))
    }

    public static func parseMedia(_ text: String) throws(ParseIssue) -> ParsedMediaPlaylist {
        var state = MediaState()
        let lines = try splitLines(text)
        var targetDuration: Int?
        for (number, line) in lines where number > 1 {
            if line.isEmpty { continue }
            guard line.hasPrefix("#") else {
                try state.finishSegment(uri: String(line), line: number)
                continue
            }
            guard line.hasPrefix("#EXT") else { continue }  // a comment
            let (name, value) = splitTag(line)
            switch name {
            case "#EXT-X-VERSION":
                state.playlist.version = try integer(value, line: number, tag: name)
                state.lines.versionLine = number
            case "#EXT-X-TARGETDURATION":
                targetDuration = try integer(value, line: number, tag: name)
                state.lines.targetDurationLine = number
            case "#EXT-X-MEDIA-SEQUENCE":
                state.playlist.mediaSequence = Int64(try integer(value, line: number, tag: name))
                state.lines.mediaSequenceLine = number
            case "#EXT-X-DISCONTINUITY-SEQUENCE":
                state.playlist.discontinuitySequence = Int64(try integer(value, line: number, tag: name))
            case "#EXT-X-PLAYLIST-TYPE":
                guard let type = MediaPlaylist.PlaylistType(rawValue: String(value ?? "")) else {
                    throw ParseIssue(
                        rule: "syntax.playlist-type", line: number, message: "EXT-X-PLAYLIST-TYPE must be EVENT or VOD")
                }
                state.playlist.playlistType = type
                state.lines.playlistTypeLine = number
            case "#EXT-X-INDEPENDENT-SEGMENTS":
                state.playlist.independentSegments = true
            case "#EXT-X-I-FRAMES-ONLY":
                state.playlist.iFramesOnly = true
            case "#EXT-X-ENDLIST":
                state.playlist.endList = true
            case "#EXT-X-START":
                state.playlist.start = try startPoint(try attributes(value, line: number, tag: name), line: number)
            case "#EXT-X-SERVER-CONTROL":
                let a = try attributes(value, line: number, tag: name)
                state.playlist.serverControl = ServerControl(
                    canBlockReload: a.yes("CAN-BLOCK-RELOAD"),
                    canSkipUntil: try a.decimal("CAN-SKIP-UNTIL", line: number),
                    canSkipDateRanges: a.yes("CAN-SKIP-DATERANGES"), holdBack: try a.decimal("HOLD-BACK", line: number),
                    partHoldBack: try a.decimal("PART-HOLD-BACK", line: number))
            case "#EXT-X-PART-INF":
                let a = try attributes(value, line: number, tag: name)
                state.playlist.partTarget = try a.decimal("PART-TARGET", line: number)
            case "#EXT-X-SKIP":
                let a = try attributes(value, line: number, tag: name)
                state.playlist.skip = Skip(
                    skippedSegments: Int(try a.integer("SKIPPED-SEGMENTS", line: number) ?? 0),
                    recentlyRemovedDateRanges: a.string("RECENTLY-REMOVED-DATERANGES").map {
                        $0.split(separator: "\t").map(String.init)
                    })
            case "#EXTINF":
                try state.beginSegment(value ?? "", line: number)
            case "#EXT-X-DISCONTINUITY":
                state.pending.append(.discontinuity)
            case "#EXT-X-GAP":
                state.pending.append(.gap)
            case "#EXT-X-PROGRAM-DATE-TIME":
                guard let date = Timestamp(iso8601: String(value ?? "")) else {
                    throw ParseIssue(
                        rule: "pdt.format", line: number,
                        message:
                            "EXT-X-PROGRAM-DATE-TIME \(String(value ?? "").debugDescription) is not an ISO 8601 date-time with a time zone"
                    )
                }
                state.pending.append(.programDateTime(date))
            case "#EXT-X-BITRATE":
                state.pending.append(.bitrate(try integer(value, line: number, tag: name)))
            case "#EXT-X-BYTERANGE":
                state.pending.append(.byteRange(try byteRange(value ?? "", line: number)))
            case "#EXT-X-MAP":
                let a = try attributes(value, line: number, tag: name)
                guard let uri = a.string("URI") else {
                    throw ParseIssue(rule: "syntax.missing-attribute", line: number, message: "EXT-X-MAP needs URI")
                }
                state.pending.append(
                    .map(
                        MediaInitialization(
                            uri: uri,
                            byteRange: try a.string("BYTERANGE").map { s throws(ParseIssue) in
                                try byteRange(s, line: number)
                            })))
            case "#EXT-X-KEY":
                let a = try attributes(value, line: number, tag: name)
                state.pending.append(
                    .key(
                        Key(
                            method: a.string("METHOD") ?? "NONE", uri: a.string("URI"),
                            iv: a.string("IV").flatMap { HexBytes(hex: $0) },
                            keyFormat: a.string("KEYFORMAT"), keyFormatVersions: a.string("KEYFORMATVERSIONS"))))
            case "#EXT-X-DATERANGE":
                let a = try attributes(value, line: number, tag: name)
                state.pending.append(.dateRange(dateRange(a, line: number, issues: &state.issues)))
                state.dateRangeLinesPending.append(number)
            case "#EXT-X-PART":
                let a = try attributes(value, line: number, tag: name)
                guard let duration = try a.decimal("DURATION", line: number), let uri = a.string("URI") else {
                    throw ParseIssue(
                        rule: "syntax.missing-attribute", line: number, message: "EXT-X-PART needs DURATION and URI")
                }
                state.pending.append(
                    .part(
                        Part(
                            duration: duration, uri: uri, independent: a.yes("INDEPENDENT"),
                            byteRange: try a.string("BYTERANGE").map { s throws(ParseIssue) in
                                try byteRange(s, line: number)
                            }, gap: a.yes("GAP"))))
            case "#EXT-X-PRELOAD-HINT":
                let a = try attributes(value, line: number, tag: name)
                guard let type = a.string("TYPE").flatMap(PreloadHint.HintType.init(rawValue:)),
                    let uri = a.string("URI")
                else {
                    throw ParseIssue(
                        rule: "syntax.missing-attribute", line: number,
                        message: "EXT-X-PRELOAD-HINT needs TYPE (PART or MAP) and URI")
                }
                state.pending.append(
                    .preloadHint(
                        PreloadHint(
                            type: type, uri: uri, byteRangeStart: try a.integer("BYTERANGE-START", line: number),
                            byteRangeLength: try a.integer("BYTERANGE-LENGTH", line: number))))
            case "#EXT-X-RENDITION-REPORT":
                let a = try attributes(value, line: number, tag: name)
                state.pending.append(
                    .renditionReport(
                        RenditionReport(
                            uri: a.string("URI") ?? "", lastMediaSequence: try a.integer("LAST-MSN", line: number),
                            lastPart: try a.integer("LAST-PART", line: number).map(Int.init))))
            default:
                if let cue = CueMarker(line: line) {
                    state.pending.append(.cue(cue))
                } else if state.playlist.segments.isEmpty && state.pending.isEmpty && state.inf == nil {
                    state.playlist.unknownHeaderTags.append(String(line))
                } else {
                    state.pending.append(.unknown(String(line)))
                }
            }
        }
        if state.inf != nil {
            throw ParseIssue(
                rule: "syntax.segment-uri", line: state.infLine, message: "EXTINF is not followed by a URI line")
        }
        guard let targetDuration else {
            throw ParseIssue(rule: "targetduration.missing", line: 1, message: "EXT-X-TARGETDURATION is missing")
        }
        state.playlist.targetDuration = targetDuration
        state.playlist.trailingTags = state.pending
        state.lines.dateRangeLines += state.dateRangeLinesPending
        return ParsedMediaPlaylist(playlist: state.playlist, lines: state.lines, issues: state.issues)
    }

    public static func parseMultivariant(_ text: String) throws(ParseIssue) -> ParsedMultivariantPlaylist {
        var playlist = MultivariantPlaylist()
        var issues: [ParseIssue] = []
        var pendingVariant: (Variant, Int)?
        for (number, line) in try splitLines(text) where number > 1 {
            if line.isEmpty { continue }
            if !line.hasPrefix("#") {
                guard var (variant, _) = pendingVariant else {
                    throw ParseIssue(
                        rule: "syntax.orphan-uri", line: number,
                        message: "a URI line without EXT-X-STREAM-INF before it")
                }
                variant.uri = String(line)
                playlist.variants.append(variant)
                pendingVariant = nil
                continue
            }
            guard line.hasPrefix("#EXT") else { continue }
            let (name, value) = splitTag(line)
            switch name {
            case "#EXT-X-VERSION":
                playlist.version = try integer(value, line: number, tag: name)
            case "#EXT-X-INDEPENDENT-SEGMENTS":
                playlist.independentSegments = true
            case "#EXT-X-START":
                playlist.start = try startPoint(try attributes(value, line: number, tag: name), line: number)
            case "#EXT-X-MEDIA":
                let a = try attributes(value, line: number, tag: name)
                guard let type = a.string("TYPE").flatMap(Rendition.MediaType.init(rawValue:)),
                    let group = a.string("GROUP-ID"),
                    let renditionName = a.string("NAME")
                else {
                    throw ParseIssue(
                        rule: "syntax.missing-attribute", line: number,
                        message: "EXT-X-MEDIA needs TYPE, GROUP-ID and NAME")
                }
                playlist.media.append(
                    Rendition(
                        type: type, uri: a.string("URI"), groupID: group, language: a.string("LANGUAGE"),
                        associatedLanguage: a.string("ASSOC-LANGUAGE"), name: renditionName,
                        isDefault: a.yes("DEFAULT"),
                        autoselect: a.yes("AUTOSELECT"), forced: a.yes("FORCED"), instreamID: a.string("INSTREAM-ID"),
                        characteristics: a.string("CHARACTERISTICS"), channels: a.string("CHANNELS")))
            case "#EXT-X-STREAM-INF", "#EXT-X-I-FRAME-STREAM-INF":
                let a = try attributes(value, line: number, tag: name)
                guard let bandwidth = try a.integer("BANDWIDTH", line: number) else {
                    throw ParseIssue(
                        rule: "variant.bandwidth-missing", line: number, message: "\(name.dropFirst()) needs BANDWIDTH")
                }
                var variant = Variant(
                    bandwidth: Int(bandwidth),
                    averageBandwidth: try a.integer("AVERAGE-BANDWIDTH", line: number).map(Int.init),
                    codecs: a.string("CODECS").map { $0.split(separator: ",").map(String.init) } ?? [],
                    resolution: a.string("RESOLUTION").flatMap { Resolution($0) },
                    frameRate: try a.decimal("FRAME-RATE", line: number),
                    hdcpLevel: a.string("HDCP-LEVEL"),
                    videoRange: a.string("VIDEO-RANGE").flatMap(Variant.VideoRange.init(rawValue:)),
                    audio: a.string("AUDIO"), video: a.string("VIDEO"), subtitles: a.string("SUBTITLES"),
                    uri: a.string("URI") ?? "")
                if case .unquoted("NONE") = a["CLOSED-CAPTIONS"] {
                    variant.closedCaptionsNone = true
                } else {
                    variant.closedCaptions = a.string("CLOSED-CAPTIONS")
                }
                if let range = a.string("VIDEO-RANGE"), variant.videoRange == nil {
                    issues.append(
                        ParseIssue(
                            rule: "variant.video-range", line: number,
                            message: "VIDEO-RANGE \(range) is not SDR, HLG or PQ"))
                }
                if name == "#EXT-X-I-FRAME-STREAM-INF" {
                    playlist.iFrameVariants.append(variant)
                } else {
                    pendingVariant = (variant, number)
                }
            default:
                playlist.unknownTags.append(String(line))
            }
        }
        if let (_, line) = pendingVariant {
            throw ParseIssue(
                rule: "syntax.orphan-uri", line: line, message: "EXT-X-STREAM-INF is not followed by a URI line")
        }
        return ParsedMultivariantPlaylist(playlist: playlist, issues: issues)
    }

    // MARK: - Pieces

    private struct MediaState {
        var playlist = MediaPlaylist(targetDuration: 1)
        var lines = LineMap()
        var issues: [ParseIssue] = []
        var pending: [SegmentTag] = []
        var dateRangeLinesPending: [Int] = []
        var inf: (DecimalNumber, String)?
        var infLine = 0

        mutating func beginSegment(_ value: Substring, line: Int) throws(ParseIssue) {
            let comma = value.firstIndex(of: ",")
            let durationText = comma.map { value[..<$0] } ?? value
            guard let duration = DecimalNumber(durationText), duration.mantissa >= 0 else {
                throw ParseIssue(
                    rule: "syntax.extinf", line: line,
                    message: "EXTINF duration \(String(durationText).debugDescription) is not a decimal number")
            }
            inf = (duration, comma.map { String(value[value.index(after: $0)...]) } ?? "")
            infLine = line
        }

        mutating func finishSegment(uri: String, line: Int) throws(ParseIssue) {
            guard let (duration, title) = inf else {
                throw ParseIssue(
                    rule: "syntax.orphan-uri", line: line,
                    message: "URI line \(uri.debugDescription) without an EXTINF before it")
            }
            playlist.segments.append(Segment(duration: duration, title: title, uri: uri, tags: pending))
            lines.segmentLines.append(infLine)
            lines.dateRangeLines += dateRangeLinesPending
            pending = []
            dateRangeLinesPending = []
            inf = nil
        }
    }

    private static func splitLines(_ text: String) throws(ParseIssue) -> [(Int, Substring)] {
        var result: [(Int, Substring)] = []
        var number = 0
        for raw in text.split(separator: "\n", omittingEmptySubsequences: false) {
            number += 1
            result.append((number, raw.hasSuffix("\r") ? raw.dropLast() : raw))
        }
        if result.last?.1.isEmpty == true { result.removeLast() }
        guard let first = result.first, first.1 == "#EXTM3U" else {
            throw ParseIssue(
                rule: "syntax.extm3u", line: 1, message: "a playlist must start with #EXTM3U on its first line")
        }
        return result
    }

    private static func splitTag(_ line: Substring) -> (String, Substring?) {
        guard let colon = line.firstIndex(of: ":") else { return (String(line), nil) }
        return (String(line[..<colon]), line[line.index(after: colon)...])
    }

    private static func integer(_ value: Substring?, line: Int, tag: String) throws(ParseIssue) -> Int {
        guard let value, let number = Int(value), number >= 0 else {
            throw ParseIssue(
                rule: "syntax.integer", line: line,
                message: "\(tag.dropFirst()) needs a non-negative integer, got \(String(value ?? "").debugDescription)")
        }
        return number
    }

    private static func byteRange(_ text: some StringProtocol, line: Int) throws(ParseIssue) -> ByteRange {
        let parts = text.split(separator: "@")
        guard (1...2).contains(parts.count), let length = Int64(parts[0]), parts.count == 1 || Int64(parts[1]) != nil
        else {
            throw ParseIssue(
                rule: "syntax.byterange", line: line,
                message: "byte range \(String(text).debugDescription) is not length[@offset]")
        }
        return ByteRange(length: length, offset: parts.count == 2 ? Int64(parts[1]) : nil)
    }

    private static func attributes(_ value: Substring?, line: Int, tag: String) throws(ParseIssue) -> Attributes {
        do {
            return Attributes(pairs: try AttributeListParser.parse(value ?? ""))
        } catch {
            throw ParseIssue(rule: "syntax.attribute-list", line: line, message: "\(tag.dropFirst()): \(error.message)")
        }
    }

    private static func startPoint(_ a: Attributes, line: Int) throws(ParseIssue) -> StartPoint {
        guard let offset = try a.decimal("TIME-OFFSET", line: line) else {
            throw ParseIssue(rule: "syntax.missing-attribute", line: line, message: "EXT-X-START needs TIME-OFFSET")
        }
        return StartPoint(timeOffset: offset, precise: a.yes("PRECISE"))
    }

    static func dateRange(_ a: Attributes, line: Int, issues: inout [ParseIssue]) -> DateRange {
        func problem(_ rule: String, _ message: String) {
            issues.append(ParseIssue(rule: rule, line: line, message: message))
        }
        for name in a.duplicates {
            problem("daterange.duplicate-attribute", "EXT-X-DATERANGE has \(name) more than once")
        }
        func decimal(_ name: String) -> DecimalNumber? {
            guard let raw = a[name] else { return nil }
            if case .unquoted(let text) = raw, let number = DecimalNumber(text) { return number }
            problem(
                "daterange.attribute-type",
                "\(name) must be an unquoted decimal number, got \(raw.text.debugDescription)")
            return nil
        }
        func quoted(_ name: String) -> String? {
            guard let raw = a[name] else { return nil }
            if case .quoted(let text) = raw { return text }
            problem("daterange.attribute-type", "\(name) must be a quoted string")
            return raw.text
        }
        func date(_ name: String) -> Timestamp? {
            guard let text = quoted(name) else { return nil }
            guard let date = Timestamp(iso8601: text) else {
                problem(
                    "daterange.date-format",
                    "\(name) \(text.debugDescription) is not an ISO 8601 date-time with a time zone")
                return nil
            }
            return date
        }
        func list<T: RawRepresentable>(_ name: String, _: T.Type) -> [T]? where T.RawValue == String {
            guard let text = quoted(name) else { return nil }
            var values: [T] = []
            for item in text.split(separator: ",", omittingEmptySubsequences: false) {
                guard let value = T(rawValue: String(item)) else {
                    problem(
                        "interstitial.enumerated-value",
                        "\(name) holds \(String(item).debugDescription), which is not a valid value")
                    continue
                }
                values.append(value)
            }
            return values
        }
        func one<T: RawRepresentable>(_ name: String, _: T.Type) -> T? where T.RawValue == String {
            guard let text = quoted(name) else { return nil }
            guard let value = T(rawValue: text) else {
                problem("interstitial.enumerated-value", "\(name) \(text.debugDescription) is not a valid value")
                return nil
            }
            return value
        }
        func hex(_ name: String) -> HexBytes? {
            guard let raw = a[name] else { return nil }
            guard case .unquoted(let text) = raw, let bytes = HexBytes(hex: text) else {
                problem("scte35.hex", "\(name) must be 0x-prefixed hexadecimal (not base64, not quoted)")
                return nil
            }
            return bytes
        }
        var range = DateRange(id: quoted("ID") ?? "")
        if a["ID"] == nil { problem("daterange.id-missing", "EXT-X-DATERANGE has no ID") }
        range.classAttribute = quoted("CLASS")
        range.startDate = date("START-DATE")
        range.cue = list("CUE", DateRange.Cue.self)
        range.endDate = date("END-DATE")
        range.duration = decimal("DURATION")
        range.plannedDuration = decimal("PLANNED-DURATION")
        range.assetURI = quoted("X-ASSET-URI")
        range.assetList = quoted("X-ASSET-LIST")
        range.resumeOffset = decimal("X-RESUME-OFFSET")
        range.playoutLimit = decimal("X-PLAYOUT-LIMIT")
        range.snap = list("X-SNAP", DateRange.Snap.self)
        range.restrict = list("X-RESTRICT", DateRange.Restriction.self)
        if let mayVary = quoted("X-CONTENT-MAY-VARY") {
            if mayVary == "YES" || mayVary == "NO" {
                range.contentMayVary = mayVary == "YES"
            } else {
                problem("interstitial.enumerated-value", "X-CONTENT-MAY-VARY must be \"YES\" or \"NO\"")
            }
        }
        range.timelineOccupies = one("X-TIMELINE-OCCUPIES", DateRange.TimelineOccupies.self)
        range.timelineStyle = one("X-TIMELINE-STYLE", DateRange.TimelineStyle.self)
        range.skipControlOffset = decimal("X-SKIP-CONTROL-OFFSET")
        range.skipControlDuration = decimal("X-SKIP-CONTROL-DURATION")
        range.skipControlLabelID = quoted("X-SKIP-CONTROL-LABEL-ID")
        range.scte35Command = hex("SCTE35-CMD")
        range.scte35Out = hex("SCTE35-OUT")
        range.scte35In = hex("SCTE35-IN")
        if let endOnNext = a["END-ON-NEXT"] {
            if endOnNext == .unquoted("YES") {
                range.endOnNext = true
            } else {
                problem("daterange.end-on-next", "END-ON-NEXT may only be YES")
            }
        }
        var seen: Set<String> = []
        for (name, value) in a.pairs where !DateRange.knownAttributes.contains(name) && seen.insert(name).inserted {
            guard name.hasPrefix("X-") else {
                problem(
                    "daterange.unknown-attribute",
                    "EXT-X-DATERANGE attribute \(name) is not defined by the draft (client attributes start with X-)")
                continue
            }
            switch value {
            case .quoted(let text):
                range.clientAttributes.append(ClientAttribute(name: name, value: .string(text)))
            case .unquoted(let text):
                if let bytes = HexBytes(hex: text) {
                    range.clientAttributes.append(ClientAttribute(name: name, value: .hex(bytes)))
                } else if let number = DecimalNumber(text) {
                    range.clientAttributes.append(ClientAttribute(name: name, value: .decimal(number)))
                } else {
                    problem(
                        "daterange.attribute-type",
                        "client attribute \(name) must be a quoted string, 0x hex or a decimal number")
                }
            }
        }
        return range
    }
}

extension DateRange {
    static let knownAttributes: Set<String> = [
        "ID", "CLASS", "START-DATE", "CUE", "END-DATE", "DURATION", "PLANNED-DURATION", "X-ASSET-URI", "X-ASSET-LIST",
        "X-RESUME-OFFSET", "X-PLAYOUT-LIMIT", "X-SNAP", "X-RESTRICT", "X-CONTENT-MAY-VARY", "X-TIMELINE-OCCUPIES",
        "X-TIMELINE-STYLE", "X-SKIP-CONTROL-OFFSET", "X-SKIP-CONTROL-DURATION", "X-SKIP-CONTROL-LABEL-ID", "SCTE35-CMD",
        "SCTE35-OUT", "SCTE35-IN", "END-ON-NEXT",
    ]
}

/// Attribute pairs with typed look-ups; the first occurrence of a name wins.
struct Attributes {
    var pairs: [(name: String, value: AttributeValue)]

    subscript(name: String) -> AttributeValue? {
        pairs.first { $0.name == name }?.value
    }

    var duplicates: [String] {
        var seen: Set<String> = []
        var repeated: [String] = []
        for (name, _) in pairs where !seen.insert(name).inserted && !repeated.contains(name) { repeated.append(name) }
        return repeated
    }

    func string(_ name: String) -> String? { self[name]?.text }

    func yes(_ name: String) -> Bool { self[name]?.text == "YES" }

    func integer(_ name: String, line: Int) throws(ParseIssue) -> Int64? {
        guard let value = self[name] else { return nil }
        guard let number = Int64(value.text), number >= 0 else {
            throw ParseIssue(rule: "syntax.integer", line: line, message: "\(name) must be a non-negative integer")
        }
        return number
    }

    func decimal(_ name: String, line: Int) throws(ParseIssue) -> DecimalNumber? {
        guard let value = self[name] else { return nil }
        guard let number = DecimalNumber(value.text) else {
            throw ParseIssue(
                rule: "syntax.decimal", line: line,
                message: "\(name) must be a decimal number, got \(value.text.debugDescription)")
        }
        return number
    }
}
