import Foundation
import TestSupport
import Testing

@Suite(
    "cueline checkpoint",
    .enabled(
        if: TestDatabase.isConfigured && CLIRunner.isAvailable, "needs DATABASE_URL and CUELINE_BIN (scripts/test.sh)"))
struct CheckpointCommandTests {
    @Test("writes checkpoints for every channel or the named ones; an unknown channel fails by name with exit 1")
    func checkpoints() async throws {
        let (_, cli) = try await CLIRunner.onFreshDatabase(channels: ["one", "two"])
        let table = try cli.run(["checkpoint"])
        #expect(table.status == 0)
        let rows = table.stdout.split(separator: "\n")
        #expect(
            rows.count == 3 && rows[1].hasPrefix("one ") && rows[2].hasPrefix("two ")
                && rows.dropFirst().allSatisfy { $0.hasSuffix("ok") }, "\(table.stdout)")
        let json = try cli.run(["checkpoint", "--json", "two", "nope"])
        #expect(json.status == 1)
        let lines = json.stdout.split(separator: "\n").map {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        #expect(lines.count == 2 && lines[0]?["channel"] as? String == "two" && lines[0]?["written"] as? Int == 0)
        #expect(
            lines.count == 2 && lines[1]?["channel"] as? String == "nope"
                && (lines[1]?["error"] as? String)?.contains("no such channel") == true)
    }
}
