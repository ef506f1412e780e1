import HLS

/// An absolute `http://` or `https://` URI with a host, as published in `X-ASSET-URI` / `X-ASSET-LIST` and asset
/// lists and used as a channel's public base URL: printable ASCII only (no whitespace, no control characters, no
/// double quote, which would end a quoted attribute value), at most `Limits.uriBytes` bytes.
public struct AbsoluteURI: Hashable, Sendable, CustomStringConvertible {
    public let value: String

    /// Checks `text`; the error names `field`.
    public init(_ text: String, field: String) throws(ScheduleError) {
        if let problem = Self.problem(in: text) { throw .invalidField(field, problem) }
        value = text
    }

    /// What is wrong with `text` as an absolute http(s) URI, or nil when it is fine.
    public static func problem(in text: String) -> String? {
        let shown = text.utf8.count > 80 ? String(text.prefix(80)).debugDescription + "…" : text.debugDescription
        let rest: Substring
        if text.hasPrefix("https://") {
            rest = text.dropFirst(8)
        } else if text.hasPrefix("http://") {
            rest = text.dropFirst(7)
        } else {
            return "\(shown.escapingControlCharacters) must be an absolute http:// or https:// URI"
        }
        guard let first = rest.first, first != "/", first != "?", first != "#", first != ":" else {
            return "\(shown.escapingControlCharacters) has no host"
        }
        return referenceProblem(in: text)
    }

    /// What is wrong with `text` as a URI reference that may be relative (a segment URI template, an `EXT-X-MAP`
    /// URI), or nil: printable ASCII without space or `"`, not starting with `#` (it would read as a tag), at most
    /// `Limits.uriBytes` bytes.
    public static func referenceProblem(in text: String) -> String? {
        let shown = text.utf8.count > 80 ? String(text.prefix(80)).debugDescription + "…" : text.debugDescription
        guard !text.isEmpty else { return "must not be empty" }
        guard text.utf8.count <= Limits.uriBytes else {
            return "must be at most \(Limits.uriBytes) bytes (got \(text.utf8.count))"
        }
        if let bad = text.unicodeScalars.first(where: { $0.value <= 0x20 || $0.value >= 0x7F || $0 == "\"" }) {
            let what =
                bad.isControlCharacter
                ? "a control character"
                : bad == " " ? "a space" : bad == "\"" ? "a double quote" : "a non-ASCII character (percent-encode it)"
            return "\(shown.escapingControlCharacters) holds \(what) (U+\(hex4(bad.value)))"
        }
        guard !text.hasPrefix("#") else { return "\(shown) must not start with '#'" }
        return nil
    }

    public var description: String { value }
}
