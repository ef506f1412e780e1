import HTTPTypes

/// What kind of failure an answer reports: the one place that says which HTTP status each kind gets, and which exit
/// code `cueline` gives for it. The server maps errors to categories (``APIError``); the CLI, talking to a server with
/// `--server`, maps the status it receives back with ``init(status:)`` and exits with ``exitCode`` — so the two
/// doors to a command cannot drift apart. (CLI side: use ``exitCode`` instead of switching on status codes.)
public enum ErrorCategory: Sendable, Hashable, CaseIterable {
    /// A field is missing or wrong (422, naming the field).
    case invalid
    /// The request itself is malformed before any field is read (400).
    case badRequest
    /// No credentials, or ones that are unknown, revoked or malformed; a hook delivery that is not authentic (401).
    case unauthenticated
    /// The credentials do not allow this (403).
    case forbidden
    /// Unknown channel, rendition, break, chunk, hook or file; a path no route takes (404).
    case notFound
    /// A path whose routes take other methods (405, with `Allow`).
    case methodNotAllowed
    /// The schedule or the log moved on: a stale `If-Match`, a race lost, an id or key reused (409).
    case conflict
    /// Too many of something for one caller (429).
    case tooManyRequests
    /// Not possible now: the database is unreachable, the instance is not ready or busy (503). Retry.
    case unavailable
    /// Something this server reads from elsewhere failed (502).
    case badGateway
    /// A fault of this server (500); the details are in its log, never in the answer.
    case internalFailure

    /// The HTTP status of an answer in this category.
    public var status: HTTPResponse.Status {
        switch self {
        case .invalid: .unprocessableContent
        case .badRequest: .badRequest
        case .unauthenticated: .unauthorized
        case .forbidden: .forbidden
        case .notFound: .notFound
        case .methodNotAllowed: .methodNotAllowed
        case .conflict: .conflict
        case .tooManyRequests: .tooManyRequests
        case .unavailable: .serviceUnavailable
        case .badGateway: .badGateway
        case .internalFailure: .internalServerError
        }
    }

    /// The category of an HTTP status this server answers with; nil for a success or a status it does not use.
    public init?(status: Int) {
        guard let category = Self.allCases.first(where: { $0.status.code == status }) else { return nil }
        self = category
    }

    /// The exit code of `cueline` for a failure in this category: 3 for a conflict (someone changed the schedule
    /// first; a script may reload and retry), else 1. (2, a usage error, is the CLI's own: arguments it refuses
    /// before anything is sent.)
    public var exitCode: Int32 {
        switch self {
        case .conflict: 3
        default: 1
        }
    }
}
