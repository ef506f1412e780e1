/// An instant on the UTC timeline with millisecond precision.
///
/// Cueline never uses `Date` in pure code: a `Timestamp` is an integer count of milliseconds since the Unix
/// epoch, so arithmetic is exact and rendering is independent of locale, time zone and floating point.
public struct Timestamp: Hashable, Comparable, Sendable, Codable {
    /// Milliseconds since 1970-01-01T00:00:00Z.
    public var milliseconds: Int64

    public init(milliseconds: Int64) {
        self.milliseconds = milliseconds
    }

    public static func < (lhs: Timestamp, rhs: Timestamp) -> Bool {
        lhs.milliseconds < rhs.milliseconds
    }

    /// This instant moved by a number of milliseconds. Saturates at the ends of `Int64` instead of trapping: a
    /// result that far out is outside `Timestamp.representable` and fails any bounds check made on it.
    public func adding(milliseconds delta: Int64) -> Timestamp {
        let (sum, overflow) = milliseconds.addingReportingOverflow(delta)
        return Timestamp(milliseconds: overflow ? (delta < 0 ? .min : .max) : sum)
    }

    /// Milliseconds from `other` to `self` (positive when `self` is later); saturates instead of trapping.
    public func milliseconds(since other: Timestamp) -> Int64 {
        let (difference, overflow) = milliseconds.subtractingReportingOverflow(other.milliseconds)
        return overflow ? (other.milliseconds < 0 ? .max : .min) : difference
    }

    /// The instants ISO 8601 text with a four-digit year can carry, in UTC: 0000-01-01T00:00:00.000Z through
    /// 9999-12-31T23:59:59.999Z. Parsing never yields an instant outside it, so every parsed instant formats and
    /// parses back to itself.
    public static let representable =
        Timestamp(milliseconds: -62_167_219_200_000)...Timestamp(milliseconds: 253_402_300_799_999)

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let parsed = Timestamp(iso8601: text) else {
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "'\(text)' is not an ISO 8601 date-time with a time zone")
        }
        self = parsed
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(iso8601)
    }
}

extension Timestamp: CustomStringConvertible {
    public var description: String { iso8601 }
}

// MARK: - ISO 8601

extension Timestamp {
    /// The canonical rendering: `YYYY-MM-DDThh:mm:ss.sssZ`, always UTC, always milliseconds.
    public var iso8601: String {
        let (year, month, day, hour, minute, second, ms) = utcFields
        var out = ""
        out.reserveCapacity(24)
        out += pad(year, 4)
        out += "-"
        out += pad(month, 2)
        out += "-"
        out += pad(day, 2)
        out += "T"
        out += pad(hour, 2)
        out += ":"
        out += pad(minute, 2)
        out += ":"
        out += pad(second, 2)
        out += "."
        out += pad(ms, 3)
        out += "Z"
        return out
    }

    /// Year, month, day, hour, minute, second and millisecond in UTC: the fields `iso8601` writes (the byte
    /// renderer writes the same ones digit by digit). Only the year can be negative or longer than its width.
    var utcFields:
        (year: Int64, month: Int64, day: Int64, hour: Int64, minute: Int64, second: Int64, millisecond: Int64)
    {
        let (days, msOfDay) = floorDivide(milliseconds, 86_400_000)
        let (year, month, day) = civilFromDays(days)
        return (year, month, day, msOfDay / 3_600_000, (msOfDay / 60_000) % 60, (msOfDay / 1000) % 60, msOfDay % 1000)
    }

