/// Writes big-endian bit fields, the mirror of `BitReader`: each field is written most significant bit first, and
/// a field wider than its value keeps only the low bits (as the standard's fields do: a PTS wraps at 33 bits).
struct BitWriter {
    private(set) var bytes: [UInt8] = []
    private var bit = 0

    /// The low `count` bits of `value` (up to 64), most significant first.
    mutating func bits(_ count: Int, _ value: UInt64) {
        precondition((0...64).contains(count), "a field is 0 to 64 bits")
        for index in stride(from: count - 1, through: 0, by: -1) {
            if bit % 8 == 0 { bytes.append(0) }
            let one = UInt8(truncatingIfNeeded: value >> UInt64(index)) & 1
            bytes[bytes.count - 1] |= one << (7 - UInt8(bit % 8))
            bit += 1
        }
    }

    /// A one-bit flag.
    mutating func flag(_ value: Bool) {
        bits(1, value ? 1 : 0)
    }

    /// `count` reserved bits, all set to 1 as SCTE 35 section 9.2 asks.
    mutating func reserved(_ count: Int) {
        bits(count, UInt64.max)
    }

    /// Whole bytes; the writer must be byte-aligned.
    mutating func bytes(_ values: some Sequence<UInt8>) {
        precondition(bit % 8 == 0, "bytes are written on a byte boundary")
        bytes.append(contentsOf: values)
        bit = bytes.count * 8
    }
}
