import Foundation

/// The keys of a JSON body that has already decoded: a key given twice (the decoder keeps one of them silently, so a
/// proxy that checks the other and this server would read two different commands), and a key the request's type does
/// not have (`playoutlimit`, `restirct`: an operator's typo that would otherwise drop what it meant to say and let
/// the rest of the command through). Either is refused naming the key.
enum StrictKeys {
    /// What a JSON value may hold.
    indirect enum Shape: Sendable {
        /// An object with these keys, each holding its shape.
        case object([String: Shape])
        /// An object of any keys (`attributes`), each holding this shape.
        case map(Shape)
        /// A list of this shape.
        case list(Shape)
        /// Anything (a scalar, or what the decoder already checked).
        case any
        /// Any JSON, whose objects at every depth hold each key once (a feed's payload: its keys are the feed's).
        case anyOnce
    }

    /// The first problem in `bytes` read as `shape`, or nil. `bytes` must be JSON that decoded (this reads it
    /// without checking its grammar).
    static func problem(_ bytes: [UInt8], _ shape: Shape) -> DecodingProblem? {
        var reader = Reader(bytes: bytes)
        return reader.value(shape, path: "", depth: 0)
    }

    private struct Reader {
        let bytes: [UInt8]
        var index = 0

        /// Past this, values are skipped whole: no shape goes that deep.
        static let shapedDepth = 8
        /// Past this, an `anyOnce` value is skipped whole (the payload's decoder refuses deeper nesting anyway).
        static let anyDepth = 128

        mutating func value(_ shape: Shape, path: String, depth: Int) -> DecodingProblem? {
            skipWhitespace()
            guard index < bytes.count else { return nil }
            switch (bytes[index], shape) {
            case (UInt8(ascii: "{"), .object), (UInt8(ascii: "{"), .map):
                return depth < Self.shapedDepth ? object(shape, path: path, depth: depth) : skipValue()
            case (UInt8(ascii: "["), .list(let element)):
                return depth < Self.shapedDepth ? list(element, path: path, depth: depth) : skipValue()
            case (UInt8(ascii: "{"), .anyOnce):
                return depth < Self.anyDepth ? object(shape, path: path, depth: depth) : skipValue()
            case (UInt8(ascii: "["), .anyOnce):
                return depth < Self.anyDepth ? list(shape, path: path, depth: depth) : skipValue()
            default:
                return skipValue()
            }
        }

        private mutating func object(_ shape: Shape, path: String, depth: Int) -> DecodingProblem? {
            index += 1  // {
            var seen = Set<String>()
            while true {
                skipWhitespace()
                guard index < bytes.count else { return nil }
                if bytes[index] == UInt8(ascii: "}") {
                    index += 1
                    return nil
                }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                    continue
                }
                let key = string()
                let field = path.isEmpty ? key : "\(path).\(key)"
                guard seen.insert(key).inserted else { return DecodingProblem(field: field, reason: "is given twice") }
                let child: Shape
                switch shape {
                case .object(let fields):
                    guard let known = fields[key] else {
                        return DecodingProblem(
                            field: field, reason: "is not a field of this request (its fields are in /openapi.json)")
                    }
                    child = known
                case .map(let values): child = values
                case .anyOnce: child = .anyOnce
                default: child = .any
                }
                skipWhitespace()
                index += 1  // :
                if let problem = value(child, path: field, depth: depth + 1) { return problem }
            }
        }

        private mutating func list(_ element: Shape, path: String, depth: Int) -> DecodingProblem? {
            index += 1  // [
            var position = 0
            while true {
                skipWhitespace()
                guard index < bytes.count else { return nil }
                switch bytes[index] {
                case UInt8(ascii: "]"):
                    index += 1
                    return nil
                case UInt8(ascii: ","):
                    index += 1
                default:
                    if let problem = value(element, path: "\(path)[\(position)]", depth: depth + 1) { return problem }
                    position += 1
                }
            }
        }

        /// A string at `index` (its opening quote), unescaped as the decoder reads it.
        private mutating func string() -> String {
            let start = index
            index += 1
            var escaped = false
            while index < bytes.count, bytes[index] != UInt8(ascii: "\"") {
                if bytes[index] == UInt8(ascii: "\\") {
                    escaped = true
                    index += 1
                }
                index += 1
            }
            index += 1
            let raw = bytes[start..<min(index, bytes.count)]
            guard escaped else { return String(decoding: raw.dropFirst().dropLast(), as: UTF8.self) }
            return (try? JSONDecoder().decode(String.self, from: Data(raw))) ?? String(decoding: raw, as: UTF8.self)
        }

        /// Past one value of any kind, nested ones included, without recursion.
        private mutating func skipValue() -> DecodingProblem? {
            var depth = 0
            while index < bytes.count {
                switch bytes[index] {
                case UInt8(ascii: "\""):
                    _ = string()
                    if depth == 0 { return nil }
                    continue
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    if depth == 0 { return nil }  // the end of the enclosing value
                    depth -= 1
                    if depth == 0 {
                        index += 1
                        return nil
                    }
                case UInt8(ascii: ","):
                    if depth == 0 { return nil }
                default:
                    break
                }
                index += 1
            }
            return nil
        }

        private mutating func skipWhitespace() {
            while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
        }
    }
}

extension StrictKeys.Shape {
    /// `POST …/commands` (``CommandRequest``, snake_case).
    static let command = StrictKeys.Shape.object([
        "command": .any, "id": .any, "start": .any, "in": .any, "duration": .any, "asset_uri": .any, "asset_list": .any,
        "pod": .list(.object(["uri": .any, "duration": .any])), "restrict": .any, "snap": .any, "cue": .any,
        "attributes": .map(.any), "align": .any, "chunked": .any, "playout_limit": .any, "actor": .any, "reason": .any,
        "ad_server": .any, "skip_offset": .any, "skip_duration": .any, "skip_label": .any, "timeline_occupies": .any,
        "timeline_style": .any, "content_may_vary": .any,
    ])

    /// `POST …/scte35` (`SCTE35Request`, snake_case).
    static let scte35 = StrictKeys.Shape.object([
        "section": .any, "asset_uri": .any, "asset_list": .any, "duration": .any, "align": .any, "reason": .any,
    ])
}
