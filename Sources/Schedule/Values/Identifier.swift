/// The id of a channel, break, rendition or hook, and the channels a token is scoped to: 1–64 characters of
/// `a-z`, `0-9`, `_` and `-`, the first a letter or a digit. Safe in URLs, file names, SQL `LIKE`-free matching
/// and playlist attribute values, and never mistaken for an option (`-x`) or a hidden name (`_x`).
///
/// The one rule: the HTTP API, the CLI, the hooks file, tokens and the OpenAPI document all check it through this
/// type (`init?(_:)` is the one validating initializer; the others call it), so every channel that can be created can
/// be named in a token's scope. It is the stricter of the rules there were: the database's own check on token names
/// in `Migrations/0004_tokens.sql` is this rule with `.` added after the first character (`isValidTokenName`).
///
/// Channels created before the rule was this strict (`_news`, `-x`) still load from the log, serve their
/// playlists and can be read and replayed, but take no new commands: the API answers 404 for them and the CLI
/// refuses them as an argument (exit 2). Recreate such a channel under a valid id to keep scheduling it.
public struct Identifier: Hashable, Sendable, Comparable, Codable, CustomStringConvertible {
    public let rawValue: String

    /// The rule as a regular expression, for the OpenAPI document and error messages.
    public static let pattern = "^[a-z0-9][a-z0-9_-]{0,63}$"
    /// The rule ids were created with before `pattern` (``init(stored:)``), for ids in answers.
    public static let storedPattern = "^[a-z0-9_-]{1,64}$"
    /// Token names: `pattern` with `.` allowed after the first character.
    public static let tokenNamePattern = "^[a-z0-9][a-z0-9._-]{0,63}$"
    /// The rule in words, for error messages.
    public static let rule = "1–64 characters of a-z, 0-9, '_' or '-', starting with a letter or a digit"

    public init?(_ text: some StringProtocol) {
        guard Self.isValid(text) else { return nil }
        rawValue = String(text)
    }

    /// Checks `text` and names `field` in the error when it does not follow the rule.
    public init(_ text: String, field: String) throws(ScheduleError) {
        guard let valid = Identifier(text) else {
            throw .invalidField(field, "\(text.debugDescription.escapingControlCharacters) must be \(Self.rule)")
        }
        self = valid
    }

    /// An id read back from the log: today's rule, or the rule ids were created with before it (`[a-z0-9_-]`,
    /// 1–64: `_news`, `-x`). Such a channel still loads, serves and replays, byte for byte, but takes no new command:
    /// ``isCurrent`` is false, and the API, the CLI and `cueline_append` check ids by today's rule.
    public init?(stored text: some StringProtocol) {
        let bytes = text.utf8
        guard (1...64).contains(bytes.count),
            bytes.allSatisfy({ Self.isLowerAlphanumeric($0) || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-") })
        else { return nil }
        rawValue = String(text)
    }

    /// Whether the id follows today's rule (false only for one read back from the log under the earlier rule).
    public var isCurrent: Bool { Self.isValid(rawValue) }

    public static func isValid(_ text: some StringProtocol) -> Bool {
        matches(text, allowingDot: false)
    }

    /// Whether `text` is a valid token name: the identifier rule, plus `.` after the first character.
    public static func isValidTokenName(_ text: some StringProtocol) -> Bool {
        matches(text, allowingDot: true)
    }

    private static func matches(_ text: some StringProtocol, allowingDot: Bool) -> Bool {
        let bytes = text.utf8
        guard (1...64).contains(bytes.count), let first = bytes.first, isLowerAlphanumeric(first) else { return false }
        return bytes.dropFirst().allSatisfy {
            isLowerAlphanumeric($0) || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-")
                || (allowingDot && $0 == UInt8(ascii: "."))
        }
    }

    private static func isLowerAlphanumeric(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
            || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
    }

    public var description: String { rawValue }

    public static func < (lhs: Identifier, rhs: Identifier) -> Bool { lhs.rawValue < rhs.rawValue }

    /// Set to `true` in a decoder's `userInfo` that reads what Cueline itself wrote (the log's payloads, snapshots,
    /// the server's answers read by the CLI): ids are then read by the rule they were created with
    /// (``init(stored:)``), so a channel of the earlier rule still loads. Everything else (a hooks file, a token's
    /// scope) is read by today's rule.
    public static let storedRuleKey = CodingUserInfoKey(rawValue: "cueline.identifier.stored")!

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        let stored = decoder.userInfo[Self.storedRuleKey] as? Bool == true
        guard let valid = stored ? Identifier(stored: text) : Identifier(text) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "must be \(Self.rule)")
        }
        self = valid
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

extension Identifier: ExpressibleByStringLiteral {
    /// An id written in code (a default, a test): a literal that does not follow the rule is a programming error.
    public init(stringLiteral value: String) {
        guard let valid = Identifier(value) else {
            preconditionFailure("\(value.debugDescription) must be \(Self.rule)")
        }
        self = valid
    }
}

/// A channel's id.
public typealias ChannelID = Identifier

/// A break's id: the same rule as a channel's.
public typealias BreakID = Identifier
