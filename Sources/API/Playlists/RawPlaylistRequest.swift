import NIOCore

/// A player's media playlist request read from raw bytes (``PlaylistRawPath``), strictly: only the forms it reads
/// completely, `GET|HEAD /channels/...[?query] HTTP/1.1`, header lines of a token, a colon and visible ASCII, no body
/// (`Content-Length`, `Transfer-Encoding`, `Expect` or `Upgrade`), no `Connection` other than `keep-alive`, at most 100
/// fields in `maxHeadBytes`. Anything this path would not answer exactly as the codec and the router would is
/// ``Parsed/other``.
struct RawPlaylistRequest: Equatable {
    var head: Bool
    /// The request target as sent (path and query).
    var target: String
    var origin: Bool
    /// Its bytes, to the end of the blank line.
    var length: Int
    /// Its `X-Forwarded-For` values, in order (read only from a trusted proxy: ``TrustedProxies``).
    var forwardedFor: [Substring] = []

    enum Parsed: Equatable {
        /// Nothing that rules it out yet, and not all of the head.
        case incomplete
        /// Not a request taken here: the codec reads it.
        case other
        case request(RawPlaylistRequest)
    }

    /// Reads the request at the front of `buffer`, strictly: anything this path would not answer exactly as the
    /// codec and the router would is `.other`.
    static func parse(_ buffer: ByteBuffer, maxHeadBytes: Int) -> Parsed {
        buffer.withUnsafeReadableBytes { parse($0, maxHeadBytes: maxHeadBytes) }
    }

    private static let getPrefix = Array("GET /channels/".utf8)
    private static let headPrefix = Array("HEAD /channels/".utf8)
    private static let version = Array(" HTTP/1.1\r\n".utf8)

