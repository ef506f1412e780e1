/// A parsed attribute value, before it is given a type.
public enum AttributeValue: Hashable, Sendable {
    /// `"text"`, without the quotes.
    case quoted(String)
    /// Anything unquoted: integers, decimals, hex, enumerated strings, resolutions.
    case unquoted(String)

    var text: String {
        switch self {
        case .quoted(let text), .unquoted(let text): return text
        }
    }
}

/// Splits `NAME=VALUE,NAME="VALUE",…` into ordered pairs (§4.2). Commas inside quotes belong to the value.
enum AttributeListParser {
    struct Failure: Error {
        var message: String
    }

    static func parse(_ text: Substring) throws(Failure) -> [(name: String, value: AttributeValue)] {
        var result: [(String, AttributeValue)] = []
        var index = text.startIndex
        while index < text.endIndex {
            guard let equals = text[index...].firstIndex(of: "=") else {
                throw Failure(message: "attribute \(String(text[index...]).debugDescription) has no '='")
            }
            let name = String(text[index..<equals])
            guard isAttributeName(name) else {
                throw Failure(message: "attribute name \(name.debugDescription) is not [A-Z0-9-]+")
            }
            var cursor = text.index(after: equals)
            let value: AttributeValue
            if cursor < text.endIndex, text[cursor] == "\"" {
                let open = text.index(after: cursor)
                guard let close = text[open...].firstIndex(of: "\"") else {
                    throw Failure(message: "attribute \(name) has an unterminated quoted string")
                }
                value = .quoted(String(text[open..<close]))
                cursor = text.index(after: close)
                guard cursor == text.endIndex || text[cursor] == "," else {
                    throw Failure(message: "attribute \(name) has text after its closing quote")
                }
            } else {
                let end = text[cursor...].firstIndex(of: ",") ?? text.endIndex
                let raw = String(text[cursor..<end])
                guard !raw.isEmpty else { throw Failure(message: "attribute \(name) has an empty value") }
                value = .unquoted(raw)
                cursor = end
            }
            result.append((name, value))
            index = cursor < text.endIndex ? text.index(after: cursor) : cursor
        }
        return result
    }
}
