// The media playlist renderer: writes the playlist's bytes into one buffer sized from the playlist, numbers and
// dates digit by digit, each value checked while it is copied. Same bytes and same errors, in the same order, as the
// String renderer it replaced (the reference in Tests/HLSTests/ReferenceRenderer.swift, compared on generated
// playlists by RendererEquivalenceTests).

extension PlaylistRenderer {
    /// The playlist's bytes, exactly the UTF-8 of `render(_:)`: what a server sends.
    public static func renderBytes(_ playlist: MediaPlaylist) throws(RenderError) -> [UInt8] {
        try withRendered(playlist) { Array($0) }
    }

    /// Appends the playlist's bytes to `buffer`.
    public static func render(_ playlist: MediaPlaylist, into buffer: inout [UInt8]) throws(RenderError) {
        try withRendered(playlist) { buffer.append(contentsOf: $0) }
    }

    /// One `EXT-X-DATERANGE` line, with its newline, as bytes.
    public static func renderBytes(_ range: DateRange) throws(RenderError) -> [UInt8] {
        try (range.storage.rendered ?? renderResult(range.storage.fields)).get()
    }

    /// A date range's line, rendered and checked once when the range is constructed (`DateRange.Storage`).
    static func renderResult(_ fields: borrowing DateRange.Fields) -> Result<[UInt8], RenderError> {
        do throws(RenderError) {
            return .success(
                try withWriter(estimate: estimate(fields), write: { write(fields, to: &$0) }, body: { Array($0) }))
        } catch {
            return .failure(error)
        }
    }

    /// Renders into temporary memory (on the stack when it fits) and hands the bytes to `body`, which copies them
    /// once into what it returns: the only heap allocation of a render.
    static func withRendered<R>(_ playlist: MediaPlaylist, _ body: (UnsafeBufferPointer<UInt8>) -> R)
        throws(RenderError) -> R
    {
        try withWriter(
            estimate: estimate(playlist), write: { write(playlist, to: &$0) },
            body: body)
    }

