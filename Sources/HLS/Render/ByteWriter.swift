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
    /// The first value found that cannot be written. The writing functions record it and go on rather than throw:
    /// a throwing call makes the compiler copy each tag and date range it passes on (a dozen retains each), which
    /// cost a fifth of a render. What is written after it is thrown away.
    private(set) var error: RenderError?

    init(_ buffer: UnsafeMutableBufferPointer<UInt8>) {
        base = buffer.baseAddress!
        capacity = buffer.count
    }

    mutating func fail(_ error: RenderError) {
        if self.error == nil { self.error = error }
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

    /// Copies `text` and tells whether it held CR or LF, or `"` when `quote`.
    private mutating func copy(_ text: String, quote: Bool) -> Bool {
        func run(_ source: UnsafeBufferPointer<UInt8>, _ writer: inout ByteWriter) -> Bool {
            writer.bytes(source)
            return containsLineBreak(source, orQuote: quote)
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

    @inline(__always)
    private static func powerOfTen(_ exponent: Int) -> UInt64 {
        var value: UInt64 = 1
        for _ in 0..<exponent { value &*= 10 }
        return value
    }

    /// What `DecimalNumber.description` writes: exactly `scale` fractional digits.
    mutating func decimal(_ value: DecimalNumber) {
        if value.mantissa < 0 { byte(UInt8(ascii: "-")) }
        let magnitude = value.mantissa.magnitude
        guard value.scale > 0 else { return unsigned(magnitude) }
        let divisor = Self.powerOfTen(value.scale)
        unsigned(magnitude / divisor)
        byte(UInt8(ascii: "."))
        digits(magnitude % divisor, width: value.scale)
    }

    /// The day of the last timestamp written and its `YYYY-MM-DDT` (a window's dates share one or two days).
    private var cachedDay = Int64.min
    private var cachedDate: (UInt64, UInt32) = (0, 0)

    /// What `Timestamp.iso8601` writes: `YYYY-MM-DDThh:mm:ss.sssZ`.
    mutating func timestamp(_ value: Timestamp) {
        var day = value.milliseconds / 86_400_000
        var msOfDay = value.milliseconds % 86_400_000
        if msOfDay < 0 {
            day -= 1
            msOfDay += 86_400_000
        }
        if day == cachedDay, reserve(24) {
            UnsafeMutableRawPointer(base + count).storeBytes(of: cachedDate.0, as: UInt64.self)
            UnsafeMutableRawPointer(base + count + 8).storeBytes(of: cachedDate.1, as: UInt32.self)
            count &+= 11
        } else {
            let (year, month, dayOfMonth, _, _, _, _) = value.utcFields
            let start = count
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
            digits(UInt64(dayOfMonth), width: 2)
            byte(UInt8(ascii: "T"))
            if !overflowed, count - start == 11 {
                let raw = UnsafeRawPointer(base + start)
                cachedDate = (raw.loadUnaligned(as: UInt64.self), raw.loadUnaligned(fromByteOffset: 8, as: UInt32.self))
                cachedDay = day
            }
        }
        let ms = UInt64(msOfDay)
        twoDigits(ms / 3_600_000)
        byte(UInt8(ascii: ":"))
        twoDigits(ms / 60_000 % 60)
        byte(UInt8(ascii: ":"))
        twoDigits(ms / 1000 % 60)
        byte(UInt8(ascii: "."))
        digits(ms % 1000, width: 3)
        byte(UInt8(ascii: "Z"))
    }

    @inline(__always)
    private mutating func twoDigits(_ value: UInt64) {
        guard reserve(2) else { return }
        base[count] = UInt8(truncatingIfNeeded: value / 10) &+ 0x30
        base[count &+ 1] = UInt8(truncatingIfNeeded: value % 10) &+ 0x30
        count &+= 2
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

/// Whether `bytes` holds CR or LF (or `"` when `quote`): eight bytes at a time, with the has-zero-byte test.
@inline(__always)
func containsLineBreak(_ bytes: UnsafeBufferPointer<UInt8>, orQuote quote: Bool) -> Bool {
    guard let start = bytes.baseAddress else { return false }
    let ones: UInt64 = 0x0101_0101_0101_0101
    let highs: UInt64 = 0x8080_8080_8080_8080
    @inline(__always) func hasZero(_ word: UInt64) -> Bool { (word &- ones) & ~word & highs != 0 }
    let raw = UnsafeRawPointer(start)
    var index = 0
    var found = false
    while index &+ 8 <= bytes.count {
        let word = raw.loadUnaligned(fromByteOffset: index, as: UInt64.self)
        found =
            found || hasZero(word ^ (ones &* 0x0A)) || hasZero(word ^ (ones &* 0x0D))
            || (quote && hasZero(word ^ (ones &* 0x22)))
        index &+= 8
    }
    while index < bytes.count {
        let value = bytes[index]
        found = found || value == 0x0A || value == 0x0D || (quote && value == 0x22)
        index &+= 1
    }
    return found
}
