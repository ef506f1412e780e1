import HLS

// The String renderer of media playlists as it was before the byte renderer (issue 12), kept verbatim as the
// reference the byte renderer is compared with: same bytes, same errors, on every generated playlist.

enum ReferenceRenderer {
    static func render(_ playlist: MediaPlaylist) throws(RenderError) -> String {
        guard playlist.targetDuration >= 1 else { throw .invalidTargetDuration(playlist.targetDuration) }
        var out = "#EXTM3U\n"
        if let version = playlist.version { out += "#EXT-X-VERSION:\(version)\n" }
        out += "#EXT-X-TARGETDURATION:\(playlist.targetDuration)\n"
        out += "#EXT-X-MEDIA-SEQUENCE:\(playlist.mediaSequence)\n"
        if playlist.discontinuitySequence != 0 {
            out += "#EXT-X-DISCONTINUITY-SEQUENCE:\(playlist.discontinuitySequence)\n"
        }
        if let type = playlist.playlistType { out += "#EXT-X-PLAYLIST-TYPE:\(type.rawValue)\n" }
        if playlist.independentSegments { out += "#EXT-X-INDEPENDENT-SEGMENTS\n" }
        if playlist.iFramesOnly { out += "#EXT-X-I-FRAMES-ONLY\n" }
        if let start = playlist.start { out += try render(start) }
        if let serverControl = playlist.serverControl {
            var attributes = ReferenceAttributeWriter()
            try attributes.flag("CAN-BLOCK-RELOAD", serverControl.canBlockReload)
            try attributes.decimal("CAN-SKIP-UNTIL", serverControl.canSkipUntil)
            try attributes.flag("CAN-SKIP-DATERANGES", serverControl.canSkipDateRanges)
            try attributes.decimal("HOLD-BACK", serverControl.holdBack)
            try attributes.decimal("PART-HOLD-BACK", serverControl.partHoldBack)
            out += "#EXT-X-SERVER-CONTROL:\(attributes.text)\n"
        }
        if let partTarget = playlist.partTarget {
            var attributes = ReferenceAttributeWriter()
            try attributes.decimal("PART-TARGET", partTarget)
            out += "#EXT-X-PART-INF:\(attributes.text)\n"
        }
        for line in playlist.unknownHeaderTags { out += try verbatim(line) }
        if let skip = playlist.skip {
            var attributes = ReferenceAttributeWriter()
            try attributes.integer("SKIPPED-SEGMENTS", skip.skippedSegments)
            if let removed = skip.recentlyRemovedDateRanges {
                try attributes.quoted("RECENTLY-REMOVED-DATERANGES", removed.joined(separator: "\t"))
            }
            out += "#EXT-X-SKIP:\(attributes.text)\n"
        }
        for segment in playlist.segments {
            for tag in segment.tags { out += try render(tag) }
            out += "#EXTINF:\(segment.duration),\(try title(segment.title))\n"
            out += try uriLine(segment.uri)
        }
        for tag in playlist.trailingTags { out += try render(tag) }
        if playlist.endList { out += "#EXT-X-ENDLIST\n" }
        return out
    }

