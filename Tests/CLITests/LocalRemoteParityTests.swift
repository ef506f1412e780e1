import Foundation
import HLS
import TestSupport
import Testing

/// Every CLI command that runs both against the database and through `--server` prints the same stdout and stderr
/// and exits with the same code either way, with and without `--json`: the same logical command runs on two
/// channels created alike, one through the database and one through a spawned `cueline serve`, and only what
/// legitimately differs between two separate commands is masked (the channel's name, decision times, log
/// positions and hashes, `cli` against `http` as the source).
@Suite(
    "CLI: the same output from the database and through --server",
    .enabled(
        if: TestDatabase.isConfigured && CLIRunner.isAvailable, "needs DATABASE_URL and CUELINE_BIN (scripts/test.sh)"))
struct LocalRemoteParityTests {
    /// 4 s segments from one epoch: both channels of a pair share every segment boundary and live edge.
    static let segmentMilliseconds: Int64 = 4000
    static let epoch = "2026-01-01T00:00:00Z"
    /// An asset URI that fails at once and the same way on both paths (nothing listens on port 1).
    static let asset = "http://127.0.0.1:1/ad.m3u8"

    /// A channel read and written through the database, and its twin read and written through the API.
    struct Pair {
        var database: String
        var api: String
    }

    struct Setup {
        var local: CLIRunner
        var remote: CLIRunner
        var server: ServerProcess
        /// Text mode and `--json` each on their own pair, so the same commands run in both modes.
        var text = Pair(database: "text-db", api: "text-ap")
        var json = Pair(database: "json-db", api: "json-ap")

        func pair(json: Bool) -> Pair { json ? self.json : text }
    }

    private func setUp() async throws -> Setup {
        let (url, cli) = try await CLIRunner.onFreshDatabase(channels: [])
        for channel in ["text-db", "text-ap", "json-db", "json-ap"] {
            let created = try cli.run([
                "channel", "create", channel, "--segment-duration", "4", "--window", "6", "--epoch", Self.epoch,
                "--rendition", "720p,1000000,720p/seg{n}.ts",
            ])
            try #require(created.status == 0, "\(created.stderr)")
        }
        let tokens = try cli.createTokens([("ops", ["--role", "operator"])])
        let server = try ServerProcess(databaseURL: url)
        try await server.waitUntilReady()
        // The token's name is the actor through the API; the database path names the same actor.
        let local = CLIRunner(environment: ["DATABASE_URL": url, "USER": "ops"])
        let remote = CLIRunner(environment: [
            "DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none", "CUELINE_SERVER": server.baseURL,
            "CUELINE_TOKEN": tokens["ops"]!,
        ])
        return Setup(local: local, remote: remote, server: server)
    }

    /// What a run printed, with what legitimately differs between the two channels' commands masked.
    struct Printed: Equatable, CustomStringConvertible {
        var status: Int32
        var stdout: String
        var stderr: String

        init(_ output: CLIRunner.Output, channel: String) {
            status = output.status
            stdout = Self.mask(output.stdout, channel: channel)
            // The database path logs what the server logs to its own log (an asset it could not read): only the
            // error line is the command's answer.
            stderr = Self.mask(
                output.stderr.split(separator: "\n").filter { $0.hasPrefix("error: ") }.joined(separator: "\n"),
                channel: channel)
        }

