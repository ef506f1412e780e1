import Foundation
import TestSupport
import Testing

/// `channel create --markers … --segmentation-type …` (issue 33): refused by name before anything is written, and
/// shown by `channel list --json`.
@Suite(
    "CLI: a channel's signalling",
    .enabled(
        if: TestDatabase.isConfigured && CLIRunner.isAvailable, "needs DATABASE_URL and CUELINE_BIN (scripts/test.sh)"))
struct SignallingCommandTests {
    static let rendition = ["--rendition", "720p,1000000,seg{n}.ts"]

    @Test("a bad marker style, a segmentation type that is not a break's start, CUE markers on a relay: usage errors")
    func refusals() async throws {
        let cli = CLIRunner(environment: ["DATABASE_URL": try await TestDatabase.makeFreshDatabase()])
        #expect(try cli.run(["migrate"]).status == 0)
        let create = ["channel", "create", "sig", "--segment-duration", "2", "--window", "6"] + Self.rendition
        for (extra, expected) in [
            (["--markers", "cue"], "--markers"),
            (["--segmentation-type", "0x35"], "--segmentation-type must be one of 0x34, 0x36, 0x22, 0x30 (got 0x35)"),
            (["--segmentation-type", "zz"], "--segmentation-type \"zz\" is not a hexadecimal byte such as 0x34"),
        ] {
            let result = try cli.run(create + extra)
            #expect(result.status == 2, "\(extra): \(result.stdout)\(result.stderr)")
            #expect(result.stderr.contains(expected), "\(extra): \(result.stderr)")
        }
        let relay = try cli.run([
            "channel", "create", "sig", "--segment-duration", "2", "--window", "6", "--relay",
            "https://origin.example/main.m3u8", "--rendition", "main,1000000", "--markers", "both",
        ])
        #expect(relay.status == 2, "\(relay.stdout)\(relay.stderr)")
        #expect(relay.stderr.contains("--markers both writes EXT-X-CUE markers"), "\(relay.stderr)")
        // Nothing was written by any of them.
        let list = try cli.run(["channel", "list", "--json"])
        #expect(list.status == 0 && !list.stdout.contains("\"sig\""), "\(list.stdout)")

        let made = try cli.run(create + ["--markers", "scte35", "--segmentation-type", "36"])
        #expect(made.status == 0, "\(made.stderr)")
        let listed = try cli.run(["channel", "list", "--json"])
        #expect(listed.stdout.contains(#""markers" : "scte35""#), "\(listed.stdout)")
        #expect(listed.stdout.contains(#""segmentation_type" : "0x36""#), "\(listed.stdout)")
    }
}
