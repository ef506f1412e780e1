import Crypto

/// Lower-case hex SHA-256 of the UTF-8 bytes of `text`.
package func sha256Hex(_ text: String) -> String {
    sha256Hex(Array(text.utf8))
}

package func sha256Hex(_ bytes: [UInt8]) -> String {
    SHA256.hash(data: bytes).map { byte in
        let hex = String(byte, radix: 16)
        return byte < 16 ? "0" + hex : hex
    }.joined()
}