    static func withWriter<R>(
        estimate: Int, write: (inout ByteWriter) -> Void, body: (UnsafeBufferPointer<UInt8>) -> R
    ) throws(RenderError) -> R {
        var capacity = estimate
        while true {
            let result: Result<R, RenderError>? = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: capacity) {
                memory in
                var writer = ByteWriter(memory)
                write(&writer)
                if let error = writer.error { return .failure(error) }
                return writer.overflowed ? nil : .success(body(writer.written))
            }
            if let result { return try result.get() }
            capacity *= 2
        }
    }

    // MARK: Media playlist

    static func write(_ playlist: MediaPlaylist, to w: inout ByteWriter) {
        guard playlist.targetDuration >= 1 else { return w.fail(.invalidTargetDuration(playlist.targetDuration)) }
        w.ascii("#EXTM3U\n")
        if let version = playlist.version {
            w.ascii("#EXT-X-VERSION:")
            w.integer(version)
            w.byte(0x0A)
        }
        w.ascii("#EXT-X-TARGETDURATION:")
        w.integer(playlist.targetDuration)
        w.ascii("\n#EXT-X-MEDIA-SEQUENCE:")
        w.integer(playlist.mediaSequence)
        w.byte(0x0A)
        if playlist.discontinuitySequence != 0 {
            w.ascii("#EXT-X-DISCONTINUITY-SEQUENCE:")
            w.integer(playlist.discontinuitySequence)
            w.byte(0x0A)
        }
        if let type = playlist.playlistType {
            switch type {
            case .event: w.ascii("#EXT-X-PLAYLIST-TYPE:EVENT\n")
            case .vod: w.ascii("#EXT-X-PLAYLIST-TYPE:VOD\n")
            }
        }
        if playlist.independentSegments { w.ascii("#EXT-X-INDEPENDENT-SEGMENTS\n") }
        if playlist.iFramesOnly { w.ascii("#EXT-X-I-FRAMES-ONLY\n") }
        if let start = playlist.start {
            var listed = false
            w.ascii("#EXT-X-START:")
            w.attribute("TIME-OFFSET", &listed)
            w.decimal(start.timeOffset)
            w.flag("PRECISE", start.precise, &listed)
            w.byte(0x0A)
        }
        if let control = playlist.serverControl {
            var listed = false
            w.ascii("#EXT-X-SERVER-CONTROL:")
            w.flag("CAN-BLOCK-RELOAD", control.canBlockReload, &listed)
            w.decimal("CAN-SKIP-UNTIL", control.canSkipUntil, &listed)
            w.flag("CAN-SKIP-DATERANGES", control.canSkipDateRanges, &listed)
            w.decimal("HOLD-BACK", control.holdBack, &listed)
            w.decimal("PART-HOLD-BACK", control.partHoldBack, &listed)
            w.byte(0x0A)
        }
        if let partTarget = playlist.partTarget {
            var listed = false
            w.ascii("#EXT-X-PART-INF:")
            w.decimal("PART-TARGET", partTarget, &listed)
            w.byte(0x0A)
        }
        for line in playlist.unknownHeaderTags { w.verbatim(line) }
        if let skip = playlist.skip {
            var listed = false
            w.ascii("#EXT-X-SKIP:")
            w.integer("SKIPPED-SEGMENTS", skip.skippedSegments, &listed)
            if let removed = skip.recentlyRemovedDateRanges {
                w.attribute("RECENTLY-REMOVED-DATERANGES", &listed)
                w.byte(0x22)
                var bad = false
                for (index, id) in removed.enumerated() {
                    if index > 0 { w.byte(0x09) }
                    bad = w.line(id) || id.utf8.contains(0x22) || bad
                }
                w.byte(0x22)
                if bad {
                    return w.fail(
                        .unrepresentableQuotedString(
                            attribute: "RECENTLY-REMOVED-DATERANGES", value: removed.joined(separator: "\t")))
                }
            }
            w.byte(0x0A)
        }
        // Segments, tags and date ranges are borrowed, never copied: a copy of a date range retains a dozen
        // references, and copying them cost a quarter of a render.
        playlist.segments.withUnsafeBufferPointer { segments in
            for index in segments.indices { write(segments[index], to: &w) }
        }
        write(playlist.trailingTags, to: &w)
        if playlist.endList { w.ascii("#EXT-X-ENDLIST\n") }
    }

    static func write(_ segment: borrowing Segment, to w: inout ByteWriter) {
        write(segment.tags, to: &w)
        w.ascii("#EXTINF:")
        w.decimal(segment.duration)
        w.byte(UInt8(ascii: ","))
        if w.line(segment.title) {
            return w.fail(.unrepresentableQuotedString(attribute: "EXTINF title", value: segment.title))
        }
        w.byte(0x0A)
        w.uriLine(segment.uri)
    }

    static func write(_ tags: borrowing [SegmentTag], to w: inout ByteWriter) {
        // In place: `tags[index]` would copy the tag out of the array first.
        tags.withUnsafeBufferPointer { tags in
            for index in tags.indices { write(tags[index], to: &w) }
        }
    }

    static func write(_ tag: borrowing SegmentTag, to w: inout ByteWriter) {
        var listed = false
        switch tag {
        case .discontinuity:
            w.ascii("#EXT-X-DISCONTINUITY\n")
        case .programDateTime(let date):
            w.ascii("#EXT-X-PROGRAM-DATE-TIME:")
            w.timestamp(date)
            w.byte(0x0A)
        case .key(let key):
            w.ascii("#EXT-X-KEY:")
            w.enumerated("METHOD", key.method, &listed)
            w.quoted("URI", key.uri, &listed)
            w.hex("IV", key.iv, &listed)
            w.quoted("KEYFORMAT", key.keyFormat, &listed)
            w.quoted("KEYFORMATVERSIONS", key.keyFormatVersions, &listed)
            w.byte(0x0A)
        case .map(let map):
            w.ascii("#EXT-X-MAP:")
            w.quoted("URI", map.uri, &listed)
            if let range = map.byteRange {
                w.attribute("BYTERANGE", &listed)
                w.byte(0x22)
                w.byteRange(range)
                w.byte(0x22)
            }
            w.byte(0x0A)
        case .byteRange(let range):
            w.ascii("#EXT-X-BYTERANGE:")
            w.byteRange(range)
            w.byte(0x0A)
        case .gap:
            w.ascii("#EXT-X-GAP\n")
        case .bitrate(let kbps):
            w.ascii("#EXT-X-BITRATE:")
            w.integer(kbps)
            w.byte(0x0A)
        case .dateRange(let range):
            write(range, to: &w)
        case .part(let part):
            w.ascii("#EXT-X-PART:")
            w.decimal("DURATION", part.duration, &listed)
            w.quoted("URI", part.uri, &listed)
            w.flag("INDEPENDENT", part.independent, &listed)
            if let range = part.byteRange {
                w.attribute("BYTERANGE", &listed)
                w.byte(0x22)
                w.byteRange(range)
                w.byte(0x22)
            }
            w.flag("GAP", part.gap, &listed)
            w.byte(0x0A)
        case .preloadHint(let hint):
            w.ascii("#EXT-X-PRELOAD-HINT:")
            w.attribute("TYPE", &listed)
            switch hint.type {
            case .part: w.ascii("PART")
            case .map: w.ascii("MAP")
            }
            w.quoted("URI", hint.uri, &listed)
            w.integer("BYTERANGE-START", hint.byteRangeStart, &listed)
            w.integer("BYTERANGE-LENGTH", hint.byteRangeLength, &listed)
            w.byte(0x0A)
        case .renditionReport(let report):
            w.ascii("#EXT-X-RENDITION-REPORT:")
            w.quoted("URI", report.uri, &listed)
            w.integer("LAST-MSN", report.lastMediaSequence, &listed)
            w.integer("LAST-PART", report.lastPart, &listed)
            w.byte(0x0A)
        case .cue(let cue):
            w.string(cue.line)
            w.byte(0x0A)
        case .unknown(let line):
            w.verbatim(line)
        }
    }

    /// One `EXT-X-DATERANGE` line with its newline, attributes in the fixed order of the draft's table.
    static func write(_ range: borrowing DateRange, to w: inout ByteWriter) {
        switch range.storage.rendered {
        case .success(let bytes)?: bytes.withUnsafeBufferPointer { w.bytes($0) }
        case .failure(let error)?: w.fail(error)
        case nil: write(range.storage.fields, to: &w)
        }
    }

    static func write(_ range: borrowing DateRange.Fields, to w: inout ByteWriter) {
        var listed = false
        w.ascii("#EXT-X-DATERANGE:")
        w.quoted("ID", range.id, &listed)
        w.quoted("CLASS", range.classAttribute, &listed)
        if let start = range.startDate {
            w.attribute("START-DATE", &listed)
            w.byte(0x22)
            w.timestamp(start)
            w.byte(0x22)
        }
        if let cue = range.cue {
            w.attribute("CUE", &listed)
            w.byte(0x22)
            for (index, value) in cue.enumerated() {
                if index > 0 { w.byte(UInt8(ascii: ",")) }
                switch value {
                case .pre: w.ascii("PRE")
                case .post: w.ascii("POST")
                case .once: w.ascii("ONCE")
                }
            }
            w.byte(0x22)
        }
        if let end = range.endDate {
            w.attribute("END-DATE", &listed)
            w.byte(0x22)
            w.timestamp(end)
            w.byte(0x22)
        }
        w.decimal("DURATION", range.duration, &listed)
        w.decimal("PLANNED-DURATION", range.plannedDuration, &listed)
        w.quoted("X-ASSET-URI", range.assetURI, &listed)
        w.quoted("X-ASSET-LIST", range.assetList, &listed)
        if let offset = range.resumeOffset {
            w.attribute("X-RESUME-OFFSET", &listed)
            w.decimal(offset)
        }
        w.decimal("X-PLAYOUT-LIMIT", range.playoutLimit, &listed)
        if let snap = range.snap {
            w.attribute("X-SNAP", &listed)
            w.byte(0x22)
            for (index, value) in snap.enumerated() {
                if index > 0 { w.byte(UInt8(ascii: ",")) }
                switch value {
                case .out: w.ascii("OUT")
                case .in: w.ascii("IN")
                }
            }
            w.byte(0x22)
        }
        if let restrict = range.restrict {
            w.attribute("X-RESTRICT", &listed)
            w.byte(0x22)
            for (index, value) in restrict.enumerated() {
                if index > 0 { w.byte(UInt8(ascii: ",")) }
                switch value {
                case .skip: w.ascii("SKIP")
                case .jump: w.ascii("JUMP")
                }
            }
            w.byte(0x22)
        }
        if let mayVary = range.contentMayVary {
            w.attribute("X-CONTENT-MAY-VARY", &listed)
            w.ascii(mayVary ? "\"YES\"" : "\"NO\"")
        }
        if let occupies = range.timelineOccupies {
            w.attribute("X-TIMELINE-OCCUPIES", &listed)
            switch occupies {
            case .point: w.ascii("\"POINT\"")
            case .range: w.ascii("\"RANGE\"")
            }
        }
        if let style = range.timelineStyle {
            w.attribute("X-TIMELINE-STYLE", &listed)
            switch style {
            case .highlight: w.ascii("\"HIGHLIGHT\"")
            case .primary: w.ascii("\"PRIMARY\"")
            }
        }
        w.decimal("X-SKIP-CONTROL-OFFSET", range.skipControlOffset, &listed)
        w.decimal("X-SKIP-CONTROL-DURATION", range.skipControlDuration, &listed)
        w.quoted("X-SKIP-CONTROL-LABEL-ID", range.skipControlLabelID, &listed)
        if !range.clientAttributes.isEmpty { writeClientAttributes(of: range, to: &w, &listed) }
        w.hex("SCTE35-CMD", range.scte35Command, &listed)
        w.hex("SCTE35-OUT", range.scte35Out, &listed)
        w.hex("SCTE35-IN", range.scte35In, &listed)
        w.flag("END-ON-NEXT", range.endOnNext, &listed)
        w.byte(0x0A)
    }

    /// Client attributes, checked as the String renderer checked them and in its order: the name, then the value,
    /// then that no attribute of the tag already has this name. Only `X-` names can collide, so the duplicate check
    /// compares with the typed `X-` attributes present and the client attributes before it: no set, no allocation.
    private static func writeClientAttributes(
        of range: borrowing DateRange.Fields, to w: inout ByteWriter, _ listed: inout Bool
    ) {
        let attributes = range.clientAttributes
        for index in attributes.indices {
            let attribute = attributes[index]
            let name = attribute.name
            guard name.utf8.count > 2, name.utf8.starts(with: "X-".utf8), isAttributeName(name) else {
                return w.fail(.invalidClientAttributeName(name))
            }
            w.attribute(name, &listed)
            switch attribute.value {
            case .string(let text):
                if w.quoted(text) { return w.fail(.unrepresentableQuotedString(attribute: name, value: text)) }
            case .hex(let bytes):
                guard !bytes.bytes.isEmpty else { return w.fail(.emptyHex(attribute: name)) }
                w.hex(bytes)
            case .decimal(let number):
                w.decimal(number)
            }
            if typedAttributePresent(name, in: range) || attributes[..<index].contains(where: { $0.name == name }) {
                return w.fail(.duplicateAttribute(name))
            }
        }
    }

    /// Whether `range` carries the typed `X-` attribute called `name`.
    private static func typedAttributePresent(_ name: String, in range: borrowing DateRange.Fields) -> Bool {
        switch name {
        case "X-ASSET-URI": return range.assetURI != nil
        case "X-ASSET-LIST": return range.assetList != nil
        case "X-RESUME-OFFSET": return range.resumeOffset != nil
        case "X-PLAYOUT-LIMIT": return range.playoutLimit != nil
        case "X-SNAP": return range.snap != nil
        case "X-RESTRICT": return range.restrict != nil
        case "X-CONTENT-MAY-VARY": return range.contentMayVary != nil
        case "X-TIMELINE-OCCUPIES": return range.timelineOccupies != nil
        case "X-TIMELINE-STYLE": return range.timelineStyle != nil
        case "X-SKIP-CONTROL-OFFSET": return range.skipControlOffset != nil
        case "X-SKIP-CONTROL-DURATION": return range.skipControlDuration != nil
        case "X-SKIP-CONTROL-LABEL-ID": return range.skipControlLabelID != nil
        default: return false
        }
    }

    // MARK: Sizes

    /// Bytes a number, a date or a decimal can take at most (`-9223372036854775808`, a nine-digit year, a decimal
    /// with its point and leading zeros).
    private static let numberBytes = 32

    /// An upper bound of the bytes of `playlist` in the common case; a render that needs more renders again.
    static func estimate(_ playlist: MediaPlaylist) -> Int {
        var total = 512
        for line in playlist.unknownHeaderTags { total &+= line.utf8.count &+ 1 }
        if let skip = playlist.skip {
            for id in skip.recentlyRemovedDateRanges ?? [] { total &+= id.utf8.count &+ 1 }
        }
        // In place, as `write` walks them: `segments[index]` would copy each segment (and its tags) out first.
        playlist.segments.withUnsafeBufferPointer { segments in
            for index in segments.indices { total &+= estimate(segments[index]) }
        }
        playlist.trailingTags.withUnsafeBufferPointer { tags in
            for index in tags.indices { total &+= estimate(tags[index]) }
        }
        return total
    }

    private static func estimate(_ segment: borrowing Segment) -> Int {
        var total = 12 &+ numberBytes &+ segment.title.utf8.count &+ segment.uri.utf8.count
        segment.tags.withUnsafeBufferPointer { tags in
            for index in tags.indices { total &+= estimate(tags[index]) }
        }
        return total
    }

    private static func estimate(_ tag: borrowing SegmentTag) -> Int {
        switch tag {
        case .discontinuity, .gap, .byteRange, .bitrate: return 64
        case .programDateTime: return 32 &+ numberBytes
        case .key(let key):
            return 128 &+ key.method.utf8.count &+ (key.uri?.utf8.count ?? 0) &+ (key.iv?.bytes.count ?? 0) &* 2
                &+ (key.keyFormat?.utf8.count ?? 0) &+ (key.keyFormatVersions?.utf8.count ?? 0)
        case .map(let map): return 128 &+ map.uri.utf8.count
        case .part(let part): return 160 &+ part.uri.utf8.count
        case .preloadHint(let hint): return 128 &+ hint.uri.utf8.count
        case .renditionReport(let report): return 128 &+ report.uri.utf8.count
        case .unknown(let line): return 1 &+ line.utf8.count
        case .cue: return 64 &+ 2 &* numberBytes
        case .dateRange(let range): return estimate(range)
        }
    }

    /// Every attribute name, its punctuation and a number's worth of bytes for each number and date, plus the strings.
    private static func estimate(_ range: borrowing DateRange) -> Int {
        switch range.storage.rendered {
        case .success(let bytes)?: return bytes.count
        case .failure?: return 0
        case nil: return estimate(range.storage.fields)
        }
    }

    private static func estimate(_ range: borrowing DateRange.Fields) -> Int {
        var total =
            720 &+ range.id.utf8.count &+ (range.classAttribute?.utf8.count ?? 0)
            &+ (range.assetURI?.utf8.count ?? 0) &+ (range.assetList?.utf8.count ?? 0)
            &+ (range.skipControlLabelID?.utf8.count ?? 0)
            &+ ((range.cue?.count ?? 0) &+ (range.snap?.count ?? 0) &+ (range.restrict?.count ?? 0)) &* 5
            &+ ((range.scte35Command?.bytes.count ?? 0) &+ (range.scte35Out?.bytes.count ?? 0)
                &+ (range.scte35In?.bytes.count ?? 0)) &* 2
        for attribute in range.clientAttributes {
            total &+= 4 &+ numberBytes &+ attribute.name.utf8.count
            switch attribute.value {
            case .string(let text): total &+= text.utf8.count
            case .hex(let bytes): total &+= bytes.bytes.count &* 2
            case .decimal: break
            }
        }
        return total
    }
}

