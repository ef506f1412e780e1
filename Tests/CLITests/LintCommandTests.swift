import Foundation
import TestSupport
import Testing

@Suite("cueline lint", .enabled(if: CLIRunner.isAvailable, "needs CUELINE_BIN (scripts/test.sh)"))
struct LintCommandTests {
    let fixtures = TestDatabase.repositoryRoot.appendingPathComponent("Tests/HLSTests/Fixtures").path

    @Test("a clean update exits 0")
    func clean() throws {
        let result = try CLIRunner().run([
            "lint", "\(fixtures)/golden/06-early-return.m3u8", "--previous", "\(fixtures)/golden/05-break-on-air.m3u8",
        ])
        #expect(result.status == 0, "\(result.stdout)")
        #expect(result.stdout.contains("0 errors, 0 warnings in 1 playlist"))
    }

    @Test("a changed attribute exits 1 naming the rule, the line and the fix")
    func changed() throws {
        let file = "\(fixtures)/lint/daterange.attribute-changed.fail.m3u8"
        let result = try CLIRunner().run([
            "lint", file, "--previous", "\(fixtures)/lint/daterange.attribute-changed.previous.m3u8",
        ])
        #expect(result.status == 1)
        #expect(
            result.stdout.contains(
                "\(file):20: error: date range brk-1: PLANNED-DURATION changed from 30.000 to 20.000 [daterange.attribute-changed]"
            ))
        #expect(result.stdout.contains("fix: never change a published attribute"))
    }

    @Test("several renditions are compared, and --json is machine-readable")
    func renditions() throws {
        let result = try CLIRunner().run([
            "lint", "--json", "\(fixtures)/lint/renditions.daterange-mismatch.fail.m3u8",
            "\(fixtures)/lint/renditions.daterange-mismatch.fail.rendition2.m3u8",
        ])
        #expect(result.status == 1)
        struct Report: Decodable {
            struct Item: Decodable { var rule: String }
            var findings: [Item]
            var errors: Int
        }
        let report = try JSONDecoder().decode(Report.self, from: Data(result.stdout.utf8))
        #expect(report.findings.map(\.rule) == ["renditions.daterange-mismatch"])
        #expect(report.errors == 1)
    }

    @Test("warnings pass unless --strict")
    func strict() throws {
        let file = "\(fixtures)/lint/pdt.every-segment.fail.m3u8"
        #expect(try CLIRunner().run(["lint", file]).status == 0)
        #expect(try CLIRunner().run(["lint", "--strict", file]).status == 1)
    }

    @Test("an unreadable file is one clear line")
    func missing() throws {
        let result = try CLIRunner().run(["lint", "/nonexistent.m3u8"])
        #expect(result.status == 1)
        #expect(result.stderrLines == ["error: cannot read /nonexistent.m3u8: no such file or not readable"])
    }
}
