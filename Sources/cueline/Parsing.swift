import ArgumentParser
import Foundation
import HLS
import Schedule

/// A duration given as `30`, `1.5`, `90s`, `1m30s`, `2m`, `500ms`; parsed to milliseconds.
struct DurationArgument: ExpressibleByArgument, Hashable {
    var milliseconds: Int64

    init?(argument: String) {
        guard let value = Self.parse(argument) else { return nil }
        milliseconds = value
    }

    /// Milliseconds, or nil when the text is not a duration or is longer than `Limits.maximumDelayMilliseconds`
    /// (a day): `9999999999999999h` is refused, never multiplied into a trap.
    static func parse(_ text: String) -> Int64? {
        guard let total = unbounded(text), total <= Limits.maximumDelayMilliseconds else { return nil }
        return total
    }

    private static func unbounded(_ text: String) -> Int64? {
        if let plain = DecimalNumber(text), plain.mantissa >= 0 { return plain.checkedMilliseconds }
        var total: Int64 = 0
        var rest = Substring(text)
        var matched = false
        while !rest.isEmpty {
            let number = rest.prefix { $0.isASCII && ($0.isNumber || $0 == ".") }
            guard !number.isEmpty, let value = DecimalNumber(number), value.mantissa >= 0,
                let milliseconds = value.checkedMilliseconds
            else {
                return nil
            }
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
            let (scaled, overflow) = milliseconds.multipliedReportingOverflow(by: factor)
            let (sum, overflow2) = total.addingReportingOverflow(scaled / 1000)
            guard !overflow, !overflow2 else { return nil }
            total = sum
            matched = true
        }
        return matched ? total : nil
    }

    static var defaultValueDescription: String { "seconds, or 90s, 1m30s, 500ms" }
}

/// An ISO 8601 date-time with a time zone, within `Limits.instants` (2000-01-01 … 2200-01-01).
struct TimeArgument: ExpressibleByArgument, Hashable {
    var timestamp: Timestamp

    init?(argument: String) {
        guard let value = try? Limits.instant(argument, field: "time") else { return nil }
        timestamp = value
    }

    static var defaultValueDescription: String {
        "ISO 8601 with a time zone, 2000-01-01T00:00:00Z … 2200-01-01T00:00:00Z"
    }
}

/// Refuses `value` of option `--name` when it holds control characters or is too long: exit code 2, naming it.
func checkPlainText(_ value: String?, option: String, maximumLength: Int = Limits.textBytes) throws {
    if let value, let problem = PlainText.problem(in: value, maximumLength: maximumLength) {
        throw ValidationError("--\(option) \(problem)")
    }
}

/// The wall clock, read only at the edges (CLI, server) and handed to pure code as a value.
func wallClock() -> Timestamp {
    Timestamp(milliseconds: Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)))
}

/// Left-aligned columns for people.
func table(_ header: [String], _ rows: [[String]]) -> String {
    // Whatever the log holds, a table cannot move the cursor or split a row.
    let all = ([header] + rows).map { $0.map(\.escapingControlCharacters) }
    let widths = header.indices.map { column in all.map { $0[column].count }.max() ?? 0 }
    return all.map { row in
        row.enumerated().map { index, cell in
            index == row.count - 1 ? cell : cell.padding(toLength: widths[index], withPad: " ", startingAt: 0)
        }.joined(separator: "  ")
    }.joined(separator: "\n")
}

/// Runs a check from `Schedule` on a command-line value: its refusal becomes a usage error (exit code 2) naming
/// the option, `--option reason`, or the argument when `option` is nil.
func checkOption(_ option: String? = nil, _ check: () throws(ScheduleError) -> Void) throws {
    do {
        try check()
    } catch {
        if case .invalidField(let field, let reason) = error {
            throw ValidationError("\(option.map { "--" + $0 } ?? field) \(reason)")
        }
        throw ValidationError(error.description)
    }
}

/// `--align segment|exact`; anything else is a usage error (exit 2) that lists both.
extension PlaceBreak.StartAlignment: ExpressibleByArgument {}

/// A channel or break id on the command line, parsed by the one identifier rule (`Identifier`); anything else is a
/// usage error (exit 2) that states the rule. Commands that change a schedule take their channel this way, so an
/// old channel whose id breaks the rule can still be read but takes no new commands, as over the API.
func identifier(_ text: String) throws -> Identifier {
    guard let id = Identifier(text) else { throw ValidationError("must be \(Identifier.rule)") }
    return id
}

/// A channel named by a read (`schedule`, `log`, `replay`, `as-run`, `verify`, `checkpoint`): today's rule or the one
/// channels were created with before it (`_news`, `Identifier(stored:)`), which can still be read; anything else
/// names no channel and is a usage error (exit 2).
func storedIdentifier(_ text: String) throws -> Identifier {
    guard let id = Identifier(stored: text) else { throw ValidationError("must be \(Identifier.rule)") }
    return id
}
