import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// The API's answers that are not errors (errors render themselves: ``APIError``).
enum Responses {
    static let playlistContentType = "application/vnd.apple.mpegurl"

    static func playlist(_ text: String, maxAge: Int) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = playlistContentType
        headers[.cacheControl] = "max-age=\(maxAge)"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    /// `max-age=N` for the playlists' ages (0...63 s), spelled once rather than per request.
    private static let maxAgeValues = (0..<64).map { "max-age=\($0)" }

    /// `max-age=N`, from the kept texts for the usual ages.
    static func maxAge(_ seconds: Int) -> String {
        maxAgeValues.indices.contains(seconds) ? maxAgeValues[seconds] : "max-age=\(seconds)"
    }

    /// A playlist already encoded (the follower keeps each window's bodies): headers from constants, the body a
    /// reference to the rendered bytes, no copy.
    static func playlist(_ body: ByteBuffer, maxAge: Int, tick: String? = nil) -> Response {
        var headers = HTTPFields()
        headers.reserveCapacity(tick == nil ? 2 : 3)
        headers[.contentType] = playlistContentType
        headers[.cacheControl] = Self.maxAge(maxAge)
        if let tick { headers[.cuelineTick] = tick }
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: body))
    }

    static func text(_ text: String, contentType: String? = nil, cacheControl: String? = nil) -> Response {
        var headers = HTTPFields()
        if let contentType { headers[.contentType] = contentType }
        if let cacheControl { headers[.cacheControl] = cacheControl }
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
    }
}

/// A JSON request body (snake_case keys, at most 64 KiB), sent as `application/json`.
///
/// The media type is required: a web page can send a `text/plain` or form POST to any origin without asking first
/// (no CORS preflight), so a command route that took any body would take commands from any page a console's
/// operator visits while a server runs with `--unauthenticated-commands`. `application/json` needs the preflight.
///
/// - Throws: 400 naming `Content-Type` for another media type; 413 beyond 64 KiB; `refusal(error)` when it does not decode;
///   with `keys`, 422 naming a key given twice or not in the shape (``StrictKeys``).
func decodeBody<T: Decodable>(
    _ type: T.Type, _ request: Request, keys: StrictKeys.Shape? = nil, refusal: (any Error) -> APIError
) async throws -> T {
    let mediaType = request.headers[.contentType]?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces)
        .lowercased()
    guard mediaType == "application/json" else {
        throw APIError(
            .badRequest,
            "Content-Type must be application/json (it is \(mediaType.map { "'\($0)'" } ?? "missing")): the body is a JSON object",
            field: "Content-Type")
    }
    let body = try await request.body.collect(upTo: 64 * 1024)
    // JSON on a network is UTF-8 (RFC 8259 §8.1). The decoder also reads UTF-16 and UTF-32 and skips a byte order
    // mark, which the key checks (``StrictKeys``) read as bytes: such a body is refused, not half-checked.
    let bytes = body.readableBytesView
    guard !bytes.starts(with: [0xEF, 0xBB, 0xBF]), !bytes.contains(0), String(validating: bytes, as: UTF8.self) != nil
    else {
        throw APIError.invalid("body", "must be JSON in UTF-8, without a byte order mark")
    }
    switch decodeJSON(type, Data(buffer: body)) {
    case .success(let value):
        if let keys, let problem = StrictKeys.problem(Array(buffer: body), keys) { throw problem.error }
        return value
    case .failure(let error): throw refusal(error)
    }
}

/// What is wrong in a JSON body, as a field and a reason an operator can act on: `pod[0].uri` "is required", `in`
/// "must be a number", or `body` "is not valid JSON: …", instead of the decoder's own dump of its coding path.
/// `snakeCase`: the keys were decoded from snake_case (``WireJSON``), so the names are given back as sent.
struct DecodingProblem: Sendable, Equatable {
    var field: String
    var reason: String

    init(field: String, reason: String) {
        self.field = field
        self.reason = reason
    }

    init(_ error: any Error, snakeCase: Bool) {
        func name(_ key: any CodingKey) -> String {
            let text = key.stringValue
            guard snakeCase, text.first?.isLowercase == true else { return text }
            return text.reduce(into: "") { name, character in
                if character.isUppercase { name += "_" + character.lowercased() } else { name.append(character) }
            }
        }
        func path(_ keys: [any CodingKey]) -> String {
            // The keys of a free map (`attributes`) are the client's own, given back as written.
            var text = "", free = false
            for key in keys {
                text += key.intValue.map { "[\($0)]" } ?? ".\(free ? key.stringValue : name(key))"
                free = free || key.stringValue == "attributes"
            }
            return text.isEmpty ? "body" : String(text.drop { $0 == "." })
        }
        func kind(_ type: Any.Type) -> String {
            switch type {
            case is String.Type, is Substring.Type: "a string"
            case is Int.Type, is Int64.Type, is Int32.Type, is UInt.Type, is UInt64.Type: "a whole number"
            case is Double.Type, is Float.Type: "a number"
            case is Bool.Type: "true or false"
            default:
                String(describing: type).hasPrefix("Array")
                    ? "a list"
                    : String(describing: type).hasPrefix("Dictionary") || String(describing: type).hasSuffix("Request")
                        ? "an object"
                        : "\(type)"
            }
        }
        guard let error = error as? DecodingError else {
            (field, reason) = ("body", "is not valid JSON: \(error)")
            return
        }
        switch error {
        case .keyNotFound(let key, let context):
            (field, reason) = (path(context.codingPath + [key]), "is required")
        case .typeMismatch(let type, let context):
            (field, reason) = (
                path(context.codingPath), "must be \(context.codingPath.isEmpty ? "a JSON object" : kind(type))"
            )
        case .valueNotFound(let type, let context):
            (field, reason) = (path(context.codingPath), "must be \(kind(type)), not null")
        case .dataCorrupted(let context):
            // The parser names no key, nor what it refused (a number out of range, `1e400`, reads as any other
            // malformed body): said as it is.
            let words =
                context.underlyingError.map { "\(context.debugDescription) (\($0))" } ?? context.debugDescription
            (field, reason) =
                context.codingPath.isEmpty
                ? ("body", "is not valid JSON: \(words)")
                : (path(context.codingPath), "is not valid: \(words)")
        @unknown default:
            (field, reason) = ("body", "is not valid: \(error)")
        }
    }

    /// 422 naming the field.
    var error: APIError { APIError.invalid(field, reason) }
}

func decodeJSON<T: Decodable>(_ type: T.Type, _ data: Data) -> Result<T, any Error> {
    Result { try WireJSON.decode(type, from: data) }
}

/// The API's JSON, in the one wire configuration (``WireJSON``: sorted keys, snake_case).
func encodeJSON(_ value: some Encodable) -> Data {
    (try? WireJSON.encode(value)) ?? Data(#"{"error":"encoding failed"}"#.utf8)
}

func jsonResponse(_ value: some Encodable) -> Response {
    jsonResponse(encoded: encodeJSON(value))
}

/// A JSON answer of bytes already encoded as the wire's.
func jsonResponse(encoded data: Data) -> Response {
    var headers = HTTPFields()
    headers[.contentType] = "application/json"
    headers[.cacheControl] = "no-cache"
    return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
}