extension ByteWriter {
    @inline(__always)
    mutating func flag(_ name: StaticString, _ value: Bool, _ listed: inout Bool) {
        guard value else { return }
        attribute(name, &listed)
        ascii("YES")
    }

    @inline(__always)
    mutating func quoted(_ name: StaticString, _ value: String?, _ listed: inout Bool) {
        guard let value else { return }
        attribute(name, &listed)
        if quoted(value) { return fail(.unrepresentableQuotedString(attribute: "\(name)", value: value)) }
    }

    @inline(__always)
    mutating func decimal(_ name: StaticString, _ value: DecimalNumber?, _ listed: inout Bool) {
        guard let value else { return }
        guard value.mantissa >= 0 else { return fail(.negativeDecimal(attribute: "\(name)", value: value.description)) }
        attribute(name, &listed)
        decimal(value)
    }

    mutating func integer(_ name: StaticString, _ value: (some BinaryInteger)?, _ listed: inout Bool) {
        guard let value else { return }
        guard value >= 0 else { return fail(.negativeInteger(attribute: "\(name)")) }
        attribute(name, &listed)
        unsigned(UInt64(value))
    }

    mutating func hex(_ name: StaticString, _ value: HexBytes?, _ listed: inout Bool) {
        guard let value else { return }
        guard !value.bytes.isEmpty else { return fail(.emptyHex(attribute: "\(name)")) }
        attribute(name, &listed)
        hex(value)
    }

