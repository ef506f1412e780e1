extension Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    /// Standard base64 with padding (RFC 4648 section 4): what `decode` reads back.
    static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        for chunk in stride(from: 0, to: bytes.count, by: 3) {
            let count = min(3, bytes.count - chunk)
            var group: UInt32 = 0
            for offset in 0..<3 {
                group = group << 8 | UInt32(offset < count ? bytes[chunk + offset] : 0)
            }
            for sextet in 0..<4 {
                if sextet <= count {
                    out.append(alphabet[Int(group >> UInt32(18 - 6 * sextet) & 0x3F)])
                } else {
                    out.append(UInt8(ascii: "="))
                }
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
