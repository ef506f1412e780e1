import Foundation
import HLS
import HTTPTypes
import Hummingbird
import Schedule

/// The checks every HTTP request's values pass where they enter, into the pure types of `Schedule` (`Identifier`,
/// `PlainText`, `AbsoluteURI`, `Limits`): what gets past here cannot trap arithmetic, be cut short by libpq, or
/// break a playlist line. One place, so the command, SCTE-35 and hook routes refuse the same things the same way.
enum Edge {
    /// `_HLS_start_offset` in milliseconds: a player joining mid-break. Anything unreadable counts as 0 (players
    /// must not be refused a list), anything beyond a day as a day (longer than any break, so nothing is left).
    static func startOffsetMilliseconds(_ text: Substring?) -> Int64 {
        guard let text, let offset = DecimalNumber(text) else { return 0 }
        return min(max(0, offset.milliseconds), Limits.maximumDelayMilliseconds)
    }

    /// An optional instant query parameter, parsed and bounded; `.failure` is the 422 naming it.
    static func instant(_ request: Request, _ name: String, required: Bool = false) -> Result<Timestamp?, Refusal> {
        guard let text = request.uri.queryParameters[Substring(name)] else {
            return required ? .failure(Refusal(field: name, reason: "is required: an ISO 8601 instant with a time zone")) : .success(nil)
        }
        do {
            return .success(try Limits.instant(text, field: name))
        } catch {
            return .failure(Refusal(error))
        }
    }

    /// Where a page of events starts (`Last-Event-ID`, else `after`, else 0) and how long it is (`limit`, held to
    /// 1…1000). A value that is not a whole number, or a negative position, is a 422 naming it: silently reading
    /// from 0 would resend a whole log to a client that asked for its tail.
    static func eventPage(_ request: Request) -> Result<(after: Int64, limit: Int), Refusal> {
        func number(_ text: Substring?, _ field: String) -> Result<Int64?, Refusal> {
            let trimmed = text?.trimmingCharacters(in: .whitespaces) ?? ""
            guard !trimmed.isEmpty else { return .success(nil) }  // an empty Last-Event-ID means none
            guard let value = Int64(trimmed), value >= 0 else {
                return .failure(Refusal(field: field, reason: "must be a whole number from 0 to 9223372036854775807"))
            }
            return .success(value)
        }
        let lastEventID = request.headers[HTTPField.Name("Last-Event-ID")!].map { Substring($0) }
        switch (number(lastEventID, "Last-Event-ID"), number(request.uri.queryParameters["after"], "after"), number(request.uri.queryParameters["limit"], "limit")) {
        case (.failure(let refusal), _, _), (_, .failure(let refusal), _), (_, _, .failure(let refusal)):
            return .failure(refusal)
        case (.success(let lastEventID), .success(let after), .success(let limit)):
            return .success((lastEventID ?? after ?? 0, Int(min(1000, max(1, limit ?? 100)))))
        }
    }

    /// Who, why and the command id of a command: no control characters (libpq would cut them at a NUL, terminals
    /// obey ESC), bounded lengths. Nil when all are fine.
    static func refusal(actor: String, reason: String?, commandID: String, commandIDField: String = "Idempotency-Key") -> Refusal? {
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

    /// A value refused at the edge: answered 422 with the field named.
    struct Refusal: Error {
        var field: String
        var reason: String

        init(field: String, reason: String) {
            self.field = field
            self.reason = reason
        }

        init(_ error: ScheduleError) {
            if case .invalidField(let field, let reason) = error {
                self.init(field: field, reason: reason)
            } else {
                self.init(field: error.field ?? "body", reason: error.description)
            }
        }

        var response: Response {
            errorResponse(.unprocessableContent, "\(field) \(reason)", field: field)
        }
    }
}

extension CommandRequest.Invalid {
    /// The same refusal from a check in `Schedule`, keeping its field.
    init(_ error: ScheduleError) {
        let refusal = Edge.Refusal(error)
        self.init(field: refusal.field, reason: refusal.reason)
    }
}
