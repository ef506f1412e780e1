/// Writes playlist text as UTF-8 into memory it does not own, digit by digit for numbers and dates: no `String`
/// is built on the way.
///
/// It never writes past `capacity`: a write that does not fit sets `overflowed` and is dropped, and the caller
/// renders again into more memory (the renderer sizes its first try from the playlist, so that is rare).
struct ByteWriter {
    private let base: UnsafeMutablePointer<UInt8>
    private let capacity: Int
    private(set) var count = 0
    private(set) var overflowed = false

    init(_ buffer: UnsafeMutableBufferPointer<UInt8>) {
        base = buffer.baseAddress!
        capacity = buffer.count
    }

    /// The bytes written so far.
    var written: UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(start: base, count: count) }

    /// Room for `n` more bytes, or false (and `overflowed`).
    @inline(__always)
    private mutating func reserve(_ n: Int) -> Bool {
        guard capacity &- count >= n else {
            overflowed = true
            return false
        }
        return true
    }

    @inline(__always)
    mutating func byte(_ value: UInt8) {
        guard reserve(1) else { return }
        base[count] = value
        count &+= 1
    }

    @inline(__always)
    mutating func bytes(_ buffer: UnsafeBufferPointer<UInt8>) {
        guard let source = buffer.baseAddress, reserve(buffer.count) else { return }
        (base + count).update(from: source, count: buffer.count)
        count &+= buffer.count
    }

    /// A constant: a tag name, an attribute name with its `=`, an enumerated value.
    @inline(__always)
    mutating func ascii(_ text: StaticString) {
        bytes(UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    mutating func string(_ text: String) {
        let done: Void? = text.utf8.withContiguousStorageIfAvailable { bytes($0) }
        if done == nil { for value in text.utf8 { byte(value) } }
    }

    /// Copies `text` and tells whether it held a byte of `forbidden` (CR, LF, and `"` when `quote`), checking while
    /// copying, in one pass without an early exit.
    private mutating func copy(_ text: String, quote: Bool) -> Bool {
        func run(_ source: UnsafeBufferPointer<UInt8>, _ writer: inout ByteWriter) -> Bool {
            guard writer.reserve(source.count) else { return false }
            let destination = writer.base + writer.count
            var bad = false
            for i in 0..<source.count {
                let value = source[i]
                destination[i] = value
                bad = bad || value == 0x0A || value == 0x0D || (quote && value == 0x22)
            }
            writer.count &+= source.count
            return bad
        }
        if let bad = text.utf8.withContiguousStorageIfAvailable({ run($0, &self) }) { return bad }
        let array = Array(text.utf8)
        return array.withUnsafeBufferPointer { run($0, &self) }
    }

    /// `"text"`; true when `text` held what a quoted string cannot (CR, LF, `"`): the caller throws.
    mutating func quoted(_ text: String) -> Bool {
        byte(0x22)
        let bad = copy(text, quote: true)
        byte(0x22)
        return bad
    }

    /// `text` that must hold no CR or LF; true when it does.
    mutating func line(_ text: String) -> Bool {
        copy(text, quote: false)
    }

    /// `NAME=` of an attribute list, after a comma unless it is the first (`listed` says whether one was written).
    @inline(__always)
    mutating func attribute(_ name: StaticString, _ listed: inout Bool) {
        if listed { byte(UInt8(ascii: ",")) }
        listed = true
        ascii(name)
        byte(UInt8(ascii: "="))
    }

    /// The same with a name that is not a constant (client attributes).
    mutating func attribute(_ name: String, _ listed: inout Bool) {
        if listed { byte(UInt8(ascii: ",")) }
        listed = true
        string(name)
        byte(UInt8(ascii: "="))
    }

    // MARK: Numbers

    @inline(__always)
    static func digitCount(_ value: UInt64) -> Int {
        var count = 1
        var rest = value
        while rest >= 10_000 {
            rest /= 10_000
            count &+= 4
        }
        if rest >= 10 { count &+= 1 }
        if rest >= 100 { count &+= 1 }
        if rest >= 1000 { count &+= 1 }
        return count
    }

    /// Exactly `width` digits of `value` (which has at most that many), zero-padded on the left.
    @inline(__always)
    mutating func digits(_ value: UInt64, width: Int) {
        guard reserve(width) else { return }
        var rest = value
        var index = count &+ width
        while index > count {
            index &-= 1
            base[index] = UInt8(truncatingIfNeeded: rest % 10) &+ 0x30
            rest /= 10
        }
        count &+= width
    }

    mutating func unsigned(_ value: UInt64) {
        digits(value, width: Self.digitCount(value))
    }

    /// What `String(value)` writes.
    mutating func integer(_ value: Int64) {
        if value < 0 { byte(UInt8(ascii: "-")) }
        unsigned(value.magnitude)
    }

    @inline(__always)
    mutating func integer(_ value: Int) {
        integer(Int64(value))
    }

    private static let powersOfTen: [UInt64] = (0...9).map { (0..<$0).reduce(1) { p, _ in p * 10 } }

    /// What `DecimalNumber.description` writes: exactly `scale` fractional digits.
    mutating func decimal(_ value: DecimalNumber) {
        if value.mantissa < 0 { byte(UInt8(ascii: "-")) }
        let magnitude = value.mantissa.magnitude
        guard value.scale > 0 else { return unsigned(magnitude) }
        let divisor = Self.powersOfTen[value.scale]
        unsigned(magnitude / divisor)
        byte(UInt8(ascii: "."))
        digits(magnitude % divisor, width: value.scale)
    }

    /// What `Timestamp.iso8601` writes: `YYYY-MM-DDThh:mm:ss.sssZ`.
    mutating func timestamp(_ value: Timestamp) {
        let (year, month, day, hour, minute, second, millisecond) = value.utcFields
        if (0...9999).contains(year) {
            digits(UInt64(year), width: 4)
        } else {
            // `pad(year, 4)` counted the sign as a digit: -5 was written `00-5`.
            let length = Self.digitCount(year.magnitude) + (year < 0 ? 1 : 0)
            if length < 4 { digits(0, width: 4 - length) }
            integer(year)
        }
        byte(UInt8(ascii: "-"))
        digits(UInt64(month), width: 2)
        byte(UInt8(ascii: "-"))
        digits(UInt64(day), width: 2)
        byte(UInt8(ascii: "T"))
        digits(UInt64(hour), width: 2)
        byte(UInt8(ascii: ":"))
        digits(UInt64(minute), width: 2)
        byte(UInt8(ascii: ":"))
        digits(UInt64(second), width: 2)
        byte(UInt8(ascii: "."))
        digits(UInt64(millisecond), width: 3)
        byte(UInt8(ascii: "Z"))
    }

    /// What `HexBytes.description` writes: `0x` and upper-case digits.
    mutating func hex(_ value: HexBytes) {
        ascii("0x")
        guard reserve(value.bytes.count &* 2) else { return }
        var index = count
        for byte in value.bytes {
            base[index] = Self.hexDigit(byte >> 4)
            base[index &+ 1] = Self.hexDigit(byte & 0x0F)
            index &+= 2
        }
        count = index
    }

    @inline(__always)
    private static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? nibble &+ 0x30 : nibble &+ 0x37
    }
}
