import Schedule

/// The request target of a media playlist as the paths before the router read it: `/channels/{channel}/{rendition}.m3u8`
/// in its plain form, and its query.
enum MediaPlaylistTarget {
    /// The path and its query (nil without `?`).
    static func split(_ path: String) -> (String, Substring?) {
        guard let mark = path.utf8.firstIndex(of: UInt8(ascii: "?")) else { return (path, nil) }
        return (String(path[..<mark]), path[path.utf8.index(after: mark)...])
    }

    /// `/channels/{channel}/{rendition}.m3u8` split, when the path is exactly that plain form (no query, no `%`,
    /// nothing empty, not the multivariant playlist).
    static func mediaPlaylistPath(_ path: String) -> (channel: ChannelID, rendition: Identifier)? {
        let prefix = "/channels/"
        guard path.hasPrefix(prefix), path.hasSuffix(".m3u8"), path.utf8.count <= 200 else { return nil }
        let rest = path.utf8.dropFirst(prefix.utf8.count)
        guard !rest.contains(UInt8(ascii: "?")), !rest.contains(UInt8(ascii: "%")),
            let slash = rest.firstIndex(of: UInt8(ascii: "/"))
        else { return nil }
        let channel = Substring(rest[rest.startIndex..<slash])
        let file = Substring(rest[rest.index(after: slash)...])
        guard !channel.isEmpty, !file.utf8.contains(UInt8(ascii: "/")), !file.utf8.elementsEqual("master.m3u8".utf8)
        else { return nil }
        let rendition = file.dropLast(5)
        // A segment that is no id names no channel: the router answers it (404).
        guard let id = ChannelID(stored: channel), let name = Identifier(stored: rendition) else { return nil }
        return (id, name)
    }
}
