import Crypto
import HLS

/// Lower-case hex SHA-256 of the UTF-8 bytes of `text`.
package func sha256Hex(_ text: String) -> String {
    sha256Hex(Array(text.utf8))
}

package func sha256Hex(_ bytes: [UInt8]) -> String {
    hexDigits(SHA256.hash(data: bytes))
}
