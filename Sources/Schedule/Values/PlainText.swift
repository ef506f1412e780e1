import HLS

/// Text a person or a client wrote that Cueline stores, publishes or prints: a reason, an actor, a command id, a
/// client attribute value. No control characters (C0 including TAB and line breaks, DEL, C1): libpq would cut the
/// text at a NUL, a playlist cannot carry a line break, and a terminal obeys ESC. At most `maximumLength` UTF-8
/// bytes.
public struct PlainText: Hashable, Sendable, CustomStringConvertible {
    public let value: String

    /// Checks `text`; the error names `field` and says what is wrong.
    public init(_ text: String, field: String, maximumLength: Int = Limits.textBytes) throws(ScheduleError) {
        if let problem = Self.problem(in: text, maximumLength: maximumLength) {
            throw .invalidField(field, problem)
        }
        value = text
    }

    /// What is wrong with `text`, or nil when it is fine.
    public static func problem(in text: some StringProtocol, maximumLength: Int = Limits.textBytes) -> String? {
        if let scalar = text.unicodeScalars.first(where: \.isControlCharacter) {
            return "must not hold control characters (found U+\(hex4(scalar.value)))"
        }
        if text.utf8.count > maximumLength {
            return "must be at most \(maximumLength) bytes (got \(text.utf8.count))"
        }
        return nil
    }

    public var description: String { value }
}

func hex4(_ value: UInt32) -> String {
    let digits = String(value, radix: 16, uppercase: true)
    return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
}
