import CLibCrypto
import HLS

/// Lower-case hex SHA-256 of the UTF-8 bytes of `text`.
package func sha256Hex(_ text: String) -> String {
    sha256Hex(Array(text.utf8))
}

package func sha256Hex(_ bytes: [UInt8]) -> String {
    hexDigits(sha256(bytes))
}

/// SHA-256 of `bytes` (32 bytes), by OpenSSL's libcrypto: the library libpq already links, rather than a second
/// copy of BoringSSL built from source (swift-crypto), minutes of a fresh build on 2 cores for two functions.
package func sha256(_ bytes: [UInt8]) -> [UInt8] {
    var digest = [UInt8](repeating: 0, count: Int(SHA256_DIGEST_LENGTH))
    let done = bytes.withUnsafeBufferPointer { input in
        digest.withUnsafeMutableBufferPointer { output in
            SHA256(input.baseAddress, input.count, output.baseAddress) != nil
        }
    }
    // libcrypto reports a failure (no provider for SHA-256) as NULL: the digest would be zeros, in the hash chain.
    precondition(done, "SHA-256 failed in libcrypto")
    return digest
}

/// HMAC-SHA256 of `message` under `key` (32 bytes).
package func hmacSHA256(key: [UInt8], message: [UInt8]) -> [UInt8] {
    var mac = [UInt8](repeating: 0, count: Int(SHA256_DIGEST_LENGTH))
    var length: UInt32 = 0
    key.withUnsafeBufferPointer { key in
        message.withUnsafeBufferPointer { message in
            mac.withUnsafeMutableBufferPointer { output in
                // A key or message of no bytes may have no base address; libcrypto takes any non-null pointer then.
                let empty: [UInt8] = [0]
                empty.withUnsafeBufferPointer { placeholder in
                    _ = HMAC(
                        EVP_sha256(), key.baseAddress ?? placeholder.baseAddress, Int32(key.count),
                        message.baseAddress ?? placeholder.baseAddress, message.count, output.baseAddress, &length)
                }
            }
        }
    }
    precondition(length == SHA256_DIGEST_LENGTH, "HMAC-SHA256 gave \(length) bytes")
    return mac
}