    /// One `EXT-X-DATERANGE` line (with its newline), attributes in the fixed order of this function.
    static func render(_ range: DateRange) throws(RenderError) -> String {
        var a = ReferenceAttributeWriter()
        try a.quoted("ID", range.id)
        try a.quoted("CLASS", range.classAttribute)
        try a.date("START-DATE", range.startDate)
        if let cue = range.cue { try a.quoted("CUE", cue.map(\.rawValue).joined(separator: ",")) }
        try a.date("END-DATE", range.endDate)
        try a.decimal("DURATION", range.duration)
        try a.decimal("PLANNED-DURATION", range.plannedDuration)
        try a.quoted("X-ASSET-URI", range.assetURI)
        try a.quoted("X-ASSET-LIST", range.assetList)
        try a.decimal("X-RESUME-OFFSET", range.resumeOffset, signed: true)
        try a.decimal("X-PLAYOUT-LIMIT", range.playoutLimit)
        if let snap = range.snap { try a.quoted("X-SNAP", snap.map(\.rawValue).joined(separator: ",")) }
        if let restrict = range.restrict { try a.quoted("X-RESTRICT", restrict.map(\.rawValue).joined(separator: ",")) }
        if let mayVary = range.contentMayVary { try a.quoted("X-CONTENT-MAY-VARY", mayVary ? "YES" : "NO") }
        try a.quoted("X-TIMELINE-OCCUPIES", range.timelineOccupies?.rawValue)
        try a.quoted("X-TIMELINE-STYLE", range.timelineStyle?.rawValue)
        try a.decimal("X-SKIP-CONTROL-OFFSET", range.skipControlOffset)
        try a.decimal("X-SKIP-CONTROL-DURATION", range.skipControlDuration)
        try a.quoted("X-SKIP-CONTROL-LABEL-ID", range.skipControlLabelID)
        for attribute in range.clientAttributes {
            guard attribute.name.hasPrefix("X-"), attribute.name.count > 2, referenceIsAttributeName(attribute.name)
            else {
                throw .invalidClientAttributeName(attribute.name)
            }
            switch attribute.value {
            case .string(let text): try a.quoted(attribute.name, text)
            case .hex(let bytes): try a.hex(attribute.name, bytes)
            case .decimal(let number): try a.decimal(attribute.name, number, signed: true)
            }
        }
        try a.hex("SCTE35-CMD", range.scte35Command)
        try a.hex("SCTE35-OUT", range.scte35Out)
        try a.hex("SCTE35-IN", range.scte35In)
        try a.flag("END-ON-NEXT", range.endOnNext)
        return "#EXT-X-DATERANGE:\(a.text)\n"
    }

    static func render(_ tag: SegmentTag) throws(RenderError) -> String {
        switch tag {
        case .discontinuity:
            return "#EXT-X-DISCONTINUITY\n"
        case .programDateTime(let date):
            return "#EXT-X-PROGRAM-DATE-TIME:\(date.iso8601)\n"
        case .key(let key):
            var a = ReferenceAttributeWriter()
            try a.enumerated("METHOD", key.method)
            try a.quoted("URI", key.uri)
            try a.hex("IV", key.iv)
            try a.quoted("KEYFORMAT", key.keyFormat)
            try a.quoted("KEYFORMATVERSIONS", key.keyFormatVersions)
            return "#EXT-X-KEY:\(a.text)\n"
        case .map(let map):
            var a = ReferenceAttributeWriter()
            try a.quoted("URI", map.uri)
            try a.quoted("BYTERANGE", map.byteRange.map(render))
            return "#EXT-X-MAP:\(a.text)\n"
        case .byteRange(let range):
            return "#EXT-X-BYTERANGE:\(render(range))\n"
        case .gap:
            return "#EXT-X-GAP\n"
        case .bitrate(let kbps):
            return "#EXT-X-BITRATE:\(kbps)\n"
        case .dateRange(let range):
            return try render(range)
        case .part(let part):
            var a = ReferenceAttributeWriter()
            try a.decimal("DURATION", part.duration)
            try a.quoted("URI", part.uri)
            try a.flag("INDEPENDENT", part.independent)
            try a.quoted("BYTERANGE", part.byteRange.map(render))
            try a.flag("GAP", part.gap)
            return "#EXT-X-PART:\(a.text)\n"
        case .preloadHint(let hint):
            var a = ReferenceAttributeWriter()
            try a.enumerated("TYPE", hint.type.rawValue)
            try a.quoted("URI", hint.uri)
            try a.integer("BYTERANGE-START", hint.byteRangeStart)
            try a.integer("BYTERANGE-LENGTH", hint.byteRangeLength)
            return "#EXT-X-PRELOAD-HINT:\(a.text)\n"
        case .renditionReport(let report):
            var a = ReferenceAttributeWriter()
            try a.quoted("URI", report.uri)
            try a.integer("LAST-MSN", report.lastMediaSequence)
            try a.integer("LAST-PART", report.lastPart)
            return "#EXT-X-RENDITION-REPORT:\(a.text)\n"
        case .cue(.out(let duration)):
            return "#EXT-X-CUE-OUT:DURATION=\(duration)\n"
        case .cue(.cont(let elapsed, let duration)):
            return "#EXT-X-CUE-OUT-CONT:ElapsedTime=\(elapsed),Duration=\(duration)\n"
        case .cue(.in):
            return "#EXT-X-CUE-IN\n"
        case .unknown(let line):
            return try verbatim(line)
        }
    }

