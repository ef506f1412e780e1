import Schedule
import Foundation

/// The one JSON configuration of the HTTP API and of the CLI's `--json`: snake_case keys on the wire (the Swift
/// names of wire types are written so that they round-trip: `commandId`, not `commandID`), sorted keys, slashes
/// unescaped. Instants and seconds are strings written by `Timestamp` and `DecimalNumber` themselves (ISO 8601 in
/// UTC with milliseconds, `30.000`), so no date or number strategy is needed.
public enum WireJSON {
    /// An encoder for the wire: compact for HTTP answers, pretty-printed for people (`--json`).
    public static func encoder(pretty: Bool = false) -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting =
            pretty ? [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes] : [.sortedKeys, .withoutEscapingSlashes]
        encoder.keyEncodingStrategy = .convertToSnakeCase
        return encoder
    }

    /// A decoder for the wire. `answers`: the body is the server's own answer (the CLI reading it), whose ids are
    /// read by the rule they were created with (`Identifier.storedRuleKey`): a channel of the earlier rule is listed
    /// and read like any other. Requests are read by today's rule.
    public static func decoder(answers: Bool = false) -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        if answers { decoder.userInfo[Identifier.storedRuleKey] = true }
        return decoder
    }

    /// `value` as wire JSON.
    public static func encode(_ value: some Encodable, pretty: Bool = false) throws -> Data {
        try encoder(pretty: pretty).encode(value)
    }

    /// A wire type from wire JSON (`answers`: see `decoder(answers:)`).
    public static func decode<T: Decodable>(_ type: T.Type, from data: Data, answers: Bool = false) throws -> T {
        try decoder(answers: answers).decode(type, from: data)
    }
}

/// The body of every error answer: `{"error": "...", "field": "duration"}`; `field` names what is wrong when
/// one field is.
public struct ErrorBody: Codable, Sendable, Hashable {
    public var error: String
    public var field: String?

    public init(error: String, field: String? = nil) {
        self.error = error
        self.field = field
    }
}
