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

    /// The value in milliseconds, rounded toward negative infinity.
    public var milliseconds: Int64 {
        if scale <= 3 {
            var value = mantissa
            for _ in scale..<3 { value *= 10 }
            return value
        }
        var divisor: Int64 = 1
        for _ in 3..<scale { divisor *= 10 }
        let quotient = mantissa / divisor
        return mantissa % divisor < 0 ? quotient - 1 : quotient
    }

    /// The value rounded to the nearest integer, halves away from zero (how the draft rounds `EXTINF`).
    public var roundedToInteger: Int64 {
        var divisor: Int64 = 1
        for _ in 0..<scale { divisor *= 10 }
        let quotient = mantissa / divisor
        let remainder = abs(mantissa % divisor)
        return remainder * 2 >= divisor ? quotient + (mantissa < 0 ? -1 : 1) : quotient
    }

    public var isInteger: Bool { scale == 0 }

    /// Same value, ignoring how it was written (`6` equals `6.000`).
    public func hasSameValue(as other: DecimalNumber) -> Bool {
        let common = max(scale, other.scale)
        return scaled(to: common) == other.scaled(to: common)
    }

    private func scaled(to target: Int) -> Int64 {
        var value = mantissa
        for _ in scale..<target { value *= 10 }
        return value
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
            self.init(milliseconds: Int64((double * 1000).rounded()))
        }
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
        let digits = String(negative ? -mantissa : mantissa)
        guard scale > 0 else { return (negative ? "-" : "") + digits }
        let padded = digits.count <= scale ? String(repeating: "0", count: scale - digits.count + 1) + digits : digits
        let split = padded.index(padded.endIndex, offsetBy: -scale)
        return (negative ? "-" : "") + padded[..<split] + "." + padded[split...]
    }
}
