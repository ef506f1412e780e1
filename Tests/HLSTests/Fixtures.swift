import Foundation

enum Fixtures {
    static let root = Bundle.module.resourceURL!.appendingPathComponent("Fixtures")

    static func text(_ relativePath: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(relativePath), encoding: .utf8)
    }

    static func goldenNames() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("golden").path)
            .filter { $0.hasSuffix(".m3u8") }.sorted()
    }
}
