import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import Projector
import Schedule

/// Every failure the API answers with: it renders itself as the wire's ``ErrorBody``, `{"error": message, "field":
/// name}` (the field only when one is wrong), with the status of its ``ErrorCategory``, so handlers `throw` and never build an error body.
public struct APIError: HTTPResponseError, Sendable {
    public var category: ErrorCategory
    /// What went wrong, in words an operator can act on; never internal details (those go to the log).
    public var message: String
    /// The request field, header or query parameter that is wrong, when there is one.
    public var field: String?
    /// Extra headers of the answer (`WWW-Authenticate`, `Retry-After`).
    var headers: HTTPFields

    public init(_ category: ErrorCategory, _ message: String, field: String? = nil) {
        self.category = category
        self.message = message
        self.field = field
        headers = HTTPFields()
    }

    public var status: HTTPResponse.Status { category.status }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        response
    }

    /// The answer, with the JSON body and headers of every other JSON answer of the API.
    var response: Response {
        var response = jsonResponse(ErrorBody(error: message, field: field))
        response.status = status
        for field in headers { response.headers.append(field) }
        return response
    }

    /// The same error with `value` in header `name`.
    func with(_ name: HTTPField.Name, _ value: String) -> APIError {
        var copy = self
        copy.headers[name] = value
        return copy
    }
}

extension APIError {
    /// 404 for a `{channel}` that names no channel, worded as every read route's (`LookupError.unknownChannel`);
    /// `text` is the path segment as given (control characters escaped), which may not even be an id.
    static func noChannel(_ text: String) -> APIError {
        APIError(.notFound, "channel \(text) does not exist")
    }

    /// A value refused where it enters (422 naming it).
    static func invalid(_ field: String, _ reason: String) -> APIError {
        APIError(.invalid, "\(field) \(reason)", field: field)
    }

    /// 401, with the `WWW-Authenticate` challenge of a bearer token.
    static func unauthenticated(_ message: String) -> APIError {
        APIError(.unauthenticated, message, field: "Authorization").with(.wwwAuthenticate, #"Bearer realm="cueline""#)
    }

    /// What the follower could not find or serve.
    init(_ error: ChannelFollower.LookupError) {
        switch error {
        case .unknownChannel(let channel):
            self.init(.notFound, "channel \(channel) does not exist")
        case .unknownRendition(let channel, let rendition):
            self.init(.notFound, "channel \(channel) has no rendition \(rendition)")
        case .notStarted(let channel, let firstSegmentEnds):
            self.init(
                .unavailable, "channel \(channel) has not started; its first playlist is due at \(firstSegmentEnds)")
        case .unknownBreak(let channel, let id):
            self.init(.notFound, "break \(id) does not exist on channel \(channel)")
        case .upstreamMissing(let channel, let rendition):
            self.init(
                .unavailable, "channel \(channel): no usable upstream playlist for \(rendition) yet; see the server log"
            )
        case .renderFailed(let reason):
            self.init(.internalFailure, "the playlist could not be rendered (\(reason)); see the server log")
        }
    }

    /// Why a command failed in the handler: 409 for a conflict or a race lost, 404, 422 naming the field, 503.
    init(_ error: CommandError) {
        let category = ErrorCategory(error)
        switch error {
        case .refused(let refusal):
            self.init(category, refusal.description, field: category == .notFound ? nil : refusal.field)
        case .store(let storeError):
            switch storeError {
            case .versionConflict, .commandIDReused, .invalidValue, .unknownOutcome, .lateDecision:
                self.init(category, storeError.description)
            default:
                self.init(
                    category, "the event log is unavailable; nothing was written. Retry with the same Idempotency-Key")
            }
        }
    }
}

extension ErrorCategory {
    /// The category of a command that failed, wherever it was sent: the server answers with its ``status``, and the
    /// CLI, deciding a command against the database itself, exits with its ``exitCode``, as it would through
    /// `--server`.
    public init(_ error: CommandError) {
        switch error {
        case .refused(let refusal):
            switch refusal {
            case .alreadyLimited, .alreadyCancelled, .breakIDReused, .channelExists, .tooManyFutureBreaks:
                self = .conflict
            case .unknownChannel, .unknownBreak: self = .notFound
            default: self = .invalid
            }
        case .store(let storeError):
            switch storeError {
            case .versionConflict, .commandIDReused: self = .conflict
            case .invalidValue: self = .invalid
            default: self = .unavailable
            }
        }
    }
}

extension HTTPField.Name {
    /// The instant a playlist was rendered for (`cueline replay --at` gives the same bytes back).
    static let cuelineTick = HTTPField.Name("X-Cueline-Tick")!
    /// A client's key for a command: a retry with the same key is the same command.
    static let idempotencyKey = HTTPField.Name("Idempotency-Key")!
    /// Where an EventSource resumes a stream of events.
    static let lastEventID = HTTPField.Name("Last-Event-ID")!
    /// A feed hook delivery's signed Unix time.
    static let cuelineTimestamp = HTTPField.Name("X-Cueline-Timestamp")!
    /// A feed hook delivery's `sha256=<hex HMAC>`.
    static let cuelineSignature = HTTPField.Name("X-Cueline-Signature")!
}