    private static func render(_ start: StartPoint) throws(RenderError) -> String {
        var a = ReferenceAttributeWriter()
        try a.decimal("TIME-OFFSET", start.timeOffset, signed: true)
        try a.flag("PRECISE", start.precise)
        return "#EXT-X-START:\(a.text)\n"
    }

    private static func render(_ range: ByteRange) -> String {
        range.offset.map { "\(range.length)@\($0)" } ?? "\(range.length)"
    }

    private static func title(_ text: String) throws(RenderError) -> String {
        guard !text.utf8.contains(where: { $0 == 0x0A || $0 == 0x0D }) else {
            throw .unrepresentableQuotedString(attribute: "EXTINF title", value: text)
        }
        return text
    }

    private static func uriLine(_ uri: String) throws(RenderError) -> String {
        guard !uri.isEmpty, !uri.hasPrefix("#"), !uri.utf8.contains(where: { $0 == 0x0A || $0 == 0x0D }) else {
            throw .invalidURI(uri)
        }
        return uri + "\n"
    }

    private static func verbatim(_ line: String) throws(RenderError) -> String {
        guard line.hasPrefix("#"), !line.utf8.contains(where: { $0 == 0x0A || $0 == 0x0D }) else {
            throw .invalidURI(line)
        }
        return line + "\n"
    }
}

/// Builds an attribute list (`NAME=VALUE,NAME=VALUE`) in the order attributes are added, enforcing the draft's
/// syntax: a value that cannot be represented is an error, never a broken line.
struct ReferenceAttributeWriter {
    private(set) var text = ""
    private var names: Set<String> = []

    mutating func append(_ name: String, raw value: String) throws(RenderError) {
        guard referenceIsAttributeName(name) else { throw .invalidAttributeName(name) }
        guard names.insert(name).inserted else { throw .duplicateAttribute(name) }
        if !text.isEmpty { text += "," }
        text += name
        text += "="
        text += value
    }

    mutating func quoted(_ name: String, _ value: String?) throws(RenderError) {
        guard let value else { return }
        try append(name, raw: try referenceQuote(value, attribute: name))
    }

    mutating func enumerated(_ name: String, _ value: String?) throws(RenderError) {
        guard let value else { return }
        guard !value.isEmpty,
            value.utf8.allSatisfy({ $0 > 0x20 && $0 != UInt8(ascii: ",") && $0 != UInt8(ascii: "\"") && $0 < 0x7F })
        else { throw .invalidEnumeratedString(attribute: name, value: value) }
        try append(name, raw: value)
    }

    mutating func integer(_ name: String, _ value: (some BinaryInteger)?) throws(RenderError) {
        guard let value else { return }
        guard value >= 0 else { throw .negativeInteger(attribute: name) }
        try append(name, raw: String(value))
    }

    mutating func decimal(_ name: String, _ value: DecimalNumber?, signed: Bool = false) throws(RenderError) {
        guard let value else { return }
        guard signed || value.mantissa >= 0 else { throw .negativeDecimal(attribute: name, value: value.description) }
        try append(name, raw: value.description)
    }

    mutating func date(_ name: String, _ value: Timestamp?) throws(RenderError) {
        guard let value else { return }
        try append(name, raw: "\"" + value.iso8601 + "\"")
    }

    mutating func flag(_ name: String, _ value: Bool, when expected: Bool = true) throws(RenderError) {
        guard value == expected else { return }
        try append(name, raw: expected ? "YES" : "NO")
    }

    mutating func yesNo(_ name: String, _ value: Bool?) throws(RenderError) {
        guard let value else { return }
        try append(name, raw: value ? "YES" : "NO")
    }

    mutating func hex(_ name: String, _ value: HexBytes?) throws(RenderError) {
        guard let value else { return }
        guard !value.bytes.isEmpty else { throw .emptyHex(attribute: name) }
        try append(name, raw: value.description)
    }
}

/// `"value"`, refusing what a quoted string cannot hold: CR, LF and `"`.
func referenceQuote(_ value: String, attribute: String) throws(RenderError) -> String {
    guard !value.utf8.contains(where: { $0 == 0x0A || $0 == 0x0D || $0 == 0x22 }) else {
        throw .unrepresentableQuotedString(attribute: attribute, value: value)
    }
    return "\"" + value + "\""
}

/// `[A-Z0-9-]+` (§4.2).
func referenceIsAttributeName(_ name: String) -> Bool {
    !name.isEmpty
        && name.utf8.allSatisfy { ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == UInt8(ascii: "-") }
}
