/// Reads big-endian bit fields from a byte range; every read names its field so a short section says where.
struct BitReader {
    let bytes: [UInt8]
    private let end: Int
    private var bit: Int

    init(_ bytes: [UInt8]) {
        self.init(bytes, from: 0, to: bytes.count)
    }

    init(_ bytes: [UInt8], from start: Int, to end: Int) {
        self.bytes = bytes
        self.end = end
        bit = start * 8
    }

    var byteOffset: Int { bit / 8 }
    var remainingBytes: Int { end - (bit + 7) / 8 }

    /// Up to 64 bits, most significant first.
    mutating func bits(_ count: Int, _ field: String) throws(SCTE35Error) -> UInt64 {
        guard bit + count <= end * 8 else { throw .truncated(field: field, offset: byteOffset) }
        var value: UInt64 = 0
        for _ in 0..<count {
            let byte = bytes[bit >> 3]
            value = value << 1 | UInt64((byte >> (7 - UInt8(bit & 7))) & 1)
            bit += 1
        }
        return value
    }

    mutating func bytes(_ count: Int, _ field: String) throws(SCTE35Error) -> [UInt8] {
        guard bit % 8 == 0, byteOffset + count <= end else { throw .truncated(field: field, offset: byteOffset) }
        defer { bit += count * 8 }
        return Array(bytes[byteOffset..<byteOffset + count])
    }

    mutating func seek(byte: Int) {
        bit = byte * 8
    }
}

/// CRC-32/MPEG-2: polynomial 0x04C11DB7, initial 0xFFFFFFFF, no reflection, no final XOR.
public enum CRC32MPEG2 {
    private static let table: [UInt32] = (0..<256).map { index in
        var crc = UInt32(index) << 24
        for _ in 0..<8 { crc = crc & 0x8000_0000 != 0 ? crc << 1 ^ 0x04C1_1DB7 : crc << 1 }
        return crc
    }

    public static func checksum(_ bytes: some Sequence<UInt8>) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes { crc = crc << 8 ^ table[Int((crc >> 24) ^ UInt32(byte))] }
        return crc
    }
}

/// Standard base64 with padding (RFC 4648 section 4), strict: anything else is nil.
enum Base64 {
    static func decode(_ text: String) -> [UInt8]? {
        let scalars = Array(text.utf8)
        guard !scalars.isEmpty, scalars.count % 4 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(scalars.count / 4 * 3)
        for chunk in stride(from: 0, to: scalars.count, by: 4) {
            var values: [UInt32] = []
            var padding = 0
            for (offset, character) in scalars[chunk..<chunk + 4].enumerated() {
                if character == UInt8(ascii: "=") {
                    // Padding only at the end of the last quantum, at most two.
                    guard chunk + 4 == scalars.count, offset >= 2 else { return nil }
                    padding += 1
                    values.append(0)
                    continue
                }
                guard padding == 0, let value = sextet(character) else { return nil }
                values.append(value)
            }
            let group = values[0] << 18 | values[1] << 12 | values[2] << 6 | values[3]
            out.append(UInt8(group >> 16 & 0xFF))
            if padding < 2 { out.append(UInt8(group >> 8 & 0xFF)) }
            if padding < 1 { out.append(UInt8(group & 0xFF)) }
        }
        return out
    }

    private static func sextet(_ c: UInt8) -> UInt32? {
        switch c {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): return UInt32(c - UInt8(ascii: "A"))
        case UInt8(ascii: "a")...UInt8(ascii: "z"): return UInt32(c - UInt8(ascii: "a") + 26)
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return UInt32(c - UInt8(ascii: "0") + 52)
        case UInt8(ascii: "+"): return 62
        case UInt8(ascii: "/"): return 63
        default: return nil
        }
    }
}
