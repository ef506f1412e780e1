import Foundation  // for Double rounding (libm) when decoding JSON numbers

/// A non-negative-or-signed decimal written with a fixed number of fractional digits, e.g. `6.006` or `30`.
///
/// Kept as an integer mantissa and a scale so that parsing then rendering gives back the same characters, and
/// rendering never depends on floating point or locale.
public struct DecimalNumber: Hashable, Sendable, Comparable, Codable {
    /// The digits without the decimal point: `6.006` is 6006.
    public var mantissa: Int64
    /// Digits after the decimal point: `6.006` is 3, `30` is 0.
    public var scale: Int

    public init(mantissa: Int64, scale: Int) {
        precondition(scale >= 0 && scale <= 9, "scale must be 0...9")
        self.mantissa = mantissa
        self.scale = scale
    }

    /// A whole number of seconds, written without a fraction.
    public init(integer: Int64) {
        self.init(mantissa: integer, scale: 0)
    }

    /// Milliseconds as seconds with three decimals: 6000 → `6.000`.
    public init(milliseconds: Int64) {
        self.init(mantissa: milliseconds, scale: 3)
    }

    /// Parses `12`, `12.5`, `-0.25`; rejects exponents, signs on their own, more than nine decimals.
    public init?(_ text: some StringProtocol) {
        var utf8 = Substring(text).utf8[...]
        var negative = false
        if utf8.first == UInt8(ascii: "-") {
            negative = true
            utf8 = utf8.dropFirst()
        }
        var mantissa: Int64 = 0
        var scale = 0
        var digits = 0
        var seenPoint = false
        for byte in utf8 {
            if byte == UInt8(ascii: ".") {
                guard !seenPoint, digits > 0 else { return nil }
                seenPoint = true
                continue
            }
            guard byte >= 0x30, byte <= 0x39 else { return nil }
            let (m1, o1) = mantissa.multipliedReportingOverflow(by: 10)
            let (m2, o2) = m1.addingReportingOverflow(Int64(byte - 0x30))
            guard !o1, !o2 else { return nil }
            mantissa = m2
            digits += 1
            if seenPoint { scale += 1 }
        }
        guard digits > 0, scale <= 9, !(seenPoint && scale == 0) else { return nil }
        self.init(mantissa: negative ? -mantissa : mantissa, scale: scale)
    }

    /// The value in milliseconds, rounded toward negative infinity, or nil when it does not fit in an `Int64`
    /// (`9223372036854775807` seconds). Use this on anything a request or an upstream playlist can carry.
    public var checkedMilliseconds: Int64? {
        if scale <= 3 {
            var value = mantissa
            for _ in scale..<3 {
                let (product, overflow) = value.multipliedReportingOverflow(by: 10)
                guard !overflow else { return nil }
                value = product
            }
            return value
        }
        var divisor: Int64 = 1
        for _ in 3..<scale { divisor *= 10 }
        let quotient = mantissa / divisor
        return mantissa % divisor < 0 ? quotient - 1 : quotient
    }

    /// The value in milliseconds, rounded toward negative infinity; saturates at `Int64.min`/`Int64.max` instead of
    /// trapping, so a huge value read from outside stays huge (and fails a bounds check) rather than crashing.
    public var milliseconds: Int64 {
        checkedMilliseconds ?? (mantissa < 0 ? .min : .max)
    }

    /// The value rounded to the nearest integer, halves away from zero (how the draft rounds `EXTINF`).
    public var roundedToInteger: Int64 {
        var divisor: Int64 = 1
        for _ in 0..<scale { divisor *= 10 }
        let quotient = mantissa / divisor
        let remainder = (mantissa % divisor).magnitude
        guard remainder * 2 >= divisor.magnitude else { return quotient }
        // `quotient` is at most Int64.max / 10 when there is a remainder, so this cannot overflow.
        return quotient + (mantissa < 0 ? -1 : 1)
    }

    public var isInteger: Bool { scale == 0 }

    /// Same value, ignoring how it was written (`6` equals `6.000`).
    public func hasSameValue(as other: DecimalNumber) -> Bool {
        let common = max(scale, other.scale)
        return scaled(to: common) == other.scaled(to: common)
    }

    /// The mantissa at `target` digits after the point, exactly: 128 bits, as (high, low), so comparing two of them
    /// never overflows whatever the mantissas.
    private func scaled(to target: Int) -> WideInteger {
        var factor: Int64 = 1
        for _ in scale..<target { factor *= 10 }
        let (high, low) = mantissa.multipliedFullWidth(by: factor)
        return WideInteger(high: high, low: low)
    }

    private struct WideInteger: Equatable, Comparable {
        var high: Int64
        var low: UInt64

        static func < (lhs: WideInteger, rhs: WideInteger) -> Bool {
            lhs.high != rhs.high ? lhs.high < rhs.high : lhs.low < rhs.low
        }
    }

    public static func < (lhs: DecimalNumber, rhs: DecimalNumber) -> Bool {
        let common = max(lhs.scale, rhs.scale)
        return lhs.scaled(to: common) < rhs.scaled(to: common)
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let text = try? container.decode(String.self), let value = DecimalNumber(text) {
            self = value
        } else {
            let double = try container.decode(Double.self)
            guard let milliseconds = Self.milliseconds(exactly: double) else {
                throw DecodingError.dataCorruptedError(
                    in: container,
                    debugDescription: "\(double) seconds is not a number of milliseconds Cueline can hold")
            }
            self.init(milliseconds: milliseconds)
        }
    }

    /// Seconds as a binary floating-point number (a JSON number) to whole milliseconds, rounded to the nearest; nil
    /// for NaN, infinities and anything beyond ±9.2e15 s, instead of trapping as `Int64(_:)` does.
    public static func milliseconds(exactly seconds: Double) -> Int64? {
        let value = (seconds * 1000).rounded()
        // 2^63 is exactly representable; every Double below it converts without trapping.
        guard value.isFinite, value >= -9_223_372_036_854_775_808.0, value < 9_223_372_036_854_775_808.0 else {
            return nil
        }
        return Int64(value)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}

extension DecimalNumber: CustomStringConvertible {
    /// The canonical text: exactly `scale` fractional digits, no exponent, `.` as the separator.
    public var description: String {
        let negative = mantissa < 0
        let digits = String(mantissa.magnitude)
        guard scale > 0 else { return (negative ? "-" : "") + digits }
        let padded = digits.count <= scale ? String(repeating: "0", count: scale - digits.count + 1) + digits : digits
        let split = padded.index(padded.endIndex, offsetBy: -scale)
        return (negative ? "-" : "") + padded[..<split] + "." + padded[split...]
    }
}
