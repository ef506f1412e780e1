/// Renders playlists to text, deterministically to the byte: fixed tag and attribute order, `\n` line endings,
/// numbers written from integers, dates in UTC with milliseconds.
public enum PlaylistRenderer {
    /// The playlist's text: the bytes of `renderBytes(_:)` as a `String`.
    public static func render(_ playlist: MediaPlaylist) throws(RenderError) -> String {
        try withRendered(playlist) { String(decoding: $0, as: UTF8.self) }
    }

    public static func render(_ playlist: MultivariantPlaylist) throws(RenderError) -> String {
        var out = "#EXTM3U\n"
        if let version = playlist.version { out += "#EXT-X-VERSION:\(version)\n" }
        if playlist.independentSegments { out += "#EXT-X-INDEPENDENT-SEGMENTS\n" }
        if let start = playlist.start { out += try render(start) }
        for line in playlist.unknownTags { out += try verbatim(line) }
        for rendition in playlist.media {
            var a = AttributeWriter()
            try a.enumerated("TYPE", rendition.type.rawValue)
            try a.quoted("GROUP-ID", rendition.groupID)
            try a.quoted("LANGUAGE", rendition.language)
            try a.quoted("ASSOC-LANGUAGE", rendition.associatedLanguage)
            try a.quoted("NAME", rendition.name)
            try a.flag("DEFAULT", rendition.isDefault)
            try a.flag("AUTOSELECT", rendition.autoselect)
            try a.flag("FORCED", rendition.forced)
            try a.quoted("INSTREAM-ID", rendition.instreamID)
            try a.quoted("CHARACTERISTICS", rendition.characteristics)
            try a.quoted("CHANNELS", rendition.channels)
            try a.quoted("URI", rendition.uri)
            out += "#EXT-X-MEDIA:\(a.text)\n"
        }
        for variant in playlist.variants {
            out += "#EXT-X-STREAM-INF:\(try variantAttributes(variant, iFrame: false))\n"
            out += try uriLine(variant.uri)
        }
        for variant in playlist.iFrameVariants {
            out += "#EXT-X-I-FRAME-STREAM-INF:\(try variantAttributes(variant, iFrame: true))\n"
        }
        return out
    }

    /// One `EXT-X-DATERANGE` line (with its newline), attributes in a fixed order.
    public static func render(_ range: DateRange) throws(RenderError) -> String {
        String(decoding: try renderBytes(range), as: UTF8.self)
    }

    private static func render(_ start: StartPoint) throws(RenderError) -> String {
        var a = AttributeWriter()
        try a.decimal("TIME-OFFSET", start.timeOffset, signed: true)
        try a.flag("PRECISE", start.precise)
        return "#EXT-X-START:\(a.text)\n"
    }

    private static func variantAttributes(_ variant: Variant, iFrame: Bool) throws(RenderError) -> String {
        var a = AttributeWriter()
        try a.integer("BANDWIDTH", variant.bandwidth)
        try a.integer("AVERAGE-BANDWIDTH", variant.averageBandwidth)
        if !variant.codecs.isEmpty { try a.quoted("CODECS", variant.codecs.joined(separator: ",")) }
        if let resolution = variant.resolution { try a.append("RESOLUTION", raw: resolution.description) }
        if !iFrame { try a.decimal("FRAME-RATE", variant.frameRate) }
        try a.enumerated("HDCP-LEVEL", variant.hdcpLevel)
        try a.enumerated("VIDEO-RANGE", variant.videoRange?.rawValue)
        if !iFrame {
            try a.quoted("AUDIO", variant.audio)
        }
        try a.quoted("VIDEO", variant.video)
        if !iFrame {
            try a.quoted("SUBTITLES", variant.subtitles)
            if variant.closedCaptionsNone {
                try a.append("CLOSED-CAPTIONS", raw: "NONE")
            } else {
                try a.quoted("CLOSED-CAPTIONS", variant.closedCaptions)
            }
        } else {
            try a.quoted("URI", variant.uri)
        }
        return a.text
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