    mutating func enumerated(_ name: StaticString, _ value: String, _ listed: inout Bool) {
        guard !value.isEmpty,
            value.utf8.allSatisfy({ $0 > 0x20 && $0 != UInt8(ascii: ",") && $0 != UInt8(ascii: "\"") && $0 < 0x7F })
        else { return fail(.invalidEnumeratedString(attribute: "\(name)", value: value)) }
        attribute(name, &listed)
        string(value)
    }

    /// `length[@offset]`, as `"\(length)@\(offset)"` wrote it.
    mutating func byteRange(_ range: ByteRange) {
        integer(range.length)
        if let offset = range.offset {
            byte(UInt8(ascii: "@"))
            integer(offset)
        }
    }

    /// A URI line: not empty, not starting with `#`, no line break.
    mutating func uriLine(_ uri: String) {
        guard !uri.isEmpty, !startsWithHash(uri), !line(uri) else { return fail(.invalidURI(uri)) }
        byte(0x0A)
    }

    /// A tag kept verbatim: starts with `#`, no line break.
    mutating func verbatim(_ text: String) {
        guard startsWithHash(text), !line(text) else { return fail(.invalidURI(text)) }
        byte(0x0A)
    }
}

/// `text.hasPrefix("#")`, which compares characters: `#` followed by a combining mark is another character. Only a
/// non-ASCII byte after the `#` can extend it, so only then is the character comparison needed.
private func startsWithHash(_ text: String) -> Bool {
    var bytes = text.utf8.makeIterator()
    guard bytes.next() == UInt8(ascii: "#") else { return false }
    guard let next = bytes.next(), next >= 0x80 else { return true }
    return text.hasPrefix("#")
}