        /// JSON pretty-printed (`"key" : value`) or compact (`log --json`'s lines).
        static let masks: [(pattern: String, replacement: String)] = [
            (#""(decided_at|placed_at|ended_early_at|cancelled_at|live_edge)" ?: ?"[^"]*""#, #""$1" : "…""#),
            (#""hash" ?: ?"[0-9a-f]*""#, #""hash" : "…""#),
            (#""position" ?: ?[0-9]+"#, #""position" : …"#),
            (#""(source|placed_via|ended_early_via|cancelled_via)" ?: ?"(cli|http)""#, #""$1" : "…""#),
            (#""command_id" ?: ?"[^"]*""#, #""command_id" : "…""#),
            (#"live edge [0-9T:.Z-]+"#, "live edge …"),
            // `log`'s text lines: when, and through which door.
            (#"(?m)^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z  "#, "…  "),
            (#" via (cli|http)(  |$)"#, " via …$2"),
            // `replay --between`: a version first served at a command's effect instant (its decision time).
            (#"(?m)^=== [0-9T:.Z-]+$"#, "=== …"),
            // A break's SCTE-35 section: its segmentation_event_id is a hash of the channel id and the break id.
            (#"SCTE35-(OUT|IN)=0x[0-9A-F]+"#, "SCTE35-$1=0x…"),
            // A break's preload range starts no earlier than the break was placed (its decision time), so where it
            // stands among the segments differs too when a boundary passed between the two placements: left out.
            (#"(?m)^ *#EXT-X-DATERANGE:ID="[^"]*",CLASS="com\.apple\.hls\.preload".*\n"#, ""),
        ]

        static func mask(_ text: String, channel: String) -> String {
            var masked = maskCSV(text.replacingOccurrences(of: channel, with: "CHANNEL"))
            for (pattern, replacement) in masks {
                masked = masked.replacingOccurrences(of: pattern, with: replacement, options: .regularExpression)
            }
            return masked
        }

        /// The as-run CSV: the columns of when a command was decided and through which door (`*_at`, `*_via`).
        static func maskCSV(_ text: String) -> String {
            // By UTF-16 code unit: "\r\n" (the CSV's line end) is one Swift Character, which "\n" does not split.
            var lines = text.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).map {
                String(decoding: $0, as: UTF8.self)
            }
            guard let header = lines.first, header.hasPrefix("break_id,") else { return text }
            let names = header.utf8.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false).map {
                String(decoding: $0, as: UTF8.self)
            }
            let masked = Set(names.indices.filter { names[$0].hasSuffix("_at") || names[$0].hasSuffix("_via") })
            for index in lines.indices.dropFirst() where !lines[index].isEmpty {
                let cells = lines[index].utf8.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false).map
                { String(decoding: $0, as: UTF8.self) }
                lines[index] = cells.indices.map { masked.contains($0) && !cells[$0].isEmpty ? "…" : cells[$0] }.joined(
                    separator: ",")
            }
            return lines.joined(separator: "\n")
        }

        var description: String { "exit \(status)\n\(stdout)\(stderr)" }
    }

    /// Runs `arguments` (with `CHANNEL` for the channel) on the pair's database channel and on its API channel.
    @discardableResult
    private func both(_ setup: Setup, json: Bool, _ arguments: [String], expectStatus: Int32) throws -> Printed {
        let pair = setup.pair(json: json)
        let extra = json ? ["--json"] : []
        let local = try setup.local.run(arguments.map { $0 == "CHANNEL" ? pair.database : $0 } + extra)
        let remote = try setup.remote.run(arguments.map { $0 == "CHANNEL" ? pair.api : $0 } + extra)
        let localPrinted = Printed(local, channel: pair.database)
        let remotePrinted = Printed(remote, channel: pair.api)
        #expect(
            localPrinted == remotePrinted,
            "\(arguments.joined(separator: " ")) \(extra): database\n\(localPrinted)\nAPI\n\(remotePrinted)")
        #expect(
            local.status == expectStatus, "\(arguments.joined(separator: " ")) \(extra): \(local.stdout)\(local.stderr)"
        )
        if expectStatus == 0 {
            #expect(!localPrinted.stdout.isEmpty)
        } else {
            #expect(localPrinted.stderr.hasPrefix("error: "), "a refusal says why: \(local.stderr)")
        }
        return localPrinted
    }

    /// An instant `seconds` from now on a segment boundary, and its ISO 8601 text.
    private func boundary(after seconds: Int64) -> (milliseconds: Int64, text: String) {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let target = now + seconds * 1000
        let aligned = target - target % Self.segmentMilliseconds + Self.segmentMilliseconds
        return (aligned, Timestamp(milliseconds: aligned).iso8601)
    }

    /// Sleeps until the wall clock is at least `milliseconds` and early in a segment, so that two commands decided
    /// one after the other see the same live edge.
    private func waitUntil(_ milliseconds: Int64) async throws {
        while true {
            let now = Int64(Date().timeIntervalSince1970 * 1000)
            let intoSegment = now % Self.segmentMilliseconds
            if now >= milliseconds && (200...1200).contains(intoSegment) { return }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    @Test(
        "break place, limit, cancel, event cancel-current and schedule: same stdout, stderr and exit code both ways, text and --json"
    )
    func parity() async throws {
        let setup = try await setUp()
        defer { setup.server.stop() }
        let later = boundary(after: 300)
        for json in [false, true] {
            // Placed, with the note both paths give (the asset cannot be read, so it is served whole).
            let placed = try both(
                setup, json: json,
                [
                    "break", "place", "CHANNEL", "--id", "b", "--at", later.text, "--duration", "1m", "--asset-uri",
                    Self.asset, "--reason", "parity", "--restrict", "skip", "--cue", "none", "--attr",
                    "X-COM-EXAMPLE-AD=abc",
                ], expectStatus: 0)
            #expect(placed.stdout.contains("could not be read"), "\(placed.stdout)")
            // Refusals: a reused id (a conflict), an overlap, a limit on a break not on air, nothing on air to end,
            // an unknown break, a break already cancelled (a conflict), an unknown channel.
            try both(
                setup, json: json,
                [
                    "break", "place", "CHANNEL", "--id", "b", "--in", "10m", "--duration", "10", "--asset-uri",
                    Self.asset,
                ], expectStatus: 3)
            try both(
                setup, json: json,
                [
                    "break", "place", "CHANNEL", "--id", "c", "--at", later.text, "--duration", "10", "--asset-uri",
                    Self.asset,
                ], expectStatus: 1)
            try both(setup, json: json, ["break", "limit", "CHANNEL", "b", "--playout-limit", "10"], expectStatus: 1)
            try both(setup, json: json, ["event", "cancel-current", "CHANNEL"], expectStatus: 1)
            try both(setup, json: json, ["break", "cancel", "CHANNEL", "nope"], expectStatus: 1)
            try both(setup, json: json, ["schedule", "CHANNEL"], expectStatus: 0)
            try both(setup, json: json, ["break", "cancel", "CHANNEL", "b"], expectStatus: 0)
            try both(setup, json: json, ["break", "cancel", "CHANNEL", "b"], expectStatus: 3)
            try both(setup, json: json, ["schedule", "no-such-channel"], expectStatus: 1)
        }
        // A retry with the same command id answers the original result, and says so.
        let retry = [
            "break", "place", "CHANNEL", "--id", "d", "--at", boundary(after: 600).text, "--duration", "10",
            "--asset-uri", Self.asset, "--command-id", "same-key",
        ]
        let first = try both(setup, json: false, retry, expectStatus: 0)
        #expect(!first.stdout.contains("already applied"))
        let again = try both(setup, json: false, retry, expectStatus: 0)
        #expect(again.stdout.contains("already applied: this is the original result"), "\(again.stdout)")
        try both(setup, json: true, retry, expectStatus: 0)

        let onAir = boundary(after: 10)
        for json in [false, true] {
            try both(
                setup, json: json,
                [
                    "break", "place", "CHANNEL", "--id", "a", "--at", onAir.text, "--duration", "20", "--asset-uri",
                    Self.asset, "--align", "exact",
                ], expectStatus: 0)
        }
        // On air: end one pair's break early with a limit, the other's at the live edge; then the refusals a
        // break on air gets.
        try await waitUntil(onAir.milliseconds + 5000)
        try both(setup, json: false, ["break", "limit", "CHANNEL", "a", "--playout-limit", "15"], expectStatus: 0)
        // Early in a segment again: the pair's two cancel-current runs end their breaks at the same live edge.
        try await waitUntil(0)
        try both(setup, json: true, ["event", "cancel-current", "CHANNEL"], expectStatus: 0)
        try await waitUntil(0)
        try both(setup, json: true, ["break", "limit", "CHANNEL", "a", "--playout-limit", "15"], expectStatus: 3)
        try both(setup, json: false, ["event", "cancel-current", "CHANNEL"], expectStatus: 3)
        try both(setup, json: false, ["break", "cancel", "CHANNEL", "a"], expectStatus: 1)
        try await waitUntil(0)
        let schedule = try both(setup, json: true, ["schedule", "CHANNEL"], expectStatus: 0)
        #expect(schedule.stdout.contains(#""ended_early_how" : "cancel-current""#), "\(schedule.stdout)")
        let table = try both(setup, json: false, ["schedule", "CHANNEL"], expectStatus: 0)
        #expect(table.stdout.contains("15.000s"), "\(table.stdout)")
        // The as-run, as CSV and as the API's JSON, with and without a window; an unknown channel.
        let csv = try both(setup, json: false, ["as-run", "CHANNEL"], expectStatus: 0)
        #expect(
            csv.stdout.hasPrefix("break_id,") && csv.stdout.contains("\na,on-air,") && csv.stdout.contains(",…,"),
            "\(csv.stdout)")
        let report = try both(
            setup, json: false, ["as-run", "CHANNEL", "--format", "json", "--from", onAir.text, "--to", later.text],
            expectStatus: 0)
        #expect(
            report.stdout.contains(#""break_id" : "a""#) && !report.stdout.contains(#""break_id" : "b""#),
            "\(report.stdout)")
        try both(setup, json: false, ["as-run", "CHANNEL", "--format", "json"], expectStatus: 0)
        try both(setup, json: false, ["as-run", "no-such-channel"], expectStatus: 1)
        // The audit trail, applied and refused commands in order, and replays of one instant and of a span.
        for json in [false, true] {
            let log = try both(setup, json: json, ["log", "CHANNEL"], expectStatus: 0)
            #expect(log.stdout.contains("BreakPlaced") && log.stdout.contains("PlayoutLimitSet"), "\(log.stdout)")
            #expect(log.stdout.contains(json ? #""outcome":"refused""# : "REFUSED "), "\(log.stdout)")
            try both(setup, json: json, ["log", "CHANNEL", "--at", onAir.text], expectStatus: 0)
            try both(setup, json: json, ["log", "no-such-channel"], expectStatus: 1)
        }
        let during = Timestamp(milliseconds: onAir.milliseconds + 8000).iso8601
        // An instant is replayed once it has been served: the server refuses a later one (422, exit 1).
        try await waitUntil(onAir.milliseconds + 8000)
        let replayed = try both(setup, json: false, ["replay", "CHANNEL", "--at", during], expectStatus: 0)
        #expect(replayed.stdout.contains("com.apple.hls.interstitial"), "\(replayed.stdout)")
        try both(setup, json: false, ["replay", "CHANNEL", "--at", during, "--multivariant"], expectStatus: 0)
        let span = try both(
            setup, json: false,
            ["replay", "CHANNEL", "--between", Timestamp(milliseconds: onAir.milliseconds - 4000).iso8601, during],
            expectStatus: 0)
        #expect(span.stdout.components(separatedBy: "=== ").count > 3, "\(span.stdout)")
        try both(setup, json: false, ["replay", "CHANNEL", "--at", during, "--rendition", "nope"], expectStatus: 1)
        try both(setup, json: false, ["replay", "no-such-channel", "--at", during], expectStatus: 1)
        // The channel list names every channel (the token reads them all): compared whole, nothing masked.
        for json in [false, true] {
            let extra = json ? ["--json"] : []
            let local = try setup.local.run(["channel", "list"] + extra)
            let remote = try setup.remote.run(["channel", "list"] + extra)
            #expect(
                local.status == 0 && remote.status == 0 && local.stdout == remote.stdout,
                "database\n\(local.stdout)\(local.stderr)\nAPI\n\(remote.stdout)\(remote.stderr)")
            #expect(
                ["text-db", "text-ap", "json-db", "json-ap"].allSatisfy { local.stdout.contains($0) }, "\(local.stdout)"
            )
        }
    }

    @Test(
        "channel create and update-renditions have no --server: a clear usage error, text and --json, and nothing is written"
    )
    func channelCommandsNeedTheDatabase() async throws {
        let setup = try await setUp()
        defer { setup.server.stop() }
        for json in [false, true] {
            for arguments in [
                [
                    "channel", "create", "made-remotely", "--segment-duration", "4", "--window", "6", "--rendition",
                    "720p,1000000,720p/seg{n}.ts",
                ],
                ["channel", "update-renditions", setup.text.api, "--rendition", "360p,500000,360p/seg{n}.ts"],
            ] {
                let refused = try setup.remote.run(arguments + (json ? ["--json"] : []))
                #expect(
                    refused.status == 2 && refused.stdout.isEmpty, "\(arguments): \(refused.stdout)\(refused.stderr)")
                #expect(refused.stderr.contains("needs the database; leave out --server"), "\(refused.stderr)")
            }
        }
        let missing = try setup.local.run(["schedule", "made-remotely"])
        #expect(missing.status == 1 && missing.stderr.contains("does not exist"), "\(missing.stderr)")
        let unchanged = try setup.local.run(["schedule", setup.text.api, "--json"])
        #expect(unchanged.status == 0 && unchanged.stdout.contains(#""version" : 1"#), "\(unchanged.stdout)")
    }

    @Test("the JSON of both paths is the API's: snake_case keys, an object for the schedule")
    func wireShape() async throws {
        let setup = try await setUp()
        defer { setup.server.stop() }
        let start = boundary(after: 300).text
        try both(
            setup, json: true,
            ["break", "place", "CHANNEL", "--id", "a", "--at", start, "--duration", "10", "--asset-uri", Self.asset],
            expectStatus: 0)
        // Unmasked, from each path.
        let placed = try setup.local.run([
            "break", "place", setup.json.database, "--id", "b", "--at", boundary(after: 400).text, "--duration", "10",
            "--asset-uri", Self.asset, "--json",
        ])
        let answer = try #require(try JSONSerialization.jsonObject(with: Data(placed.stdout.utf8)) as? [String: Any])
        let event = try #require((answer["events"] as? [[String: Any]])?.first)
        // Schema 3: a channel created now has ad settings, and its breaks keep their preload length (issue 35).
        #expect(
            event["schema_version"] as? Int == 3 && event["decided_at"] != nil && event["schemaVersion"] == nil,
            "\(event)")
        let schedule = try setup.remote.run(["schedule", setup.json.api, "--json"])
        let view = try #require(try JSONSerialization.jsonObject(with: Data(schedule.stdout.utf8)) as? [String: Any])
        #expect((view["breaks"] as? [[String: Any]])?.first?["start_date"] != nil, "\(view)")
    }

    @Test("channel and break arguments follow the one identifier rule; reads still name an old channel such as _x")
    func identifiers() async throws {
        let setup = try await setUp()
        defer { setup.server.stop() }
        for runner in [setup.local, setup.remote] {
            for arguments in [
                ["break", "limit", "_x", "a", "--playout-limit", "10"], ["event", "cancel-current", "X"],
                ["break", "cancel", "text-db", "_a"],
            ] {
                let refused = try runner.run(arguments)
                #expect(
                    refused.status == 2 && refused.stderr.contains("starting with a letter or a digit"),
                    "\(arguments): \(refused.stderr)")
            }
            // A read is not a command: the channel is looked up (and here does not exist).
            let read = try runner.run(["schedule", "_x"])
            #expect(read.status == 1 && read.stderr.contains("does not exist"), "\(read.stderr)")
        }
    }
}