    static func parse(_ bytes: UnsafeRawBufferPointer, maxHeadBytes: Int) -> Parsed {
        let count = bytes.count
        // The method and the start of the path, ruled out from the first bytes (a command goes up at once).
        let head: Bool
        if startsWith(bytes, getPrefix) {
            head = false
        } else if startsWith(bytes, headPrefix) {
            head = true
        } else {
            let could = couldStart(bytes, getPrefix) || couldStart(bytes, headPrefix)
            return could ? .incomplete : .other
        }
        // The whole head must be there (up to the blank line), within the limit; else the codec decides (431).
        let limit = min(count, maxHeadBytes)
        let end: Int
        switch headEnd(bytes, upTo: limit) {
        case .at(let offset): end = offset
        case .bareLineBreak: return .other
        case .notYet: return count >= maxHeadBytes ? .other : .incomplete
        }
        // Request line: the target is visible ASCII up to a single space, then exactly HTTP/1.1.
        let targetStart = head ? 5 : 4
        var index = targetStart
        while index < end, bytes[index] > 0x20, bytes[index] < 0x7F { index += 1 }
        guard index + version.count <= end + 2, matches(bytes, at: index, version) else { return .other }
        let target = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[targetStart..<index]), as: UTF8.self)
        index += version.count
        // Header lines: `name: value` CRLF, a token name, visible ASCII, spaces and tabs in the value; no folding.
        var origin = false
        var forwardedFor: [Substring] = []
        var fields = 0
        while index < end {
            fields += 1
            guard fields <= 100 else { return .other }
            let lineStart = index
            while index < end, isToken(bytes[index]) { index += 1 }
            guard index > lineStart, index < end, bytes[index] == UInt8(ascii: ":") else { return .other }
            let nameEnd = index
            index += 1
            while index < end, bytes[index] == 0x20 || bytes[index] == 0x09 { index += 1 }
            let valueStart = index
            while index < end, bytes[index] == 0x09 || (bytes[index] >= 0x20 && bytes[index] < 0x7F) { index += 1 }
            guard bytes[index] == 0x0D, bytes[index + 1] == 0x0A else { return .other }
            var valueEnd = index
            while valueEnd > valueStart, bytes[valueEnd - 1] == 0x20 || bytes[valueEnd - 1] == 0x09 { valueEnd -= 1 }
            let name = UnsafeRawBufferPointer(rebasing: bytes[lineStart..<nameEnd])
            if equalsLowercased(name, "origin") {
                origin = true
            } else if equalsLowercased(name, "x-forwarded-for") {
                forwardedFor.append(
                    Substring(
                        decoding: UnsafeRawBufferPointer(rebasing: bytes[valueStart..<valueEnd]), as: UTF8.self))
            } else if equalsLowercased(name, "connection") {
                // `keep-alive` only: `close` and `upgrade` are the codec's to honour.
                guard equalsLowercased(UnsafeRawBufferPointer(rebasing: bytes[valueStart..<valueEnd]), "keep-alive")
                else { return .other }
            } else if equalsLowercased(name, "content-length") || equalsLowercased(name, "transfer-encoding")
                || equalsLowercased(name, "expect") || equalsLowercased(name, "upgrade")
                || equalsLowercased(name, "proxy-connection")
            {
                // A body, or what llhttp reads as connection handling (it takes Proxy-Connection as Connection).
                return .other
            }
            index += 2
        }
        return .request(
            RawPlaylistRequest(
                head: head, target: target, origin: origin, length: end + 4, forwardedFor: forwardedFor))
    }

    enum HeadEnd: Equatable {
        /// The blank line (`\r\n\r\n`) that ends the head starts at this offset.
        case at(Int)
        case notYet
        /// A CR or LF that is not part of a CRLF: the codec reads such a head, not this path.
        case bareLineBreak
    }

    /// Where the head ends, reading at most `limit` bytes.
    static func headEnd(_ bytes: UnsafeRawBufferPointer, upTo limit: Int) -> HeadEnd {
        var index = 0
        while index < limit {
            switch bytes[index] {
            case 0x0A:
                return .bareLineBreak  // a CR's LF is stepped over below
            case 0x0D:
                guard index + 1 < limit else { return .notYet }
                guard bytes[index + 1] == 0x0A else { return .bareLineBreak }
                if index + 3 < limit, bytes[index + 2] == 0x0D, bytes[index + 3] == 0x0A { return .at(index) }
                index += 2
            default:
                index += 1
            }
        }
        return .notYet
    }

    private static func startsWith(_ bytes: UnsafeRawBufferPointer, _ prefix: [UInt8]) -> Bool {
        bytes.count >= prefix.count && matches(bytes, at: 0, prefix)
    }

    /// Whether the bytes so far are the beginning of `prefix`.
    private static func couldStart(_ bytes: UnsafeRawBufferPointer, _ prefix: [UInt8]) -> Bool {
        bytes.count < prefix.count && zip(bytes, prefix).allSatisfy { $0 == $1 }
    }

    private static func matches(_ bytes: UnsafeRawBufferPointer, at offset: Int, _ expected: [UInt8]) -> Bool {
        guard offset + expected.count <= bytes.count else { return false }
        for (index, byte) in expected.enumerated() where bytes[offset + index] != byte { return false }
        return true
    }

    private static func equalsLowercased(_ bytes: UnsafeRawBufferPointer, _ lowercase: StaticString) -> Bool {
        guard bytes.count == lowercase.utf8CodeUnitCount else { return false }
        let expected = UnsafeRawBufferPointer(start: lowercase.utf8Start, count: lowercase.utf8CodeUnitCount)
        for index in 0..<bytes.count {
            var byte = bytes[index]
            if byte >= 0x41, byte <= 0x5A { byte |= 0x20 }
            if byte != expected[index] { return false }
        }
        return true
    }

    /// RFC 9110 tchar.
    private static func isToken(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
            UInt8(ascii: "'"),
            UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "^"),
            UInt8(ascii: "_"),
            UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            true
        default: false
        }
    }
}
