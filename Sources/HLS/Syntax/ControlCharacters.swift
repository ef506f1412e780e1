extension Unicode.Scalar {
    /// C0 (U+0000–U+001F, TAB, CR and LF included), DEL (U+007F) and C1 (U+0080–U+009F): characters that have no
    /// place in a playlist line, a stored label or a terminal.
    public var isControlCharacter: Bool {
        value < 0x20 || (0x7F...0x9F).contains(value)
    }
}

extension StringProtocol {
    /// Whether any scalar is a C0, DEL or C1 control character.
    public var containsControlCharacter: Bool {
        unicodeScalars.contains(where: \.isControlCharacter)
    }

    /// The text with each control character written as `\u{1B}`, for printing to a terminal: whatever a log holds,
    /// it cannot move the cursor, change colours or end a line.
    public var escapingControlCharacters: String {
        guard containsControlCharacter else { return String(self) }
        var out = ""
        for scalar in unicodeScalars {
            if scalar.isControlCharacter {
                out += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}
