import Foundation
import HLS
import Testing

/// Each rule id in `LintRules.catalogue` has fixtures in `Fixtures/lint/`:
/// `<rule>.fail.m3u8` (must trigger the rule) and `<rule>.pass.m3u8` (must be entirely clean), plus for update
/// rules `<rule>.previous.m3u8` (and optionally `<rule>.pass.previous.m3u8`), and for rendition rules
/// `<rule>.fail.rendition2.m3u8` / `<rule>.pass.rendition2.m3u8`.
@Suite("Lint rules")
struct LintRuleTests {
    private func optional(_ name: String) -> String? {
        try? Fixtures.text("lint/" + name)
    }

    private func findings(_ current: String, previous: String?, rendition2: String?, full: String? = nil) throws
        -> [Finding]
    {
        var findings = Lint.check(current)
        if let full {
            findings += Lint.checkDelta(
                full: try PlaylistParser.parseMedia(full), delta: try PlaylistParser.parseMedia(current))
        }
        if let previous {
            findings += Lint.checkUpdate(
                previous: try PlaylistParser.parseMedia(previous), current: try PlaylistParser.parseMedia(current))
        }
        if let rendition2 {
            findings += Lint.check(rendition2)
            findings += Lint.checkRenditions([
                ("720p", try PlaylistParser.parseMedia(current)), ("480p", try PlaylistParser.parseMedia(rendition2)),
            ])
        }
        return findings
    }

    @Test(
        "the failing fixture triggers the rule and the passing fixture is clean",
        arguments: LintRules.catalogue.map(\.id))
    func rule(id: String) throws {
        let fail = try Fixtures.text("lint/\(id).fail.m3u8")
        let pass = try Fixtures.text("lint/\(id).pass.m3u8")
        let previous = optional("\(id).previous.m3u8")
        let passPrevious = optional("\(id).pass.previous.m3u8") ?? previous

        // Delta rules: `<rule>.full.m3u8` is the full playlist both fixtures are delta updates of.
        let full = optional("\(id).full.m3u8")
        let failing = try findings(
            fail, previous: previous, rendition2: optional("\(id).fail.rendition2.m3u8"), full: full)
        #expect(failing.contains { $0.rule == id }, "expected \(id), got \(failing.map(\.rule))")

        let passing = try findings(
            pass, previous: passPrevious, rendition2: optional("\(id).pass.rendition2.m3u8"), full: full)
        #expect(passing.isEmpty, "\(passing.map(\.description).joined(separator: "\n"))")
        for earlier in [previous, passPrevious].compactMap({ $0 }) {
            #expect(Lint.check(earlier).isEmpty, "the previous playlist itself must be clean")
        }
    }

    @Test("every fixture file belongs to a rule in the catalogue")
    func noStrayFixtures() throws {
        let ids = Set(LintRules.catalogue.map(\.id))
        let files = try FileManager.default.contentsOfDirectory(
            atPath: Fixtures.root.appendingPathComponent("lint").path)
        for file in files {
            let rule = file.components(separatedBy: ".").prefix { !["fail", "pass", "previous", "full"].contains($0) }
                .joined(separator: ".")
            #expect(ids.contains(rule), "\(file) names no rule")
        }
    }

    @Test("findings name the line and carry the fix")
    func lineAndFix() throws {
        let findings = Lint.check(try Fixtures.text("lint/targetduration.exceeded.fail.m3u8"))
        let finding = try #require(findings.first { $0.rule == "targetduration.exceeded" })
        #expect(finding.line == 12)
        #expect(finding.fix == LintRules.fix(for: "targetduration.exceeded"))
        #expect(finding.description.contains("line 12"))
    }
}
