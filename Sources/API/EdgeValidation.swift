import HLS
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
