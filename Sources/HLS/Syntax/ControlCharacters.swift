extension Unicode.Scalar {
    /// C0 (U+0000–U+001F, TAB, CR and LF included), DEL (U+007F) and C1 (U+0080–U+009F): characters that have no
    /// place in a playlist line, a stored label or a terminal.
    public var isControlCharacter: Bool {
        value < 0x20 || (0x7F...0x9F).contains(value)
    }

    /// Characters that free text may hold but that change what a terminal shows without being seen: the line and
    /// paragraph separators (U+2028, U+2029), bidirectional embeddings, overrides and isolates (U+202A–U+202E,
    /// U+2066–U+2069), zero-width spaces, joiners and direction marks (U+200B–U+200F) and the byte order mark
    /// (U+FEFF). A reason holding U+202E can make `cueline log` show text in an order it was not written in.
    public var isInvisibleFormatCharacter: Bool {
        switch value {
        case 0x200B...0x200F, 0x2028...0x202E, 0x2066...0x2069, 0xFEFF: return true
        default: return false
        }
    }
}

extension StringProtocol {
    /// Whether any scalar is a C0, DEL or C1 control character.
    public var containsControlCharacter: Bool {
        unicodeScalars.contains(where: \.isControlCharacter)
    }

    /// The text with each control character, and each invisible format character (separators, bidi controls,
    /// zero-width characters), written as `\u{1B}`, for printing to a terminal: whatever a log holds, it cannot move
    /// the cursor, change colours, end a line or reorder what is shown.
    public var escapingControlCharacters: String {
        guard unicodeScalars.contains(where: { $0.isControlCharacter || $0.isInvisibleFormatCharacter }) else {
            return String(self)
        }
        var out = ""
        for scalar in unicodeScalars {
            if scalar.isControlCharacter || scalar.isInvisibleFormatCharacter {
                out += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}
