import EventStore
import Foundation
import Postgres
import TestSupport
import Testing

@Suite(
    "Audit end to end",
    .enabled(
        if: TestDatabase.isConfigured && CLIRunner.isAvailable, "needs DATABASE_URL and CUELINE_BIN (scripts/test.sh)"))
struct AuditEndToEndTests {
    struct Served {
        var rendition: String
        var tick: String
        var body: String
    }

    @Test(
        "every playlist served over a minute of breaks, early returns and cancels replays byte for byte; as-run, log and verify agree"
    )
    func recordAndReplay() async throws {
        let (url, cli, server) = try await ServerProcess.onFreshDatabase(extraArguments: ["--unauthenticated-commands"])
        defer { server.stop() }
        let renditions = ["720p", "480p", "360p"]
        #expect(
            try cli.run(
                ["channel", "create", "audit", "--segment-duration", "1", "--window", "6"]
                    + renditions.flatMap { ["--rendition", "\($0),1000000,\($0)/seg{n}.ts"] }
            ).status == 0)
        let commands = "\(server.baseURL)/channels/audit/commands"
        func send(_ json: String, expect status: Int) async throws {
            let (body, got) = try await HTTP.post(commands, json: json)
            #expect(got == status, "\(json) → \(got) \(body)")
        }
        try await Task.sleep(for: .milliseconds(200))

