import HLS

/// An ad server's URL with placeholders Cueline fills for each asset-list request: `{break_id}`, `{channel}`,
/// `{duration}` (the break's planned seconds), `{start}` (its start, ISO 8601), `{primary_id}` (the viewer's
/// `_HLS_primary_id`) and `{param.NAME}` for a query parameter the player sent, NAME from ``allowedParameters``.
///
/// Checked when it is set: an absolute http(s) URI once filled, every placeholder known, none before the path (the
/// host is fixed when the break is placed: a viewer's parameters never choose which server Cueline asks). Every value
/// is percent-encoded (RFC 3986 unreserved characters kept) when filled.
public struct AdServerTemplate: Hashable, Sendable, Codable, CustomStringConvertible {
    public let value: String

    /// The player's query parameters a template may name (`{param.gdpr}`): consent strings (TCF, US privacy, GPP),
    /// device advertising identifiers and app identity, as ad servers' tags usually take them. Any other parameter a
    /// player sends is never passed on.
    public static let allowedParameters: [String] = [
        "gdpr", "gdpr_consent", "us_privacy", "gpp", "gpp_sid", "ifa", "ifa_type", "is_lat", "device_type",
        "app_bundle", "app_name", "app_store_url", "ppid", "lang",
    ]
    /// The placeholders besides `{param.NAME}`.
    public static let placeholders = ["break_id", "channel", "duration", "start", "primary_id"]
    /// The longest value a player's parameter (or `_HLS_primary_id`) may have to be passed on; a longer one is
    /// passed on empty.
    public static let parameterBytes = 512

    public init(_ text: String, field: String) throws(ScheduleError) {
        if let problem = Self.problem(in: text) { throw .invalidField(field, problem) }
        value = text
    }

    public init(from decoder: any Decoder) throws {
        value = try decoder.singleValueContainer().decode(String.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(value)
    }

    public var description: String { value }

    /// What is wrong with `text` as a template, or nil.
    public static func problem(in text: String) -> String? {
        var probe = ""
        var rest = Substring(text)
        while let open = rest.firstIndex(where: { $0 == "{" || $0 == "}" }) {
            probe += rest[..<open]
            guard rest[open] == "{", let close = rest[open...].firstIndex(of: "}") else {
                return "\(shown(text)) has an unmatched '\(rest[open])'"
            }
            let name = rest[rest.index(after: open)..<close]
            guard isKnown(name) else {
                return
                    "\(shown(text)) names the unknown placeholder {\(String(name.prefix(40)).escapingControlCharacters)}: use {\(placeholders.joined(separator: "}, {"))} or {param.NAME} with NAME one of \(allowedParameters.joined(separator: ", "))"
            }
            guard Self.pathStarted(probe) else {
                return "\(shown(text)) has a placeholder before its path: the ad server's host is fixed when it is set"
            }
            probe += "x"
            rest = rest[rest.index(after: close)...]
        }
        probe += rest
        return AbsoluteURI.problem(in: probe)
    }

    /// Whether `prefix` (a template's text before a placeholder) already reaches the path: `scheme://host/`.
    static func pathStarted(_ prefix: String) -> Bool {
        guard let schemeEnd = prefix.range(of: "://") else { return false }
        let afterScheme = prefix[schemeEnd.upperBound...]
        return afterScheme.contains("/") || afterScheme.contains("?")
    }

    static func isKnown(_ name: Substring) -> Bool {
        if placeholders.contains(String(name)) { return true }
        guard name.hasPrefix("param.") else { return false }
        return allowedParameters.contains(String(name.dropFirst(6)))
    }

    static func shown(_ text: String) -> String {
        (text.utf8.count > 80 ? String(text.prefix(80)) + "…" : text).debugDescription.escapingControlCharacters
    }

    /// What a request fills the placeholders with.
    public struct Values: Sendable {
        public var breakID: String
        public var channel: String
        public var durationMilliseconds: Int64
        public var start: Timestamp
        public var primaryID: String?
        /// The player's query parameters (any; only allowed names are read).
        public var parameters: [String: String]

        public init(
            breakID: String, channel: String, durationMilliseconds: Int64, start: Timestamp, primaryID: String?,
            parameters: [String: String] = [:]
        ) {
            self.breakID = breakID
            self.channel = channel
            self.durationMilliseconds = durationMilliseconds
            self.start = start
            self.primaryID = primaryID
            self.parameters = parameters
        }
    }

    /// The URL to ask for `values`.
    public func url(_ values: Values) -> String {
        var out = ""
        var rest = Substring(value)
        while let open = rest.firstIndex(of: "{"), let close = rest[open...].firstIndex(of: "}") {
            out += rest[..<open]
            let name = rest[rest.index(after: open)..<close]
            let filled: String
            switch name {
            case "break_id": filled = values.breakID
            case "channel": filled = values.channel
            case "duration":
                // Whole seconds as an integer (`30`), else with milliseconds (`12.500`).
                let milliseconds = values.durationMilliseconds
                filled =
                    milliseconds % 1000 == 0
                    ? "\(milliseconds / 1000)" : "\(DecimalNumber(milliseconds: milliseconds))"
            case "start": filled = values.start.iso8601
            case "primary_id": filled = Self.bounded(values.primaryID)
            default: filled = Self.bounded(values.parameters[String(name.dropFirst(6))])
            }
            // `.` and `..` would climb the ad server's path: their dots are encoded too.
            out +=
                filled == "." || filled == ".."
                ? String(repeating: "%2E", count: filled.count) : Self.percentEncoded(filled)
            rest = rest[rest.index(after: close)...]
        }
        return out + rest
    }

    static func bounded(_ text: String?) -> String {
        guard let text, text.utf8.count <= parameterBytes else { return "" }
        return text
    }

    /// RFC 3986 §2.3: unreserved characters as they are, every other byte of the UTF-8 as %XX.
    public static func percentEncoded(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let digits = Array("0123456789ABCDEF".unicodeScalars)
                out.unicodeScalars.append("%")
                out.unicodeScalars.append(digits[Int(byte >> 4)])
                out.unicodeScalars.append(digits[Int(byte & 0xF)])
            }
        }
        return out
    }
}
