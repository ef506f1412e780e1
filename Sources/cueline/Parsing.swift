import ArgumentParser
import Foundation
import HLS

/// A duration given as `30`, `1.5`, `90s`, `1m30s`, `2m`, `500ms`; parsed to milliseconds.
struct DurationArgument: ExpressibleByArgument, Hashable {
    var milliseconds: Int64

    init?(argument: String) {
        guard let value = Self.parse(argument) else { return nil }
        milliseconds = value
    }

    static func parse(_ text: String) -> Int64? {
        if let plain = DecimalNumber(text), plain.mantissa >= 0 { return plain.milliseconds }
        var total: Int64 = 0
        var rest = Substring(text)
        var matched = false
        while !rest.isEmpty {
            let number = rest.prefix { $0.isNumber || $0 == "." }
            guard !number.isEmpty, let value = DecimalNumber(number), value.mantissa >= 0 else { return nil }
            rest = rest.dropFirst(number.count)
            let unit = rest.prefix { $0.isLetter }
            rest = rest.dropFirst(unit.count)
            let factor: Int64
            switch unit {
            case "ms": factor = 1
            case "s": factor = 1000
            case "m": factor = 60_000
            case "h": factor = 3_600_000
            default: return nil
            }
            total += value.milliseconds * factor / 1000
            matched = true
        }
        return matched ? total : nil
    }

    static var defaultValueDescription: String { "seconds, or 90s, 1m30s, 500ms" }
}

/// An ISO 8601 date-time with a time zone.
struct TimeArgument: ExpressibleByArgument, Hashable {
    var timestamp: Timestamp

    init?(argument: String) {
        guard let value = Timestamp(iso8601: argument) else { return nil }
        timestamp = value
    }
}

/// The wall clock, read only at the edges (CLI, server) and handed to pure code as a value.
func wallClock() -> Timestamp {
    Timestamp(milliseconds: Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)))
}

/// Left-aligned columns for people.
func table(_ header: [String], _ rows: [[String]]) -> String {
    let all = [header] + rows
    let widths = header.indices.map { column in all.map { $0[column].count }.max() ?? 0 }
    return all.map { row in
        row.enumerated().map { index, cell in
            index == row.count - 1 ? cell : cell.padding(toLength: widths[index], withPad: " ", startingAt: 0)
        }.joined(separator: "  ")
    }.joined(separator: "\n")
}
