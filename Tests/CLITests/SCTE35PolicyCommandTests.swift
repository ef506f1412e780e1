import Foundation
import TestSupport
import Testing

/// `cueline scte35 policy set|show` and `cueline scte35 dry-run` against a running server that received sections over
/// HTTP (issue 33).
@Suite(
    "CLI: the SCTE-35 ingest policy and its dry-run",
    .enabled(
        if: TestDatabase.isConfigured && CLIRunner.isAvailable, "needs DATABASE_URL and CUELINE_BIN (scripts/test.sh)"))
struct SCTE35PolicyCommandTests {
    /// time_signal, immediate: a Provider Placement Opportunity Start of 20 s (event 7), a Provider Overlay Placement
    /// Opportunity Start (event 8), and the Placement Opportunity End of event 7 (CRCs computed for this test,
    /// decoded by threefive).
    static let start =
        "0xFC302F000000000000FFFFF001067F001D021B43554549000000077FFF00001B77400C054355454C7834000000001B1B2108"
    static let overlay =
        "0xFC302F000000000000FFFFF001067F001D021B43554549000000087FFF00001B77400C054355454C78380000000052DE69A8"
    static let end = "0xFC3028000000000000FFFFF001067F0016021443554549000000077FBF0C054355454C783500002FAD7CDE"

    static func write(_ text: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("policy-\(UUID().uuidString).json")
            .path
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test(
        "policy show and set (refused by name when wrong); sections kept as received; the dry-run as logged and proposed"
    )
    func policyAndDryRun() async throws {
        let (_, cli, server) = try await ServerProcess.onFreshDatabase(extraArguments: ["--unauthenticated-commands"])
        defer { server.stop() }
        #expect(
            try cli.run([
                "channel", "create", "auto", "--segment-duration", "2", "--window", "10", "--rendition",
                "720p,1000000,seg{n}.ts",
            ]).status == 0)
        let shown = try cli.run(["scte35", "policy", "show", "auto"])
        #expect(shown.status == 0 && shown.stdout.contains(#""0x38""#), "\(shown.stdout)")
        #expect(shown.stderr.contains("set no policy: this is the standard one"))

        let bad = try Self.write(#"{"place": ["0x34"], "end": ["0x35"], "ignore": ["0x34"]}"#)
        let refused = try cli.run(["scte35", "policy", "set", "auto", bad])
        #expect(
            refused.status == 2 && refused.stderr.contains("policy.ignore 0x34 is also in place"), "\(refused.stderr)")

        let url = "\(server.baseURL)/channels/auto/scte35"
        func send(_ section: String) async throws -> (String, Int) {
            try await HTTP.post(url, json: #"{"section":"\#(section)","asset_uri":"https://ads.example.com/a.m3u8"}"#)
        }
        let (placed, placedStatus) = try await send(Self.start)
        #expect(placedStatus == 201 && placed.contains("scte35-7"), "\(placed)")
        let (ended, endedStatus) = try await send(Self.end)
        #expect(endedStatus == 201 && (ended.contains(": ended") || ended.contains(": cancelled")), "\(ended)")
        let (overlay, overlayStatus) = try await send(Self.overlay)
        #expect(overlayStatus == 201 && overlay.contains("Provider Overlay Placement Opportunity Start"), "\(overlay)")

        // From now on, overlays place breaks of 10 s.
        let policy = try Self.write(
            #"{"place": ["0x34", "0x38"], "end": ["0x35", "0x39"], "default_duration": 10}"#)
        let set = try cli.run(["scte35", "policy", "set", "auto", policy])
        #expect(set.status == 0 && set.stdout.contains("now follows the SCTE-35 policy"), "\(set.stderr)")
        #expect(try cli.run(["scte35", "policy", "show", "auto"]).stdout.contains(#""default_duration" : 10"#))

        let asLogged = try cli.run(["scte35", "dry-run", "auto", "--as-logged"])
        #expect(asLogged.status == 0, "\(asLogged.stderr)")
        #expect(asLogged.stdout.contains("0 differ from the log"), "\(asLogged.stdout)")
        // Proposed before the change: overlays would have placed a break.
        let proposed = try cli.run(["scte35", "dry-run", "auto", "--policy", policy, "--json"])
        #expect(proposed.status == 0, "\(proposed.stderr)")
        let lines = try #require(
            try JSONSerialization.jsonObject(with: Data(proposed.stdout.utf8)) as? [[String: Any]])
        #expect(lines.count >= 3)
        #expect(
            lines.contains { $0["logged"] as? String == "ignored" && $0["proposed"] as? String == "placed" },
            "\(proposed.stdout)")
        #expect(try cli.run(["scte35", "dry-run", "auto"]).status == 2, "--policy or --as-logged")
    }
}
