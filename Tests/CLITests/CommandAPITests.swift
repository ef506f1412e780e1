import Foundation
import EventStore
import HLS
import TestSupport
import Testing

/// The command API with tokens, SCTE-35 and feed hooks, against a real server and database.
@Suite(
    "Command API: tokens, races, retries, SCTE-35, hooks",
    .enabled(
        if: TestDatabase.isConfigured && CLIRunner.isAvailable, "needs DATABASE_URL and CUELINE_BIN (scripts/test.sh)"))
struct CommandAPITests {
    struct Setup {
        var url: String
        var cli: CLIRunner
        var server: ServerProcess
        var tokens: [String: String]

        func auth(_ name: String) -> [String: String] { ["Authorization": "Bearer \(tokens[name]!)"] }
        func commands(_ channel: String) -> String { "\(server.baseURL)/channels/\(channel)/commands" }
    }

    static let hookSecret = "a-feed-secret-of-32-bytes-length"

    /// A fresh database with channels `one` and `two` (1 s segments) and tokens of every role, served with a hooks file.
    private func setUp() async throws -> Setup {
        let (url, cli) = try await CLIRunner.onFreshDatabase(channels: ["one", "two"])
        let tokens = try cli.createTokens([
            ("desk", ["--role", "operator"]),
            ("scores", ["--role", "automation", "--channel", "one", "--command", "cancel_current_event"]),
            (
                "scte",
                [
                    "--role", "automation", "--channel", "one", "--command", "place_break", "--command",
                    "cancel_current_event", "--command", "cancel_break",
                ]
            ),
            ("wall", ["--role", "viewer"]),
        ])
        let hooks = FileManager.default.temporaryDirectory.appendingPathComponent("hooks-\(UUID().uuidString).json")
        try Data(
            """
            {"hooks": [{"name": "feed", "secret": "\(Self.hookSecret)", "tolerance_seconds": 300, "rules": [
              {"when": {"event": "goal"}, "channel": "one", "command": {"command": "cancel_current_event"}},
              {"when": {"event": "timeout", "team": "home"}, "channel": "one",
               "command": {"command": "place_break", "id": "$.break", "in": 5, "duration": "$.seconds", "asset_uri": "https://ads.example.com/t.m3u8"}}
            ]}]}
            """.utf8
        ).write(to: hooks)
        let server = try ServerProcess(databaseURL: url, extraArguments: ["--hooks", hooks.path])
        try await server.waitUntilReady()
        return Setup(url: url, cli: cli, server: server, tokens: tokens)
    }

