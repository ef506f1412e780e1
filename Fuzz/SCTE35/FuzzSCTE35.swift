// libFuzzer entry point for the SCTE-35 parser. Built by scripts/fuzz/fuzz-scte35.sh with
// `swiftc -sanitize=fuzzer,address` together with Sources/SCTE35; not part of the SwiftPM build.
// Any input must give a section or an SCTE35Error: a trap, overflow or out-of-bounds read is a crash.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSCTE35(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    if let section = try? SpliceInfoSection(bytes: bytes) {
        // A section that parses must be self-consistent: its bytes are the input and its cues are computable.
        precondition(section.bytes == bytes)
        _ = section.cues
        // A section that reads as a Cueline signal is written back to one that reads as the same signal.
        if let signal = SegmentationSignal(section: section) {
            let again = try? SpliceInfoSection(bytes: signal.encoded())
            precondition(again.flatMap { SegmentationSignal(section: $0) } == signal)
        }
    }
    // The text door too: the same bytes as hex and as a string.
    _ = try? SpliceInfoSection(text: String(decoding: bytes, as: UTF8.self))
    // The same bytes with section_length and CRC_32 made to agree, so the field parsers see every input.
    if bytes.count >= 7 && bytes.count <= 4098 {
        var fixed = bytes
        let length = fixed.count - 3
        fixed[1] = (fixed[1] & 0xF0) | UInt8(length >> 8)
        fixed[2] = UInt8(length & 0xFF)
        let crc = CRC32MPEG2.checksum(fixed.dropLast(4))
        fixed.replaceSubrange((fixed.count - 4)..., with: [UInt8(crc >> 24), UInt8(crc >> 16 & 0xFF), UInt8(crc >> 8 & 0xFF), UInt8(crc & 0xFF)])
        _ = try? SpliceInfoSection(bytes: fixed).cues
    }
    return 0
}
