import Foundation

/// Any JSON value, decoded and encoded as is: the `when` values and command templates of feed hook rules, and the
/// payloads hooks receive, whose shape only the rules know.
public enum JSONValue: Codable, Sendable, Hashable {
    case null
    case bool(Bool)
    /// A number written without a fraction or exponent that fits 64 bits: kept exact (delivery ids).
    case integer(Int64)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .integer(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .integer(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    /// The value at a dotted path of object keys (`score.home`), or nil.
    subscript(path path: String) -> JSONValue? {
        var current: JSONValue? = self
        for part in path.split(separator: ".") {
            guard case .object(let object)? = current else { return nil }
            current = object[String(part)]
        }
        return current
    }

    /// Whether a payload's value matches a rule's: strings equal, numbers equal whatever their notation (`3` and
    /// `3.0`), booleans equal. Other kinds never match.
    func sameValue(as other: JSONValue) -> Bool {
        switch (self, other) {
        case (.string(let a), .string(let b)): a == b
        case (.bool(let a), .bool(let b)): a == b
        case (.integer(let a), .integer(let b)): a == b
        case (.integer(let a), .number(let b)), (.number(let b), .integer(let a)): Double(a) == b
        case (.number(let a), .number(let b)): a == b
        default: false
        }
    }
}