    @Test(
        "tokens: 401 without or with a bad token, 403 for the wrong role, channel or command type; playlists stay public"
    )
    func roles() async throws {
        let setup = try await setUp()
        defer { setup.server.stop() }
        let place = #"{"command":"place_break","in":30,"duration":10,"asset_uri":"https://ads.example.com/a.m3u8"}"#
        let (missing, missingStatus) = try await HTTP.post(setup.commands("one"), json: place)
        #expect(missingStatus == 401 && missing.contains("Bearer"), "\(missing)")
        let (_, badStatus) = try await HTTP.post(
            setup.commands("one"), json: place, headers: ["Authorization": "Bearer cue_0000"])
        #expect(badStatus == 401)
        let (_, garbageStatus) = try await HTTP.post(setup.commands("one"), json: "not json")
        #expect(garbageStatus == 401, "who is asking is checked before the body")
        let (viewer, viewerStatus) = try await HTTP.post(
            setup.commands("one"), json: place, headers: setup.auth("wall"))
        #expect(viewerStatus == 403 && viewer.contains("viewer"), "\(viewer)")
        let (otherChannel, otherStatus) = try await HTTP.post(
            setup.commands("two"), json: #"{"command":"cancel_current_event"}"#, headers: setup.auth("scores"))
        #expect(otherStatus == 403 && otherChannel.contains("channel two"), "\(otherChannel)")
        let (wrongType, wrongTypeStatus) = try await HTTP.post(
            setup.commands("one"), json: place, headers: setup.auth("scores"))
        #expect(wrongTypeStatus == 403 && wrongType.contains("place_break"), "\(wrongType)")
        // Allowed through auth: nothing is on air, so the schedule refuses it (404-free, 422).
        let (_, scopedStatus) = try await HTTP.post(
            setup.commands("one"), json: #"{"command":"cancel_current_event"}"#, headers: setup.auth("scores"))
        #expect(scopedStatus == 422)
        let (placed, placedStatus) = try await HTTP.post(
            setup.commands("two"), json: place, headers: setup.auth("desk"))
        #expect(placedStatus == 201, "\(placed)")

        // Reads need a token; the automation token sees only its channel.
        let (_, anonymousRead) = try await HTTP.get("\(setup.server.baseURL)/channels/two/schedule")
        #expect(anonymousRead == 401)
        let (_, viewerRead) = try await HTTP.get(
            "\(setup.server.baseURL)/channels/two/schedule", headers: setup.auth("wall"))
        #expect(viewerRead == 200)
        let (_, scopedRead) = try await HTTP.get(
            "\(setup.server.baseURL)/channels/two/events", headers: setup.auth("scores"))
        #expect(scopedRead == 403)
        let (list, _) = try await HTTP.get("\(setup.server.baseURL)/channels", headers: setup.auth("scores"))
        #expect(list.contains(#""id":"one""#) && !list.contains(#""id":"two""#), "\(list)")
        let (_, playlist) = try await HTTP.get("\(setup.server.baseURL)/channels/two/720p.m3u8")
        #expect(playlist == 200)

        // The actor of the event is the token's name, whatever the body claims.
        let (events, _) = try await HTTP.get("\(setup.server.baseURL)/channels/two/events", headers: setup.auth("wall"))
        #expect(events.contains(#""actor":"desk""#), "\(events)")

        // A revoked token stops working once the server's 5 s cache lapses.
        #expect(try setup.cli.run(["token", "revoke", "wall"]).status == 0)
        try await Task.sleep(for: .milliseconds(5300))
        let (_, revoked) = try await HTTP.get(
            "\(setup.server.baseURL)/channels/two/schedule", headers: setup.auth("wall"))
        #expect(revoked == 401)
        let listed = try setup.cli.run(["token", "list", "--json"])
        #expect(listed.stdout.contains(#""name" : "wall""#) && !listed.stdout.contains(setup.tokens["wall"]!))
        #expect(
            try setup.cli.run(["token", "create", "desk", "--role", "viewer"]).status == 3, "a taken name is a conflict"
        )
        #expect(
            try setup.cli.run(["token", "create", "x", "--role", "automation"]).status == 2,
            "automation needs a channel")
    }

