import Foundation

/// JSON for values the store sends to the database (sorted keys, so the same value has the same bytes).
enum EventStoreJSON {
    static func encode(_ value: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Strings, integers and arrays of them: encoding cannot fail.
        return String(decoding: try! encoder.encode(value), as: UTF8.self)
    }
}
