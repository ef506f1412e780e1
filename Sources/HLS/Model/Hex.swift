/// `bytes` as two hexadecimal digits each, lower case unless `uppercase`, without a prefix: the one hex encoder
/// outside the renderer's byte writer (SHA-256 digests, HMAC signatures, token secrets, `HexBytes`).
public func hexDigits(_ bytes: some Sequence<UInt8>, uppercase: Bool = false) -> String {
    let digits = Array((uppercase ? "0123456789ABCDEF" : "0123456789abcdef").utf8)
    var out: [UInt8] = []
    out.reserveCapacity(bytes.underestimatedCount * 2)
    for byte in bytes {
        out.append(digits[Int(byte >> 4)])
        out.append(digits[Int(byte & 0x0F)])
    }
    return String(decoding: out, as: UTF8.self)
}
