import Foundation
import HLS
import HTTPTypes
import Hummingbird
import Schedule

/// The checks every HTTP request's values pass where they enter, into the pure types of `Schedule` (`Identifier`,
/// `PlainText`, `AbsoluteURI`, `Limits`): what gets past here cannot trap arithmetic, be cut short by libpq, or
/// break a playlist line. One place, so the command, SCTE-35 and hook routes refuse the same things the same way.
enum Edge {
    /// `[+|-] digits [. digits] [(e|E) [+|-] digits]` seconds in milliseconds rounded down, held to 0…`maximum`;
    /// nil when the text is not such a number. No arithmetic on the digits can overflow: only the digits that matter
    /// for a value up to `maximum` are ever multiplied.
    static func boundedMilliseconds(seconds text: Substring, maximum: Int64) -> Int64? {
        var bytes = text.utf8[...]
        var negative = false
        if let sign = bytes.first, sign == UInt8(ascii: "-") || sign == UInt8(ascii: "+") {
            negative = sign == UInt8(ascii: "-")
            bytes = bytes.dropFirst()
        }
        func isDigit(_ byte: UInt8) -> Bool { (0x30...0x39).contains(byte) }
        let integer = bytes.prefix(while: isDigit)
        bytes = bytes.dropFirst(integer.count)
        var fraction = bytes.prefix(0)
        if bytes.first == UInt8(ascii: ".") {
            bytes = bytes.dropFirst()
            fraction = bytes.prefix(while: isDigit)
            bytes = bytes.dropFirst(fraction.count)
        }
        guard !integer.isEmpty || !fraction.isEmpty else { return nil }
        // The exponent, saturated: beyond ±10^6 the value is 0 or beyond any maximum anyway.
        var exponent = 0
        if let marker = bytes.first, marker == UInt8(ascii: "e") || marker == UInt8(ascii: "E") {
            bytes = bytes.dropFirst()
            var exponentNegative = false
            if let sign = bytes.first, sign == UInt8(ascii: "-") || sign == UInt8(ascii: "+") {
                exponentNegative = sign == UInt8(ascii: "-")
                bytes = bytes.dropFirst()
            }
            let digits = bytes.prefix(while: isDigit)
            guard !digits.isEmpty else { return nil }
            bytes = bytes.dropFirst(digits.count)
            for digit in digits { exponent = min(1_000_000, exponent * 10 + Int(digit - 0x30)) }
            if exponentNegative { exponent = -exponent }
        }
        guard bytes.isEmpty else { return nil }
        // Significant digits, and where the decimal point sits among them once the exponent is applied.
        var digits = Array(integer) + Array(fraction)
        var point = integer.count + exponent
        while let first = digits.first, first == 0x30 {
            digits.removeFirst()
            point -= 1
        }
        guard !digits.isEmpty else { return 0 }
        if negative { return 0 }
        // Milliseconds are the digits before the point moved three places right.
        let wholeDigits = point + 3
        guard wholeDigits > 0 else { return 0 }
        guard wholeDigits <= 18 else { return maximum }  // ≥ 10^17 ms, beyond any maximum we hold
        var milliseconds: Int64 = 0
        for index in 0..<wholeDigits {
            milliseconds = milliseconds * 10 + Int64(index < digits.count ? digits[index] - 0x30 : 0)
        }
        return min(milliseconds, maximum)
    }

    /// An optional instant query parameter, parsed and bounded.
    ///
    /// - Throws: 422 naming it when it is not such an instant (or missing and `required`).
    static func instant(_ request: Request, _ name: String, required: Bool = false) throws(APIError) -> Timestamp? {
        guard let text = request.uri.queryParameters[Substring(name)] else {
            if required {
                throw Refusal(field: name, reason: "is required: an ISO 8601 instant with a time zone").error
            }
            return nil
        }
        do {
            return try Limits.instant(text, field: name)
        } catch {
            throw Refusal(refusal: error).error
        }
    }

    /// The most events, refusals or breaks one page may ask for, and how many it gets when it names none.
    static let pageLimits = (default: 100, maximum: 1000)

    /// An optional `limit` query parameter: a whole number from 1 to `maximum`, else `defaultValue` when absent or empty.
    ///
    /// - Throws: 422 naming `limit` and its range otherwise (0 or 1001 are refused, not read as 1 or 1000: a client
    ///   that asked for more than a page allows must learn it gets less).
    static func limit(
        _ request: Request, default defaultValue: Int = pageLimits.default, maximum: Int = pageLimits.maximum
    ) throws(APIError) -> Int {
        let text = request.uri.queryParameters["limit"]?.trimmingCharacters(in: .whitespaces) ?? ""
        guard !text.isEmpty else { return defaultValue }  // `limit=` names none, as it always has
        guard let value = Int(text), (1...maximum).contains(value) else {
            throw Refusal(field: "limit", reason: "must be a whole number from 1 to \(maximum)").error
        }
        return value
    }

    /// Where a page of events starts (`Last-Event-ID`, else `after`, else 0) and how long it is (`limit`, 1…1000, 100
    /// by default). A value that is not a whole number, a negative position or a limit out of its range is a 422
    /// naming it: silently reading from 0 would resend a whole log to a client that asked for its tail.
    static func eventPage(_ request: Request) throws(APIError) -> (after: Int64, limit: Int) {
        func number(_ text: Substring?, _ field: String) throws(APIError) -> Int64? {
            let trimmed = text?.trimmingCharacters(in: .whitespaces) ?? ""
            guard !trimmed.isEmpty else { return nil }  // an empty Last-Event-ID means none
            guard let value = Int64(trimmed), value >= 0 else {
                throw Refusal(field: field, reason: "must be a whole number from 0 to 9223372036854775807").error
            }
            return value
        }
        let lastEventID = try number(request.headers[.lastEventID].map { Substring($0) }, "Last-Event-ID")
        let after = try number(request.uri.queryParameters["after"], "after")
        return (lastEventID ?? after ?? 0, try limit(request))
    }

    /// Who, why and the command id of a command: no control characters (libpq would cut them at a NUL, terminals
    /// obey ESC), bounded lengths.
    ///
    /// - Throws: 422 naming the first that is not fine.
    static func check(actor: String, reason: String?, commandID: String, commandIDField: String = "Idempotency-Key")
        throws(APIError)
    {
        if let refusal = refusal(actor: actor, reason: reason, commandID: commandID, commandIDField: commandIDField) {
            throw refusal.error
        }
    }

    /// Who, why and the command id of a command, as ``check(actor:reason:commandID:commandIDField:)``; nil when all
    /// are fine.
    static func refusal(actor: String, reason: String?, commandID: String, commandIDField: String = "Idempotency-Key")
        -> Refusal?
    {
        if let problem = PlainText.problem(in: commandID, maximumLength: Limits.labelBytes) {
            return Refusal(field: commandIDField, reason: problem)
        }
        if let problem = PlainText.problem(in: actor, maximumLength: Limits.labelBytes) {
            return Refusal(field: "actor", reason: problem)
        }
        if let reason, let problem = PlainText.problem(in: reason, maximumLength: Limits.textBytes) {
            return Refusal(field: "reason", reason: problem)
        }
        return nil
    }

    /// A value refused at the edge: answered 422 with the field named (the wire's refusal of a field).
    typealias Refusal = CommandRequest.Invalid
}

extension APIError {
    /// A request field that is missing or wrong: 422 naming it.
    init(_ invalid: CommandRequest.Invalid) {
        self = .invalid(invalid.field, invalid.reason)
    }
}

extension CommandRequest.Invalid {
    /// 422 naming the field.
    var error: APIError { APIError(self) }
}