    @Test(
        "two operators end the same break at once: one 201, one 409, one augmenting tag; a retry is not applied twice")
    func racesAndRetries() async throws {
        let setup = try await setUp()
        defer { setup.server.stop() }
        let (placed, placedStatus) = try await HTTP.post(
            setup.commands("one"),
            json:
                #"{"command":"place_break","id":"race","in":0.1,"duration":60,"asset_uri":"https://ads.example.com/a.m3u8"}"#,
            headers: setup.auth("desk").merging(["Idempotency-Key": "place-race"]) { $1 })
        #expect(placedStatus == 201, "\(placed)")
        // A retry after a dropped response: same key, same answer, nothing new in the log.
        let (retry, retryStatus) = try await HTTP.post(
            setup.commands("one"),
            json:
                #"{"command":"place_break","id":"race","in":0.1,"duration":60,"asset_uri":"https://ads.example.com/a.m3u8"}"#,
            headers: setup.auth("desk").merging(["Idempotency-Key": "place-race"]) { $1 })
        #expect(
            retryStatus == 201 && retry.contains(#""replayed":true"#) && retry.contains(#""version":2"#), "\(retry)")
        let (_, reused) = try await HTTP.post(
            setup.commands("one"), json: #"{"command":"cancel_break","id":"race"}"#,
            headers: setup.auth("desk").merging(["Idempotency-Key": "place-race"]) { $1 })
        #expect(reused == 409, "the same key for a different request is a conflict")
        let (stale, staleStatus) = try await HTTP.post(
            setup.commands("one"), json: #"{"command":"cancel_break","id":"race"}"#,
            headers: setup.auth("desk").merging(["If-Match": "1"]) { $1 })
        #expect(staleStatus == 409 && stale.contains("expected version"), "\(stale)")
        let (_, badMatch) = try await HTTP.post(
            setup.commands("one"), json: #"{"command":"cancel_break","id":"race"}"#,
            headers: setup.auth("desk").merging(["If-Match": "soon"]) { $1 })
        #expect(badMatch == 422)

        try await Task.sleep(for: .milliseconds(2200))  // on air
        async let first = HTTP.post(
            setup.commands("one"), json: #"{"command":"cancel_current_event"}"#, headers: setup.auth("desk"))
        async let second = HTTP.post(
            setup.commands("one"), json: #"{"command":"cancel_current_event"}"#, headers: setup.auth("scores"))
        let answers = try await [first, second]
        #expect(answers.map(\.1).sorted() == [201, 409], "\(answers)")
        // Served once the effect instant is known (see the SCTE-35 test); then exactly one augmenting tag.
        var playlist = ""
        let deadline = ContinuousClock.now + .seconds(5)
        while !playlist.contains("X-PLAYOUT-LIMIT="), ContinuousClock.now < deadline {
            playlist = try await HTTP.get("\(setup.server.baseURL)/channels/one/720p.m3u8").0
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(playlist.components(separatedBy: "X-PLAYOUT-LIMIT=").count == 2, "\(playlist)")
        let (events, _) = try await HTTP.get("\(setup.server.baseURL)/channels/one/events", headers: setup.auth("desk"))
        #expect(events.components(separatedBy: #""type":"PlayoutLimitSet""#).count == 2)
        #expect(events.components(separatedBy: #""type":"BreakPlaced""#).count == 2)
    }

    @Test("SQL in every string field is stored verbatim or refused, never executed")
    func injection() async throws {
        let setup = try await setUp()
        defer { setup.server.stop() }
        let sql = #"'); DROP TABLE cueline_events; --"#
        let escaped = sql.replacingOccurrences(of: "\"", with: "\\\"")
        let (badID, badIDStatus) = try await HTTP.post(
            setup.commands("one"),
            json:
                #"{"command":"place_break","id":"\#(escaped)","in":30,"duration":10,"asset_uri":"https://ads.example.com/a.m3u8"}"#,
            headers: setup.auth("desk"))
        #expect(badIDStatus == 422 && badID.contains(#""field":"id""#), "\(badID)")
        let (badURI, badURIStatus) = try await HTTP.post(
            setup.commands("one"), json: #"{"command":"place_break","in":30,"duration":10,"asset_uri":"\#(escaped)"}"#,
            headers: setup.auth("desk"))
        #expect(badURIStatus == 422 && badURI.contains(#""field":"asset_uri""#))
        let (stored, storedStatus) = try await HTTP.post(
            setup.commands("one"),
            json:
                #"{"command":"place_break","id":"ok","in":30,"duration":10,"asset_uri":"https://ads.example.com/a.m3u8?q=';DROP%20TABLE%20x;--","reason":"\#(escaped)","attributes":{"X-COM-EXAMPLE-NOTE":"\#(escaped)"}}"#,
            headers: setup.auth("desk").merging(["Idempotency-Key": sql]) { $1 })
        #expect(storedStatus == 201, "\(stored)")
        let (_, unknownChannel) = try await HTTP.post(
            "\(setup.server.baseURL)/channels/x';DROP%20TABLE%20cueline_events;--/commands",
            json: #"{"command":"cancel_current_event"}"#, headers: setup.auth("desk"))
        #expect(unknownChannel == 404)
        let log = try setup.cli.run(["log", "one", "--json"])
        #expect(log.status == 0)
        #expect(log.stdout.contains(#"DROP TABLE cueline_events; --"#), "the reason is stored verbatim")
        #expect(log.stdout.contains(#"q=';DROP%20TABLE%20x;--"#))
        #expect(try setup.cli.run(["verify", "one"]).status == 0, "the log and its hash chain are intact")
    }

    @Test(
        "SCTE-35: an out places a break carrying SCTE35-OUT, a repeat is the same command, the in ends it with SCTE35-IN"
    )
    func scte35() async throws {
        let setup = try await setUp()
        defer { setup.server.stop() }
        let url = "\(setup.server.baseURL)/channels/one/scte35"
        let start = "/DA0AAAAAAAA///wBQb+cr0AUAAeAhxDVUVJSAAAjn/PAAGlmbAICAAAAAAsoKGKNAIAmsnRfg=="
        let end = "/DAvAAAAAAAA///wBQb+dGKQoAAZAhdDVUVJSAAAjn+fCAgAAAAALKChijUCAKnMZ1g="
        let body = #"{"section":"\#(start)","asset_list":"https://ads.example.com/decide"}"#
        let (_, anonymous) = try await HTTP.post(url, json: body)
        #expect(anonymous == 401)
        let (_, wrongChannel) = try await HTTP.post(
            "\(setup.server.baseURL)/channels/two/scte35", json: body, headers: setup.auth("scte"))
        #expect(wrongChannel == 403)
        let (placed, placedStatus) = try await HTTP.post(url, json: body, headers: setup.auth("scte"))
        #expect(placedStatus == 201 && placed.contains("scte35-1207959694"), "\(placed)")
        // Encoders repeat a cue until the splice point: a repeat is the same command again, answered as it was.
        let (repeated, repeatedStatus) = try await HTTP.post(url, json: body, headers: setup.auth("scte"))
        #expect(repeatedStatus == 201 && repeated.contains(#""replayed":true"#), "\(repeated)")
        let (corrupt, corruptStatus) = try await HTTP.post(
            url,
            json:
                #"{"section":"\#(start.replacingOccurrences(of: "cr0AUAAe", with: "cr0AUAAf"))","asset_list":"https://ads.example.com/decide"}"#,
            headers: setup.auth("scte"))
        #expect(
            corruptStatus == 422 && corrupt.contains("CRC_32") && corrupt.contains(#""field":"section""#), "\(corrupt)")
        let (noAsset, noAssetStatus) = try await HTTP.post(
            url, json: #"{"section":"/DAgAAAAAAAAAP/wDwUAAAABf//+AFJlwAABAAAAAMOOklg="}"#, headers: setup.auth("scte"))
        #expect(noAssetStatus == 422 && noAsset.contains(#""field":"asset_uri""#), "\(noAsset)")

        // Commands take effect 50 ms after they arrive, on every instance, once its watermark (polled every 20 ms)
        // has passed that instant: a few tens of milliseconds, longer while the suite loads both cores.
        func playlistOnce(_ condition: (String) -> Bool) async throws -> String {
            let deadline = ContinuousClock.now + .seconds(5)
            while true {
                let (text, _) = try await HTTP.get("\(setup.server.baseURL)/channels/one/720p.m3u8")
                if condition(text) || ContinuousClock.now > deadline { return text }
                try await Task.sleep(for: .milliseconds(20))
            }
        }
        let playlist = try await playlistOnce { $0.contains(#"ID="scte35-1207959694""#) }
        #expect(
            playlist.contains(#"ID="scte35-1207959694""#) && playlist.contains("SCTE35-OUT=0xFC303400"), "\(playlist)")
        try await Task.sleep(for: .milliseconds(2200))  // on air
        let (ended, endedStatus) = try await HTTP.post(
            url, json: #"{"section":"\#(end)"}"#, headers: setup.auth("scte"))
        #expect(endedStatus == 201, "\(ended)")
        let after = try await playlistOnce { $0.contains("X-PLAYOUT-LIMIT=") }
        #expect(after.contains("X-PLAYOUT-LIMIT=") && after.contains("SCTE35-IN=0xFC302F00"), "\(ended) \(after)")
        let (again, againStatus) = try await HTTP.post(
            url, json: #"{"section":"\#(end)","reason":"repeat"}"#, headers: setup.auth("scte"))
        #expect(
            againStatus == 201 && again.contains(#""replayed":true"#), "a repeated in changes nothing: \(again)")
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("scte35-\(UUID().uuidString).m3u8")
        try Data(after.utf8).write(to: file)
        let lint = try setup.cli.run(["lint", file.path])
        #expect(lint.status == 0, "\(lint.stdout)")
    }

    private func signed(_ body: String, at seconds: Int, secret: String = CommandAPITests.hookSecret) -> [String:
        String]
    {
        let mac = hmacSHA256(key: Array(secret.utf8), message: Array("\(seconds).\(body)".utf8))
        return [
            "X-Cueline-Timestamp": String(seconds),
            "X-Cueline-Signature": "sha256=" + mac.map { String(format: "%02x", $0) }.joined(),
        ]
    }

    @Test(
        "hooks: a signed payload becomes a command; bad signatures, stale timestamps and replays are refused or harmless"
    )
    func hooks() async throws {
        let setup = try await setUp()
        defer { setup.server.stop() }
        let url = "\(setup.server.baseURL)/hooks/feed"
        let now = Int(Date().timeIntervalSince1970)
        let timeout = #"{"event":"timeout","team":"home","break":"tv-timeout-1","seconds":20}"#
        let (placed, placedStatus) = try await HTTP.post(url, json: timeout, headers: signed(timeout, at: now))
        #expect(placedStatus == 201 && placed.contains("tv-timeout-1"), "\(placed)")
        let (replayed, replayedStatus) = try await HTTP.post(url, json: timeout, headers: signed(timeout, at: now))
        #expect(
            replayedStatus == 201 && replayed.contains(#""replayed":true"#),
            "a replayed delivery is not applied twice: \(replayed)")
        let (badSignature, badStatus) = try await HTTP.post(
            url, json: timeout, headers: signed(timeout, at: now, secret: "another-secret-of-enough-length"))
        #expect(badStatus == 401 && badSignature.contains("signature"), "\(badSignature)")
        let (tampered, tamperedStatus) = try await HTTP.post(
            url, json: timeout.replacingOccurrences(of: "20", with: "90"), headers: signed(timeout, at: now))
        #expect(tamperedStatus == 401, "\(tampered)")
        let (expired, expiredStatus) = try await HTTP.post(url, json: timeout, headers: signed(timeout, at: now - 900))
        #expect(expiredStatus == 401 && expired.contains("replay protection"), "\(expired)")
        let (_, unsigned) = try await HTTP.post(url, json: timeout)
        #expect(unsigned == 401)
        let away = #"{"event":"timeout","team":"away"}"#
        let (ignored, ignoredStatus) = try await HTTP.post(url, json: away, headers: signed(away, at: now))
        #expect(ignoredStatus == 200 && ignored.contains("no rule"), "\(ignored)")
        let missing = #"{"event":"timeout","team":"home","break":"tv-timeout-2"}"#
        let (incomplete, incompleteStatus) = try await HTTP.post(url, json: missing, headers: signed(missing, at: now))
        #expect(incompleteStatus == 422 && incomplete.contains("$.seconds"), "\(incomplete)")
        let (_, unknownHook) = try await HTTP.post(
            "\(setup.server.baseURL)/hooks/nope", json: timeout, headers: signed(timeout, at: now))
        #expect(unknownHook == 404)
        let (events, _) = try await HTTP.get("\(setup.server.baseURL)/channels/one/events", headers: setup.auth("desk"))
        #expect(
            events.contains(#""actor":"hook:feed""#)
                && events.components(separatedBy: #""type":"BreakPlaced""#).count == 2, "\(events)")
    }

    /// Runs curl for at most `seconds` and returns what it printed.
    private func curl(_ arguments: [String], seconds: Int) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        process.arguments = ["-sN", "--max-time", String(seconds)] + arguments
        process.standardOutput = Pipe()
        try process.run()
        return process
    }

    private func output(_ process: Process) -> String {
        process.waitUntilExit()
        let data = (process.standardOutput as! Pipe).fileHandleForReading.readDataToEndOfFile()
        return String(decoding: data, as: UTF8.self)
    }

    @Test("GET …/events streams Server-Sent Events live, and resumes after Last-Event-ID")
    func serverSentEvents() async throws {
        let setup = try await setUp()
        defer { setup.server.stop() }
        let url = "\(setup.server.baseURL)/channels/one/events"
        // Read until the expected events arrive, with a generous deadline: setup and commands can take seconds on a
        // loaded machine, and a fixed window would cut the stream short.
        let stream = try CurlStream(
            ["-H", "Accept: text/event-stream", "-H", "Authorization: Bearer \(setup.tokens["wall"]!)", url],
            seconds: 60)
        defer { stream.stop() }
        #expect(await stream.wait(for: ["retry: 1000", "id: 1\n"]), "\(stream.text)")
        let (_, placed) = try await HTTP.post(
            setup.commands("one"),
            json:
                #"{"command":"place_break","id":"live","in":30,"duration":10,"asset_uri":"https://ads.example.com/a.m3u8"}"#,
            headers: setup.auth("desk"))
        #expect(placed == 201)
        // The stream is open and caught up: this event arrives live.
        #expect(await stream.wait(for: ["id: 2\n"]), "\(stream.text)")
        let (_, cancelled) = try await HTTP.post(
            setup.commands("one"), json: #"{"command":"cancel_break","id":"live"}"#, headers: setup.auth("desk"))
        #expect(cancelled == 201)
        #expect(await stream.wait(for: ["id: 3\n"]), "\(stream.text)")
        stream.stop()
        let text = stream.text
        #expect(text.hasPrefix("retry: 1000"))
        #expect(text.contains("id: 1\nevent: ChannelCreated\ndata: {"), "\(text)")
        #expect(text.contains("id: 2\nevent: BreakPlaced\ndata: {"), "\(text)")
        #expect(text.contains("id: 3\nevent: BreakCancelled\ndata: {"), "\(text)")

        let resumed = try CurlStream(
            [
                "-H", "Accept: text/event-stream", "-H", "Last-Event-ID: 2", "-H",
                "Authorization: Bearer \(setup.tokens["wall"]!)", url,
            ], seconds: 60)
        defer { resumed.stop() }
        #expect(await resumed.wait(for: ["id: 3\n"]), "\(resumed.text)")
        resumed.stop()
        #expect(
            resumed.text.contains("id: 3\n") && !resumed.text.contains("id: 2\n") && !resumed.text.contains("id: 1\n"),
            "\(resumed.text)")
        let refused = output(
            try curl(["-H", "Accept: text/event-stream", "-o", "/dev/null", "-w", "%{http_code}", url], seconds: 30))
        #expect(refused == "401")
    }

    @Test("the CLI with --server and --token goes through the API: same exit codes, token name as actor")
    func cliThroughServer() async throws {
        let setup = try await setUp()
        defer { setup.server.stop() }
        // No DATABASE_URL: only the server is reachable.
        let remote = CLIRunner(environment: [
            "CUELINE_SERVER": setup.server.baseURL, "CUELINE_TOKEN": setup.tokens["desk"]!,
        ])
        let placed = try remote.run([
            "break", "place", "one", "--id", "remote", "--in", "1m", "--duration", "1m30s", "--asset-uri",
            "https://ads.example.com/a.m3u8", "--command-id", "cli-1",
        ])
        #expect(placed.status == 0, "\(placed.stderr)")
        #expect(placed.stdout.hasPrefix("placed remote on one: start "), "the database path's line: \(placed.stdout)")
        let retried = try remote.run([
            "break", "place", "one", "--id", "remote", "--in", "1m", "--duration", "1m30s", "--asset-uri",
            "https://ads.example.com/a.m3u8", "--command-id", "cli-1",
        ])
        #expect(retried.status == 0 && retried.stdout.contains("already applied"), "\(retried.stdout)")
        let reused = try remote.run([
            "break", "place", "one", "--id", "remote", "--in", "3m", "--duration", "10", "--asset-uri",
            "https://ads.example.com/a.m3u8",
        ])
        #expect(reused.status == 3, "a reused break id is a conflict: \(reused.stderr)")
        let schedule = try remote.run(["schedule", "one"])
        #expect(
            schedule.status == 0 && schedule.stdout.contains("remote") && schedule.stdout.contains("scheduled")
                && schedule.stdout.contains("desk"), "\(schedule.stdout)")
        let viewer = CLIRunner(environment: [
            "CUELINE_SERVER": setup.server.baseURL, "CUELINE_TOKEN": setup.tokens["wall"]!,
        ])
        let refused = try viewer.run(["break", "cancel", "one", "remote"])
        #expect(refused.status == 1 && refused.stderr.contains("403"), "\(refused.stderr)")
        let cancelled = try remote.run(["break", "cancel", "one", "remote", "--json"])
        #expect(
            cancelled.status == 0 && cancelled.stdout.contains(#""type" : "BreakCancelled""#), "\(cancelled.stdout)")
        let unreachable = try CLIRunner(environment: ["CUELINE_SERVER": "http://127.0.0.1:1", "CUELINE_TOKEN": "x"])
            .run(["event", "cancel-current", "one"])
        #expect(unreachable.status == 1 && unreachable.stderr.contains("cannot reach"), "\(unreachable.stderr)")
    }

    @Test(
        "break starts snap to segment boundaries (align exact keeps them; a bad align is 422 / exit 2); cancel-current in the first segment removes the break"
    )
    func startAlignmentAndFirstSegmentRemoval() async throws {
        let setup = try await setUp()
        defer { setup.server.stop() }
        // 6 s segments: a first segment long enough to act in on a loaded machine.
        let created = try setup.cli.run([
            "channel", "create", "six", "--segment-duration", "6", "--window", "6", "--rendition",
            "720p,1000000,720p/seg{n}.ts",
        ])
        #expect(created.status == 0, "\(created.stderr)")
        let epoch = try #require(
            created.stdout.split(separator: " ").last.flatMap {
                Timestamp(iso8601: String($0).trimmingCharacters(in: .whitespacesAndNewlines))
            })

        // A bad value names the field: 422 over HTTP, a usage error (exit 2) from the CLI.
        let (bad, badStatus) = try await HTTP.post(
            setup.commands("six"),
            json:
                #"{"command":"place_break","in":30,"duration":10,"asset_uri":"https://ads.example.com/a.m3u8","align":"middle"}"#,
            headers: setup.auth("desk"))
        #expect(badStatus == 422 && bad.contains(#""field":"align""#), "\(bad)")
        let badCLI = try setup.cli.run([
            "break", "place", "six", "--in", "30", "--duration", "10", "--asset-uri", "https://ads.example.com/a.m3u8",
            "--align", "middle",
        ])
        #expect(badCLI.status == 2 && badCLI.stderr.contains("--align"), "\(badCLI.stderr)")

        // exact keeps the start given, off the boundaries.
        let offBoundary = epoch.adding(milliseconds: 6000 * 100 + 1234)
        let (exact, exactStatus) = try await HTTP.post(
            setup.commands("six"),
            json:
                #"{"command":"place_break","id":"exact","start":"\#(offBoundary.iso8601)","duration":5,"asset_uri":"https://ads.example.com/a.m3u8","align":"exact"}"#,
            headers: setup.auth("desk"))
        #expect(exactStatus == 201 && exact.contains(offBoundary.iso8601) && !exact.contains("snapped"), "\(exact)")
        // The default moves it to the next boundary and says so, in the HTTP answer and the CLI's.
        let later = epoch.adding(milliseconds: 6000 * 110 + 1234)
        let (snapped, snappedStatus) = try await HTTP.post(
            setup.commands("six"),
            json:
                #"{"command":"place_break","id":"snapped","start":"\#(later.iso8601)","duration":5,"asset_uri":"https://ads.example.com/a.m3u8"}"#,
            headers: setup.auth("desk"))
        let boundary = epoch.adding(milliseconds: 6000 * 111)
        #expect(
            snappedStatus == 201
                && snapped.contains(
                    #""note":"start \#(boundary.iso8601) (snapped from \#(later.iso8601) to the next segment boundary"#),
            "\(snapped)")

        // Placed from the CLI to start now: it starts at the next boundary, ahead of the live edge.
        let placed = try setup.cli.run([
            "break", "place", "six", "--id", "first", "--in", "0", "--duration", "30", "--asset-uri",
            "https://ads.example.com/a.m3u8", "--json",
        ])
        #expect(placed.status == 0, "\(placed.stderr)")
        let answer = try #require(try JSONSerialization.jsonObject(with: Data(placed.stdout.utf8)) as? [String: Any])
        let payload = try #require((answer["events"] as? [[String: Any]])?.first?["payload"] as? String)
        let startText = try #require(
            (try JSONSerialization.jsonObject(with: Data(payload.utf8)) as? [String: Any])?["start"] as? String)
        let start = try #require(Timestamp(iso8601: startText))
        #expect(start.milliseconds(since: epoch) % 6000 == 0, "\(startText) is on a boundary")
        #expect(
            answer["note"] == nil || (answer["note"] as? String)?.contains("snapped from") == true, "\(placed.stdout)")

        // 1 s into its first segment: the live edge is still at its start, no published segment holds it.
        let now = Timestamp(milliseconds: Int64(Date().timeIntervalSince1970 * 1000))
        try await Task.sleep(for: .milliseconds(max(0, start.milliseconds(since: now) + 1000)))
        let removed = try setup.cli.run(["event", "cancel-current", "six"])
        #expect(removed.status == 0, "\(removed.stderr)")
        #expect(
            removed.stdout.contains(
                "first had not reached the live edge (no segment holds it yet): removed instead of ended early"),
            "\(removed.stdout)")
        let asRun = try setup.cli.run(["as-run", "six", "--format", "csv"])
        #expect(asRun.stdout.contains("cancel-current (before its first segment was served)"), "\(asRun.stdout)")
        let (schedule, _) = try await HTTP.get(
            "\(setup.server.baseURL)/channels/six/schedule", headers: setup.auth("desk"))
        #expect(schedule.contains(#""cancelled_how":"cancel-current""#), "\(schedule)")
        // Never inside a segment: gone from every playlist from the removal on (after the effect delay).
        try await Task.sleep(for: .milliseconds(300))
        for _ in 0..<8 {
            let (playlist, _) = try await HTTP.get("\(setup.server.baseURL)/channels/six/720p.m3u8")
            #expect(!playlist.contains(#"ID="first""#), "\(playlist)")
            try await Task.sleep(for: .seconds(1))
        }
        // Nothing left on the clock: cancel-current is refused again.
        #expect(try setup.cli.run(["event", "cancel-current", "six"]).status == 1)
    }

    @Test("/openapi.json is the checked-in openapi.json, and every documented path and method has a route")
    func openAPI() async throws {
        let setup = try await setUp()
        defer { setup.server.stop() }
        let checkedIn = try String(
            contentsOf: TestDatabase.repositoryRoot.appendingPathComponent("openapi.json"), encoding: .utf8)
        let (served, status) = try await HTTP.get("\(setup.server.baseURL)/openapi.json")
        #expect(status == 200 && served == checkedIn, "regenerate it: cueline openapi > openapi.json")
        let document = try #require(try JSONSerialization.jsonObject(with: Data(served.utf8)) as? [String: Any])
        let paths = try #require(document["paths"] as? [String: [String: Any]])
        #expect(paths.count == 20)  // + /channels/{channel}/prerolls/{id}/assets.json (issue 35)
        for (template, operations) in paths {
            let path = template.replacingOccurrences(of: "{channel}", with: "one").replacingOccurrences(
                of: "{rendition}", with: "720p"
            )
            .replacingOccurrences(of: "{id}", with: "x").replacingOccurrences(of: "{name}", with: "feed")
            for method in operations.keys {
                let (body, code) =
                    method == "post"
                    ? try await HTTP.post(setup.server.baseURL + path, json: "{}", headers: setup.auth("desk"))
                    : method == "delete"
                        ? try await HTTP.delete(setup.server.baseURL + path, headers: setup.auth("desk"))
                        : try await HTTP.get(
                            setup.server.baseURL + path + (path.hasSuffix("/events") ? "?limit=1" : ""),
                            headers: setup.auth("desk"))
                // Our own 404s name what is missing; the router's bare 404 means the path has no route.
                #expect(code != 404 || body.contains(#""error""#), "\(method.uppercased()) \(template) has no route")
                #expect(code != 405, "\(method.uppercased()) \(template) is not allowed")
            }
        }
    }
}