    /// Parses an ISO 8601 / RFC 3339 date-time: `2026-03-01T12:00:06Z`, `...06.5Z`, `...06.123+01:00`.
    ///
    /// A time zone designator is required (a date without one is ambiguous on a live channel). Fractions
    /// finer than a millisecond are truncated toward the past.
    public init?(iso8601 text: String) {
        var scanner = DigitScanner(Array(text.utf8))
        guard let year = scanner.number(digits: 4), scanner.take("-"),
            let month = scanner.number(digits: 2), scanner.take("-"),
            let day = scanner.number(digits: 2), scanner.take("T") || scanner.take("t") || scanner.take(" "),
            let hour = scanner.number(digits: 2), scanner.take(":"),
            let minute = scanner.number(digits: 2), scanner.take(":"),
            let second = scanner.number(digits: 2)
        else { return nil }
        guard (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day), hour < 24,
            minute < 60, second < 60
        else { return nil }
        var millis: Int64 = 0
        if scanner.take(".") || scanner.take(",") {
            var count = 0
            while let digit = scanner.digit() {
                if count < 3 { millis = millis * 10 + digit }
                count += 1
            }
            guard count > 0 else { return nil }
            if count < 3 { for _ in count..<3 { millis *= 10 } }
        }
        var offsetMinutes: Int64 = 0
        if scanner.take("Z") || scanner.take("z") {
            offsetMinutes = 0
        } else if let sign = scanner.sign() {
            guard let oh = scanner.number(digits: 2) else { return nil }
            _ = scanner.take(":")
            guard let om = scanner.number(digits: 2), oh < 24, om < 60 else { return nil }
            offsetMinutes = sign * (oh * 60 + om)
        } else {
            return nil
        }
        guard scanner.atEnd else { return nil }
        // Every term is bounded by the four-digit year and two-digit fields above: no overflow is possible.
        let days = daysFromCivil(year: year, month: month, day: day)
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offsetMinutes * 60
        let instant = Timestamp(milliseconds: seconds * 1000 + millis)
        // A local time near either end of the calendar can fall outside it in UTC (9999-12-31T23:59-23:59 is year
        // 10000): such an instant could not be written back in this format.
        guard Timestamp.representable.contains(instant) else { return nil }
        self = instant
    }
}

private struct DigitScanner {
    let bytes: [UInt8]
    var index = 0
    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var atEnd: Bool { index == bytes.count }

    mutating func take(_ character: Character) -> Bool {
        guard index < bytes.count, let ascii = character.asciiValue, bytes[index] == ascii else { return false }
        index += 1
        return true
    }

    mutating func digit() -> Int64? {
        guard index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 else { return nil }
        defer { index += 1 }
        return Int64(bytes[index] - 0x30)
    }

    mutating func number(digits: Int) -> Int64? {
        var value: Int64 = 0
        for _ in 0..<digits {
            guard let d = digit() else { return nil }
            value = value * 10 + d
        }
        return value
    }

    mutating func sign() -> Int64? {
        if take("+") { return 1 }
        if take("-") { return -1 }
        return nil
    }
}

private func pad(_ value: Int64, _ width: Int) -> String {
    let digits = String(value)
    return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
}

private func floorDivide(_ a: Int64, _ b: Int64) -> (Int64, Int64) {
    var q = a / b
    var r = a % b
    if r < 0 {
        q -= 1
        r += b
    }
    return (q, r)
}

private func isLeap(_ year: Int64) -> Bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

private func daysIn(month: Int64, year: Int64) -> Int64 {
    switch month {
    case 2: return isLeap(year) ? 29 : 28
    case 4, 6, 9, 11: return 30
    default: return 31
    }
}

// Howard Hinnant's civil-from-days algorithms: exact for the proleptic Gregorian calendar.
private func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
    let y = month <= 2 ? year - 1 : year
    let era = (y >= 0 ? y : y - 399) / 400
    let yoe = y - era * 400
    let mp = (month + 9) % 12
    let doy = (153 * mp + 2) / 5 + day - 1
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
    return era * 146_097 + doe - 719_468
}

private func civilFromDays(_ days: Int64) -> (Int64, Int64, Int64) {
    let z = days + 719_468
    let era = (z >= 0 ? z : z - 146_096) / 146_097
    let doe = z - era * 146_097
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
    let mp = (5 * doy + 2) / 153
    let day = doy - (153 * mp + 2) / 5 + 1
    let month = mp < 10 ? mp + 3 : mp - 9
    return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
}
