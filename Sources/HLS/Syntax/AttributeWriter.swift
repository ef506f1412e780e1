/// Builds an attribute list (`NAME=VALUE,NAME=VALUE`) in the order attributes are added, enforcing the draft's
/// syntax: a value that cannot be represented is an error, never a broken line.
struct AttributeWriter {
    private(set) var text = ""
    private var names: Set<String> = []

    mutating func append(_ name: String, raw value: String) throws(RenderError) {
        guard isAttributeName(name) else { throw .invalidAttributeName(name) }
        guard names.insert(name).inserted else { throw .duplicateAttribute(name) }
        if !text.isEmpty { text += "," }
        text += name
        text += "="
        text += value
    }

    mutating func quoted(_ name: String, _ value: String?) throws(RenderError) {
        guard let value else { return }
        try append(name, raw: try quote(value, attribute: name))
    }

    mutating func enumerated(_ name: String, _ value: String?) throws(RenderError) {
        guard let value else { return }
        guard !value.isEmpty,
            value.utf8.allSatisfy({ $0 > 0x20 && $0 != UInt8(ascii: ",") && $0 != UInt8(ascii: "\"") && $0 < 0x7F })
        else { throw .invalidEnumeratedString(attribute: name, value: value) }
        try append(name, raw: value)
    }

    mutating func integer(_ name: String, _ value: (some BinaryInteger)?) throws(RenderError) {
        guard let value else { return }
        guard value >= 0 else { throw .negativeInteger(attribute: name) }
        try append(name, raw: String(value))
    }

    mutating func decimal(_ name: String, _ value: DecimalNumber?, signed: Bool = false) throws(RenderError) {
        guard let value else { return }
        guard signed || value.mantissa >= 0 else { throw .negativeDecimal(attribute: name, value: value.description) }
        try append(name, raw: value.description)
    }

    mutating func date(_ name: String, _ value: Timestamp?) throws(RenderError) {
        guard let value else { return }
        try append(name, raw: "\"" + value.iso8601 + "\"")
    }

    mutating func flag(_ name: String, _ value: Bool, when expected: Bool = true) throws(RenderError) {
        guard value == expected else { return }
        try append(name, raw: expected ? "YES" : "NO")
    }

    mutating func yesNo(_ name: String, _ value: Bool?) throws(RenderError) {
        guard let value else { return }
        try append(name, raw: value ? "YES" : "NO")
    }

    mutating func hex(_ name: String, _ value: HexBytes?) throws(RenderError) {
        guard let value else { return }
        guard !value.bytes.isEmpty else { throw .emptyHex(attribute: name) }
        try append(name, raw: value.description)
    }
}

/// `"value"`, refusing what a quoted string cannot hold: CR, LF and `"`.
func quote(_ value: String, attribute: String) throws(RenderError) -> String {
    guard !value.utf8.contains(where: { $0 == 0x0A || $0 == 0x0D || $0 == 0x22 }) else {
        throw .unrepresentableQuotedString(attribute: attribute, value: value)
    }
    return "\"" + value + "\""
}

/// `[A-Z0-9-]+` (§4.2).
func isAttributeName(_ name: String) -> Bool {
    !name.isEmpty
        && name.utf8.allSatisfy { ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == UInt8(ascii: "-") }
}

/// Why a playlist could not be rendered.
public enum RenderError: Error, Hashable, Sendable, CustomStringConvertible {
    case unrepresentableQuotedString(attribute: String, value: String)
    case invalidAttributeName(String)
    case duplicateAttribute(String)
    case invalidEnumeratedString(attribute: String, value: String)
    case negativeInteger(attribute: String)
    case negativeDecimal(attribute: String, value: String)
    case emptyHex(attribute: String)
    case invalidTargetDuration(Int)
    case invalidURI(String)
    case invalidClientAttributeName(String)
    case missingAttribute(tag: String, attribute: String)

    public var description: String {
        switch self {
        case .unrepresentableQuotedString(let attribute, let value):
            return
                "\(attribute): a quoted string cannot hold a line break or a double quote (\(value.debugDescription))"
        case .invalidAttributeName(let name):
            return "attribute name \(name.debugDescription) is not [A-Z0-9-]+"
        case .duplicateAttribute(let name):
            return "attribute \(name) appears twice in one tag"
        case .invalidEnumeratedString(let attribute, let value):
            return "\(attribute): \(value.debugDescription) is not a valid enumerated string"
        case .negativeInteger(let attribute):
            return "\(attribute) must be a non-negative integer"
        case .negativeDecimal(let attribute, let value):
            return "\(attribute) must not be negative (\(value))"
        case .emptyHex(let attribute):
            return "\(attribute) must hold at least one byte"
        case .invalidTargetDuration(let value):
            return "EXT-X-TARGETDURATION must be an integer of at least 1 (got \(value))"
        case .invalidURI(let uri):
            return "URI \(uri.debugDescription) is empty or holds a line break"
        case .invalidClientAttributeName(let name):
            return "client attribute \(name.debugDescription) must be X- followed by [A-Z0-9-]"
        case .missingAttribute(let tag, let attribute):
            return "\(tag) needs \(attribute)"
        }
    }
}
