/// A segment URI template (`seg{n}.ts`, `{rendition}/{n%1000}/{n}.ts`) parsed once, then expanded per segment
/// without reading the template again.
///
/// Tokens: `{n}` the media sequence number, `{n%K}` its remainder by K (a positive whole number), with `partIndex`
/// `{p}` the index of a part in its segment (LL-HLS part templates), and whatever `substitutions` name (e.g.
/// `rendition`); any other brace, an unclosed `{` included, is kept as written.
/// `expand(_:)` writes exactly what `RenditionConfig.segmentURI(_:)` wrote from the template text.
public struct URITemplate: Hashable, Sendable {
    enum Part: Hashable, Sendable {
        case literal(String)
        case number
        case remainder(Int64)
        case partIndex
    }

    let parts: [Part]

    public init(_ template: String, substitutions: [String: String] = [:], partIndex: Bool = false) {
        var parts: [Part] = []
        var literal = ""
        func flush() {
            if !literal.isEmpty { parts.append(.literal(literal)) }
            literal = ""
        }
        var rest = Substring(template)
        while let open = rest.firstIndex(of: "{") {
            literal += rest[..<open]
            guard let close = rest[open...].firstIndex(of: "}") else {
                // An unclosed `{`: the rest is kept as written (once).
                rest = rest[open...]
                break
            }
            let token = rest[rest.index(after: open)..<close]
            if token == "n" {
                flush()
                parts.append(.number)
            } else if partIndex && token == "p" {
                flush()
                parts.append(.partIndex)
            } else if let value = substitutions[String(token)] {
                literal += value
            } else if token.hasPrefix("n%"), let modulus = Int64(token.dropFirst(2)), modulus > 0 {
                flush()
                parts.append(.remainder(modulus))
            } else {
                literal += rest[open...close]
            }
            rest = rest[rest.index(after: close)...]
        }
        literal += rest
        flush()
        self.parts = parts
    }

    /// The URI of segment `n` (of its part `part`, for a part template).
    public func expand(_ n: Int64, part: Int = 0) -> String {
        if parts.count == 1, case .literal(let text) = parts[0] { return text }
        // No reserved capacity: a URI of up to 15 bytes stays inline in the String, without an allocation.
        var out = ""
        for piece in parts {
            switch piece {
            case .literal(let text): out += text
            case .number: out += String(n)
            case .remainder(let modulus): out += String(n % modulus)
            case .partIndex: out += String(part)
            }
        }
        return out
    }
}
