import Foundation

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// An XML document read whole into elements, for the small documents ad servers answer (VAST, VMAP): names without
/// their namespace prefix, attributes, children in order, and the text (character data and CDATA) of each element,
/// trimmed.
///
/// What an ad server may send is bounded before anything else: a document with a document type declaration is
/// refused unread (VAST and VMAP have none; a DTD is how entity expansion and external entities attack a parser),
/// and elements and depth are counted as they are read.
public struct XMLTree: Sendable {
    public struct Element: Sendable, Hashable {
        /// The local name (`vmap:AdBreak` is `AdBreak`).
        public var name: String
        /// By local name.
        public var attributes: [String: String]
        public var children: [Element]
        /// Character data and CDATA, joined and trimmed of white space at both ends.
        public var text: String

        public init(name: String, attributes: [String: String] = [:], children: [Element] = [], text: String = "") {
            self.name = name
            self.attributes = attributes
            self.children = children
            self.text = text
        }

        /// The first child named `name`.
        public func child(_ name: String) -> Element? { children.first { $0.name == name } }

        /// Every child named `name`, in document order.
        public func children(_ name: String) -> [Element] { children.filter { $0.name == name } }

        /// The first element down the path of child names (`path("Linear", "Duration")`).
        public func path(_ names: String...) -> Element? {
            var current: Element? = self
            for name in names { current = current?.child(name) }
            return current
        }
    }

    public enum Failure: Error, Hashable, Sendable, CustomStringConvertible {
        /// Not well-formed; the parser's reason and line.
        case notXML(String)
        /// A `<!DOCTYPE` (or `<!ENTITY`) declaration: refused before parsing.
        case documentType
        /// Not UTF-8 (a UTF-16 or UTF-32 byte-order mark or NUL bytes, or another declared encoding): refused before
        /// parsing, so that no declaration can hide from the check above.
        case notUTF8
        case tooManyElements(limit: Int)
        case tooDeep(limit: Int)

        public var description: String {
            switch self {
            case .notXML(let reason): "not well-formed XML (\(reason))"
            case .documentType: "it declares a document type (<!DOCTYPE>), which VAST and VMAP never do: refused unread"
            case .notUTF8: "it is not UTF-8: refused unread"
            case .tooManyElements(let limit): "more than \(limit) elements"
            case .tooDeep(let limit): "elements nested deeper than \(limit)"
            }
        }
    }

    /// Reads `data` into its root element.
    public static func parse(_ data: Data, maxElements: Int = 20_000, maxDepth: Int = 48) throws(Failure) -> Element {
        if !isUTF8(data) { throw .notUTF8 }
        if declaresDocumentType(data) { throw .documentType }
        let parser = XMLParser(data: data)
        parser.shouldProcessNamespaces = false
        parser.shouldReportNamespacePrefixes = false
        parser.shouldResolveExternalEntities = false
        let builder = Builder(maxElements: maxElements, maxDepth: maxDepth)
        parser.delegate = builder
        let parsed = parser.parse()
        if let failure = builder.failure { throw failure }
        guard parsed, let root = builder.root else {
            let error = parser.parserError.map { "\($0.localizedDescription)" } ?? "no root element"
            throw .notXML("line \(parser.lineNumber): \(error)")
        }
        return root
    }

    /// Whether `data` reads as UTF-8 only: no UTF-16 byte-order mark, no NUL byte, and an XML declaration that names
    /// no other encoding.
    static func isUTF8(_ data: Data) -> Bool {
        if data.starts(with: [0xFE, 0xFF]) || data.starts(with: [0xFF, 0xFE]) || data.contains(0) { return false }
        let head = String(decoding: data.prefix(200), as: UTF8.self)
        guard head.hasPrefix("<?xml") || head.hasPrefix("\u{FEFF}<?xml"),
            let declarationEnd = head.range(of: "?>"),
            let range = head[..<declarationEnd.lowerBound].range(of: "encoding=", options: .caseInsensitive)
        else { return true }
        let value = head[range.upperBound...].dropFirst().prefix { $0 != "\"" && $0 != "'" }.lowercased()
        return value == "utf-8" || value == "utf8"
    }

    /// Whether the prolog of `data` (before its first element) holds `<!DOCTYPE` or `<!ENTITY` (ASCII
    /// case-insensitive): the only place a document type can be declared. One in a CDATA section further on (an
    /// HTML companion) is only text.
    static func declaresDocumentType(_ data: Data) -> Bool {
        let patterns: [[UInt8]] = [Array("<!doctype".utf8), Array("<!entity".utf8)]
        return data.withUnsafeBytes { raw -> Bool in
            let bytes = raw.bindMemory(to: UInt8.self)
            guard bytes.count >= 8 else { return false }
            var index = 0
            while index < bytes.count {
                // The first element starts the body: `<` then neither `!` nor `?`.
                if bytes[index] == UInt8(ascii: "<"), index + 1 < bytes.count,
                    bytes[index + 1] != UInt8(ascii: "!"), bytes[index + 1] != UInt8(ascii: "?")
                {
                    return false
                }
                if bytes[index] == UInt8(ascii: "<"), index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "!") {
                    for pattern in patterns where index + pattern.count <= bytes.count {
                        var matches = true
                        for offset in 2..<pattern.count where bytes[index + offset] | 0x20 != pattern[offset] {
                            matches = false
                            break
                        }
                        if matches { return true }
                    }
                }
                index += 1
            }
            return false
        }
    }

    /// Local name: what follows the namespace prefix, if any.
    static func localName(_ qualified: String) -> String {
        guard let colon = qualified.lastIndex(of: ":") else { return qualified }
        return String(qualified[qualified.index(after: colon)...])
    }
}

/// Builds the tree from the parser's events; stops the parse at the first bound crossed.
private final class Builder: NSObject, XMLParserDelegate {
    let maxElements: Int
    let maxDepth: Int
    var stack: [XMLTree.Element] = []
    var root: XMLTree.Element?
    var failure: XMLTree.Failure?
    var elements = 0

    init(maxElements: Int, maxDepth: Int) {
        self.maxElements = maxElements
        self.maxDepth = maxDepth
    }

    func parser(
        _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName qName: String?,
        attributes attributeDict: [String: String] = [:]
    ) {
        guard failure == nil else { return }
        elements += 1
        if elements > maxElements {
            failure = .tooManyElements(limit: maxElements)
            parser.abortParsing()
            return
        }
        if stack.count >= maxDepth {
            failure = .tooDeep(limit: maxDepth)
            parser.abortParsing()
            return
        }
        var attributes: [String: String] = [:]
        for (key, value) in attributeDict { attributes[XMLTree.localName(key)] = value }
        stack.append(XMLTree.Element(name: XMLTree.localName(elementName), attributes: attributes))
    }

    func parser(
        _ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName qName: String?
    ) {
        guard failure == nil, var done = stack.popLast() else { return }
        done.text = done.text.trimmingCharacters(in: .whitespacesAndNewlines)
        if stack.isEmpty {
            root = done
        } else {
            stack[stack.count - 1].children.append(done)
        }
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) {
        guard failure == nil, !stack.isEmpty else { return }
        stack[stack.count - 1].text += string
    }

    func parser(_ parser: XMLParser, foundCDATA CDATABlock: Data) {
        guard failure == nil, !stack.isEmpty else { return }
        stack[stack.count - 1].text += String(decoding: CDATABlock, as: UTF8.self)
    }

    func parser(_ parser: XMLParser, resolveExternalEntityName name: String, systemID: String?) -> Data? { nil }
}