        // The script of the broadcast, in seconds from the start.
        let script: [(Double, String, Int)] = [
            (
                0,
                #"{"command":"place_break","id":"b1","in":3,"duration":8,"asset_uri":"https://ads.example.com/1.m3u8","actor":"alice"}"#,
                201
            ),
            (
                0.5,
                #"{"command":"place_break","id":"b2","in":14,"duration":20,"asset_uri":"https://ads.example.com/2.m3u8","actor":"alice"}"#,
                201
            ),
            (20, #"{"command":"cancel_current_event","actor":"bob","reason":"goal"}"#, 201),
            (
                22,
                #"{"command":"place_break","id":"b3","in":6,"duration":10,"asset_uri":"https://ads.example.com/3.m3u8","actor":"alice"}"#,
                201
            ),
            (24, #"{"command":"cancel_break","id":"b3","actor":"carol"}"#, 201),
            (
                25,
                #"{"command":"place_break","id":"b4","in":4,"duration":12,"pod":[{"uri":"https://ads.example.com/4a.m3u8","duration":6},{"uri":"https://ads.example.com/4b.m3u8","duration":6}],"actor":"alice"}"#,
                201
            ),
            (26, #"{"command":"cancel_break","id":"nope","actor":"mallory"}"#, 404),
            (33, #"{"command":"set_playout_limit","id":"b4","playout_limit":6,"actor":"bob"}"#, 201),
        ]
        let start = ContinuousClock.now
        var pending = script
        var served: [Served] = []
        // The last break ends at 35 s (b4: at 29 s, limited to 6 s) and leaves the 6 s window at 41 s: a minute covers
        // the script and the windows after it, with no break left in them.
        while ContinuousClock.now < start + .seconds(60) {
            while let (at, json, status) = pending.first, ContinuousClock.now >= start + .milliseconds(Int(at * 1000)) {
                try await send(json, expect: status)
                pending.removeFirst()
            }
            for rendition in renditions {
                let (body, status, headers) = try await HTTP.getWithHeaders(
                    "\(server.baseURL)/channels/audit/\(rendition).m3u8")
                #expect(status == 200)
                served.append(Served(rendition: rendition, tick: try #require(headers["x-cueline-tick"]), body: body))
            }
            try await Task.sleep(for: .milliseconds(400))
        }
        #expect(pending.isEmpty)
        #expect(served.suffix(3).allSatisfy { !$0.body.contains("EXT-X-DATERANGE") }, "the last windows hold no break")

        // Replay every fetch at the instant it was rendered for.
        var differing = 0
        for item in served {
            let (replayed, status) = try await HTTP.get(
                "\(server.baseURL)/channels/audit/replay?at=\(item.tick)&rendition=\(item.rendition)")
            #expect(status == 200)
            if replayed != item.body { differing += 1 }
        }
        #expect(differing == 0, "\(differing) of \(served.count) served playlists differ from their replay")
        print("replayed \(served.count) served playlists byte for byte")
        #expect(served.contains { $0.body.contains(#"ID="b2""#) && $0.body.contains("X-PLAYOUT-LIMIT=") })
        #expect(served.contains { $0.body.contains(#"ID="b4""#) && $0.body.contains("X-PLAYOUT-LIMIT=6.000") })

        // --between lists every distinct version served in the interval, each at the tick it first appeared.
        let served720 = served.filter { $0.rendition == "720p" }
        let between = try cli.run([
            "replay", "audit", "--between", served720.first!.tick, served720.last!.tick, "--rendition", "720p",
        ])
        #expect(between.status == 0, "\(between.stderr)")
        let versions = Set(
            between.stdout.components(separatedBy: "=== ").dropFirst().map {
                String($0.drop { $0 != "\n" }.dropFirst())
            })
        #expect(
            Set(served720.map(\.body)).isSubset(of: versions), "every served version is among those --between lists")

        // As-run: the totals match the script.
        let asRun = try cli.run(["as-run", "audit", "--format", "json"])
        #expect(asRun.status == 0, "\(asRun.stderr)")
        struct Report: Decodable {
            struct Totals: Decodable {
                var breaksPlanned: Int
                var breaksAired: Int
                var breaksEndedEarly: Int
                var breaksCancelled: Int
                var secondsAired: String
            }
            struct Entry: Decodable {
                var breakId: String
                var status: String
                var endedEarlyBy: String?
                var cancelledBy: String?
                var placedVia: String
            }
            var totals: Totals
            var entries: [Entry]
        }
        // The API's as-run report, snake_case like every --json.
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        let report = try decoder.decode(Report.self, from: Data(asRun.stdout.utf8))
        #expect(
            report.totals.breaksPlanned == 4 && report.totals.breaksAired == 3 && report.totals.breaksEndedEarly == 2
                && report.totals.breaksCancelled == 1)
        #expect(report.entries.map(\.status) == ["aired", "ended-early", "cancelled", "ended-early"])
        #expect(
            report.entries[1].endedEarlyBy == "bob" && report.entries[2].cancelledBy == "carol"
                && report.entries[0].placedVia == "http")
        let b2Aired = try #require(Double(report.totals.secondsAired))
        #expect(
            b2Aired > 8 + 6 && b2Aired < 8 + 6 + 20, "8 s of b1, 6 s of b4 and the part of b2 before the early return")
        let (csv, csvStatus) = try await HTTP.get("\(server.baseURL)/channels/audit/as-run?format=csv")
        #expect(csvStatus == 200 && csv.hasPrefix("break_id,status,"))

        // The audit trail names the refused command.
        let log = try cli.run(["log", "audit"])
        #expect(
            log.stdout.contains("REFUSED cancel-break  by mallory via http  because: break nope does not exist"),
            "\(log.stdout)")
        #expect(log.stdout.contains("PlayoutLimitSet  by bob via http"))

        // verify: the chain holds and the samples the server recorded re-render identically.
        let clean = try cli.run(["verify", "audit"])
        #expect(clean.status == 0, "\(clean.stdout)\(clean.stderr)")
        #expect(
            clean.stdout.contains("served playlists re-rendered identically")
                && !clean.stdout.contains(" 0 served playlists"), "\(clean.stdout)")

        // Tampering: a superuser disables the trigger and edits a payload. verify names the event.
        let admin = try await PostgresConnection.connect(url: url)
        defer { admin.close() }
        let target = try #require(
            try await admin.query(
                "SELECT position FROM cueline_events WHERE channel = 'audit' AND type = 'PlayoutLimitSet' ORDER BY version LIMIT 1"
            ).scalar())
        try await admin.executeScript(
            """
            ALTER TABLE cueline_events DISABLE TRIGGER cueline_events_immutable;
            UPDATE cueline_events SET payload = '{"id":"b2","kind":"playout-limit","limitMilliseconds":19000}' WHERE position = \(target);
            ALTER TABLE cueline_events ENABLE TRIGGER cueline_events_immutable;
            """)
        let broken = try cli.run(["verify", "audit"])
        #expect(broken.status == 1)
        #expect(broken.stdout.contains("BROKEN: event at position \(target) (channel audit"), "\(broken.stdout)")
    }
}
