import Foundation
import EventStore
import HLS
import TestSupport
import Testing

/// Requests and command lines a hostile client would send (issue 11 #1–#4, #11, #14): each is refused at the edge
/// with the field named, the process stays up, and the log, playlists and terminals stay clean.
@Suite(
    "Hostile input at the edges",
    .enabled(
        if: TestDatabase.isConfigured && CLIRunner.isAvailable, "needs DATABASE_URL and CUELINE_BIN (scripts/test.sh)"))
struct HostileInputTests {
    static let hookSecret = "a-feed-secret-of-32-bytes-length"

    struct Setup {
        var cli: CLIRunner
        /// Nil for tests of the CLI alone.
        var server: ServerProcess?

        var base: String { server!.baseURL }
        var commands: String { "\(base)/channels/c1/commands" }

        /// The process still answers: nothing above killed it.
        func alive() async throws -> Bool {
            (try? await HTTP.get(base + "/healthz"))?.1 == 200
        }

        func events() async throws -> String {
            try await HTTP.get("\(base)/channels/c1/events?limit=1000").0
        }
    }

    /// Channel c1 (1 s segments), served without tokens (so `actor` is taken from the body) and with a hook.
    private func setUp(serve: Bool = true) async throws -> Setup {
        let url = try await TestDatabase.makeFreshDatabase()
        let cli = CLIRunner(environment: ["DATABASE_URL": url])
        #expect(try cli.run(["migrate"]).status == 0)
        let created = try cli.run([
            "channel", "create", "c1", "--segment-duration", "1", "--window", "6", "--rendition",
            "720p,1000000,720p/seg{n}.ts",
        ])
        #expect(created.status == 0, "\(created.stderr)")
        let hooks = FileManager.default.temporaryDirectory.appendingPathComponent("hooks-\(UUID().uuidString).json")
        try Data(
            """
            {"hooks": [{"name": "feed", "secret": "\(Self.hookSecret)", "tolerance_seconds": 300, "rules": [
              {"when": {"event": "goal"}, "channel": "c1", "command": {"command": "cancel_current_event"}}]}]}
            """.utf8
        ).write(to: hooks)
        // One server per test, arguments looped inside: dozens of servers side by side would fight over ports.
        guard serve else { return Setup(cli: cli, server: nil) }
        // The port is picked at random: another process (a flood's client ports) may hold it; try another.
        for attempt in 1...3 {
            let server = try ServerProcess(
                databaseURL: url, extraArguments: ["--unauthenticated-commands", "--hooks", hooks.path])
            do {
                try await server.waitUntilReady()
                return Setup(cli: cli, server: server)
            } catch  where attempt < 3 && server.log.contains("Address already in use") {
                server.stop()
            }
        }
        preconditionFailure("unreachable: the last attempt returns or throws")
    }

    private func field(_ body: String) -> String? {
        (try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])?["field"] as? String
    }

    private func json(_ value: [String: Any]) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: value, options: [.sortedKeys]), as: UTF8.self)
    }

    private let place: [String: Any] = [
        "command": "place_break", "in": 30, "duration": 10, "asset_uri": "https://ads.example.com/a.m3u8",
    ]

    // Issue 11 #1.
    @Test("a huge _HLS_start_offset does not crash the server")
    func startOffset() async throws {
        let setup = try await setUp()
        defer { setup.server?.stop() }
        var body = place
        body["id"] = "brk-1"
        let (_, placed) = try await HTTP.post(setup.commands, json: try json(body))
        #expect(placed == 201)
        for offset in [
            "9223372036854775807", "9223372036854775.807", "-9223372036854775808", "99999999999999999999", "1e300",
            "NaN", "-0",
        ] {
            let (_, unknown) = try await HTTP.get(
                "\(setup.base)/channels/c1/breaks/x/assets.json?_HLS_start_offset=\(offset)")
            #expect(unknown == 404, "\(offset)")
            let (list, status) = try await HTTP.get(
                "\(setup.base)/channels/c1/breaks/brk-1/assets.json?_HLS_start_offset=\(offset)")
            #expect(status == 200, "\(offset): \(list)")
        }
        let (all, _) = try await HTTP.get(
            "\(setup.base)/channels/c1/breaks/brk-1/assets.json?_HLS_start_offset=9223372036854775807")
        let (whole, _) = try await HTTP.get("\(setup.base)/channels/c1/breaks/brk-1/assets.json")
        #expect(all == whole && whole.contains("a.m3u8"), "the list is never trimmed to the offset (issue 16)")
        #expect(try await setup.alive())
    }

    // Issue 11 #2.
    @Test("SCTE-35: an out without a break duration and duration 1e300 is a 422, not a trap")
    func scte35Duration() async throws {
        let setup = try await setUp()
        defer { setup.server?.stop() }
        // splice_insert, event 42, out of network, immediate, no break duration (CRC computed for this test).
        let section = "0xFC301B00000000000000FFF00A050000002A7FDF000100000000107FB769"
        for duration in ["1e300", "-1e300", "9.3e15", "-1", "3600.001"] {
            let (answer, status) = try await HTTP.post(
                "\(setup.base)/channels/c1/scte35",
                json: #"{"section":"\#(section)","asset_uri":"https://ads.example.com/a.m3u8","duration":\#(duration)}"#
            )
            #expect(status == 422 && field(answer) == "duration", "\(duration): \(status) \(answer)")
        }
        #expect(try await setup.alive())
        let (placed, status) = try await HTTP.post(
            "\(setup.base)/channels/c1/scte35",
            json: #"{"section":"\#(section)","asset_uri":"https://ads.example.com/a.m3u8","duration":30}"#)
        #expect(status == 201 && placed.contains("scte35-42"), "\(placed)")
    }

    // Issue 11 #3.
    @Test("a start outside 2000…2200 or more than 7 days ahead is refused and the channel stays usable")
    func startBounds() async throws {
        let setup = try await setUp()
        defer { setup.server?.stop() }
        for start in [
            "9999-12-31T23:59:59.999-23:59", "9999-12-31T23:59:59.999Z", "2200-01-01T00:00:00.001Z",
            "1999-12-31T23:59:59Z",
            "0000-01-01T00:00:00Z", "2199-12-31T00:00:00Z", "2026-13-01T00:00:00Z", "+275760-09-13T00:00:00Z",
        ] {
            let (answer, status) = try await HTTP.post(
                setup.commands,
                json: try json([
                    "command": "place_break", "start": start, "duration": 10,
                    "asset_uri": "https://ads.example.com/a.m3u8",
                ]))
            #expect(status == 422 && field(answer) == "start", "\(start): \(status) \(answer)")
        }
        let (eightDays, eightDaysStatus) = try await HTTP.post(
            setup.commands,
            json: try json([
                "command": "place_break",
                "start": Timestamp(milliseconds: Int64(Date().timeIntervalSince1970 * 1000) + 8 * 86_400_000).iso8601,
                "duration": 10, "asset_uri": "https://ads.example.com/a.m3u8",
            ]))
        #expect(eightDaysStatus == 422 && field(eightDays) == "start", "\(eightDays)")
        // Nothing was written; the channel takes commands, and schedule, replay and as-run answer.
        let (placed, placedStatus) = try await HTTP.post(setup.commands, json: try json(place))
        #expect(placedStatus == 201, "\(placed)")
        #expect(try await HTTP.get("\(setup.base)/channels/c1/schedule").1 == 200)
        #expect(try await HTTP.get("\(setup.base)/channels/c1/as-run").1 == 200)
        let (replay, replayStatus) = try await HTTP.get(
            "\(setup.base)/channels/c1/replay?at=\(Timestamp(milliseconds: Int64(Date().timeIntervalSince1970 * 1000)).iso8601)"
        )
        #expect(replayStatus == 200, "\(replay)")
        #expect(
            try await setup.events().components(separatedBy: "\"BreakPlaced\"").count == 2, "one break, the valid one")
    }

    @Test("replay at and as-run from/to are bounded instants")
    func queryInstants() async throws {
        let setup = try await setUp()
        defer { setup.server?.stop() }
        for (path, name) in [("replay?at=", "at"), ("as-run?from=", "from"), ("as-run?to=", "to")] {
            try await queryInstant(setup, path: path, name: name)
        }
    }

    private func queryInstant(_ setup: Setup, path: String, name: String) async throws {
        for value in ["9999-12-31T23:59:59.999-23:59", "1970-01-01T00:00:00Z", "2200-01-01T00:00:00.001Z", "x"] {
            let encoded = value.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? value
            let (answer, status) = try await HTTP.get("\(setup.base)/channels/c1/\(path)\(encoded)")
            #expect(status == 422 && field(answer) == name, "\(value): \(status) \(answer)")
        }
    }

    @Test("channel create --epoch outside the range is a usage error and the id stays usable")
    func epoch() async throws {
        let setup = try await setUp(serve: false)
        defer { setup.server?.stop() }
        for epoch in ["9999-12-31T23:59:59.999-23:59", "9999-12-31T23:59:59.999Z", "1970-01-01T00:00:00Z"] {
            let refused = try setup.cli.run([
                "channel", "create", "c2", "--segment-duration", "1", "--window", "6", "--rendition",
                "720p,1000000,720p/seg{n}.ts", "--epoch", epoch,
            ])
            #expect(
                refused.status == 2 && refused.stderr.contains("--epoch"),
                "\(epoch): \(refused.status) \(refused.stderr)")
        }
        let created = try setup.cli.run([
            "channel", "create", "c2", "--segment-duration", "1", "--window", "6", "--rendition",
            "720p,1000000,720p/seg{n}.ts",
        ])
        #expect(created.status == 0, "\(created.stderr)")
    }

    // Issue 11 #4.
    @Test("NUL and other control characters in reason, actor and Idempotency-Key are refused naming the field")
    func controlCharactersInLabels() async throws {
        let setup = try await setUp()
        defer { setup.server?.stop() }
        for character in ["\u{0}", "\u{1B}", "\u{7F}", "\n", "\t", "\u{85}", "\u{9F}"] {
            try await controlCharactersInLabels(setup, character)
        }
    }

    private func controlCharactersInLabels(_ setup: Setup, _ character: String) async throws {
        for key in ["reason", "actor"] {
            var body = place
            body[key] = "before\(character)after"
            let (answer, status) = try await HTTP.post(setup.commands, json: try json(body))
            #expect(status == 422 && field(answer) == key, "\(key): \(status) \(answer)")
        }
        var long = place
        long["reason"] = String(repeating: "r", count: 1025)
        let (tooLong, tooLongStatus) = try await HTTP.post(setup.commands, json: try json(long))
        #expect(tooLongStatus == 422 && field(tooLong) == "reason", "\(tooLong)")
        #expect(!(try await setup.events()).contains("BreakPlaced"), "nothing was written")
        // A header cannot carry NUL or a line break at all; the characters that reach the server are refused there.
        if character == "\u{1B}" || character == "\t" || character == "\u{7F}" {
            let (answer, status) = try await HTTP.post(
                setup.commands, json: try json(place), headers: ["Idempotency-Key": "key\(character)1"])
            #expect(status == 422 || status == 400, "\(status) \(answer)")
            if status == 422 { #expect(field(answer) == "Idempotency-Key") }
        }
        #expect(!(try await setup.events()).contains("BreakPlaced"), "nothing was written")
    }

    // Issue 11 #11.
    @Test("control characters, spaces and quotes in asset URIs and attribute values never reach a playlist")
    func controlCharactersInPlaylists() async throws {
        let setup = try await setUp()
        defer { setup.server?.stop() }
        for character in ["\u{0}", "\u{9}", "\u{1B}", "\u{7F}", "\u{9B}", "\r", " "] {
            try await controlCharactersInPlaylists(setup, character)
        }
        try await Task.sleep(for: .milliseconds(150))
        let (playlist, _) = try await HTTP.get("\(setup.base)/channels/c1/720p.m3u8")
        #expect(!playlist.replacingOccurrences(of: "\n", with: "").containsControlCharacter)
        #expect(Lint.check(playlist).filter { $0.rule == "syntax.control-character" }.isEmpty)
    }

    private func controlCharactersInPlaylists(_ setup: Setup, _ character: String) async throws {
        var uri = place
        uri["asset_uri"] = "https://ads.example.com/a\(character).m3u8"
        let (uriAnswer, uriStatus) = try await HTTP.post(setup.commands, json: try json(uri))
        #expect(uriStatus == 422 && field(uriAnswer) == "asset_uri", "\(uriAnswer)")
        var list = place
        list.removeValue(forKey: "asset_uri")
        list["asset_list"] = "https://ads.example.com/\(character)"
        let (listAnswer, listStatus) = try await HTTP.post(setup.commands, json: try json(list))
        #expect(listStatus == 422 && field(listAnswer) == "asset_list", "\(listAnswer)")
        var attribute = place
        attribute["attributes"] = ["X-COM-EXAMPLE": "v\(character)w"]
        let (attributeAnswer, attributeStatus) = try await HTTP.post(setup.commands, json: try json(attribute))
        if character == " " {
            #expect(attributeStatus == 201, "a space is fine in an attribute value: \(attributeAnswer)")
        } else {
            #expect(attributeStatus == 422 && field(attributeAnswer) == "attributes", "\(attributeAnswer)")
        }
        var id = place
        id["id"] = "brk\(character)1"
        let (idAnswer, idStatus) = try await HTTP.post(setup.commands, json: try json(id))
        #expect(idStatus == 422 && field(idAnswer) == "id", "\(idAnswer)")
    }

    @Test("ids with a leading '_' or '-' are refused by the API and the CLI, as tokens and hooks always did")
    func identifiers() async throws {
        let setup = try await setUp()
        defer { setup.server?.stop() }
        for id in ["_brk", "-brk", "Brk", String(repeating: "b", count: 65)] {
            var body = place
            body["id"] = id
            let (answer, status) = try await HTTP.post(setup.commands, json: try json(body))
            #expect(status == 422 && field(answer) == "id", "\(id): \(answer)")
        }
        let channel = try setup.cli.run([
            "channel", "create", "_c3", "--segment-duration", "1", "--window", "6", "--rendition",
            "720p,1000000,720p/seg{n}.ts",
        ])
        #expect(channel.status == 2, "\(channel.stderr)")
        let rendition = try setup.cli.run([
            "channel", "create", "c3", "--segment-duration", "1", "--window", "6", "--rendition",
            "-720p,1000000,720p/seg{n}.ts",
        ])
        #expect(rendition.status == 2, "\(rendition.stderr)")
    }

    // Issue 11 #11 (CLI).
    @Test("the CLI refuses a newline in a codec and a URI template starting with a space or holding a tag")
    func channelFields() async throws {
        let setup = try await setUp(serve: false)
        defer { setup.server?.stop() }
        let base = ["channel", "create", "c4", "--segment-duration", "1", "--window", "6"]
        let codec = try setup.cli.run(
            base + ["--rendition", "720p,1000000,720p/seg{n}.ts", "--codecs", "720p=avc1.64001f\n#EXT-X-ENDLIST"])
        #expect(codec.status == 2 && codec.stderr.contains("codec"), "\(codec.status) \(codec.stderr)")
        for template in [" #EXT-X-ENDLIST{n}", "seg{n}.ts\n#EXT-X-ENDLIST", "#EXT-X-ENDLIST{n}", "seg\u{1B}{n}.ts"] {
            let refused = try setup.cli.run(base + ["--rendition", "720p,1000000,\(template)"])
            #expect(refused.status == 2, "\(template.debugDescription): \(refused.status) \(refused.stderr)")
            #expect(!refused.stderr.contains("\u{1B}"), "errors are escaped for the terminal")
        }
        let window = try setup.cli.run([
            "channel", "create", "c4", "--segment-duration", "60", "--window", "\(Int.max)", "--rendition",
            "720p,1000000,720p/seg{n}.ts",
        ])
        #expect(window.status == 2, "\(window.status) \(window.stderr)")
        #expect(try setup.cli.run(base + ["--rendition", "720p,1000000,720p/seg{n}.ts"]).status == 0)
    }

    @Test("a {n%K} whose K is not a positive whole number is refused, not served as the literal template")
    func moduloTemplate() async throws {
        let setup = try await setUp(serve: false)
        defer { setup.server?.stop() }
        let base = ["channel", "create", "c5", "--segment-duration", "1", "--window", "6"]
        for template in ["a{n%0}.ts", "a{n%-1}.ts", "a{n%x}.ts", "a{n%}.ts", "a{nx}.ts"] {
            let refused = try setup.cli.run(base + ["--rendition", "720p,1000,\(template)"])
            #expect(
                refused.status == 2 && refused.stderr.contains("{n"), "\(template): \(refused.status) \(refused.stderr)"
            )
        }
        #expect(try setup.cli.run(base + ["--rendition", "720p,1000,a{n%3}.ts"]).status == 0)
    }

    @Test(
        "_HLS_start_offset, whatever its syntax, answers the whole list: hls.js lays it out from the break's start (issue 16)"
    )
    func startOffsetSyntax() async throws {
        let setup = try await setUp()
        defer { setup.server?.stop() }
        var body = place
        body["id"] = "pod-1"
        body["asset_uri"] = nil
        body["duration"] = 20
        body["pod"] = [
            ["uri": "https://ads.example.com/1.m3u8", "duration": 10],
            ["uri": "https://ads.example.com/2.m3u8", "duration": 10],
        ]
        let (placedBody, placed) = try await HTTP.post(setup.commands, json: try json(body))
        #expect(placed == 201, "\(placedBody)")
        func list(_ offset: String) async throws -> String {
            try await HTTP.get(
                "\(setup.base)/channels/c1/breaks/pod-1/assets.json?_HLS_primary_id=p&_HLS_start_offset=\(offset)"
            ).0
        }
        let whole = try await HTTP.get("\(setup.base)/channels/c1/breaks/pod-1/assets.json").0
        #expect(whole.contains("1.m3u8") && whole.contains("2.m3u8"))
        for offset in [
            "0", "10", "86400", "10.000000000000000000001", "1e1", "1e308", "1e999999999999", "99999999999999999999999",
            "-1e308", "NaN", "inf",
            "", "1e", "0x10", "1..2", "%00", "%0d%0a",
        ] {
            #expect(try await list(offset) == whole, "\(offset)")
        }
        #expect(try await setup.alive())
    }

    @Test("cueline log escapes line separators, bidi overrides and zero-width characters in reasons")
    func invisibleCharactersInLog() async throws {
        let setup = try await setUp()
        defer { setup.server?.stop() }
        var body = place
        body["id"] = "brk-bidi"
        body["reason"] = "paid\u{202E}cod\u{2028}x\u{200B}y\u{FEFF}z\u{2066}w\u{2069}"
        let (answer, placed) = try await HTTP.post(setup.commands, json: try json(body))
        #expect(placed == 201, "\(answer)")
        let log = try setup.cli.run(["log", "c1"])
        #expect(log.status == 0, "\(log.stderr)")
        #expect(
            log.stdout.contains("paid\\u{202E}cod\\u{2028}x\\u{200B}y\\u{FEFF}z\\u{2066}w\\u{2069}"), "\(log.stdout)")
        for scalar in ["\u{202E}", "\u{2028}", "\u{200B}", "\u{FEFF}", "\u{2066}", "\u{2069}"] {
            #expect(!log.stdout.contains(scalar), "\(scalar.unicodeScalars.first!.value) printed raw")
        }
        // The log keeps what was acknowledged, byte for byte: escaping is for terminals only.
        #expect(try await setup.events().contains("paid\u{202E}cod\u{2028}x\u{200B}y\u{FEFF}z\u{2066}w\u{2069}"))
    }

    @Test(
        "the CLI refuses control characters in --reason, --actor, --command-id, --asset-uri and --attr with exit code 2",
        arguments: [
            ("--reason", "a\u{1B}[2Jb"), ("--reason", "a\tb"), ("--actor", "a\nb"), ("--command-id", "k\u{7F}"),
            ("--asset-uri", "https://ads.example.com/\u{1B}.m3u8"), ("--attr", "X-A=v\u{1B}w"), ("--id", "_brk"),
        ])
    func cliLabels(option: String, value: String) async throws {
        let setup = try await setUp(serve: false)
        defer { setup.server?.stop() }
        var arguments = ["break", "place", "c1", "--in", "30", "--duration", "10"]
        if option != "--asset-uri" { arguments += ["--asset-uri", "https://ads.example.com/a.m3u8"] }
        let refused = try setup.cli.run(arguments + [option, value])
        #expect(refused.status == 2 && refused.stderr.contains(option), "\(refused.status) \(refused.stderr)")
        #expect(!refused.stderr.contains("\u{1B}"))
        let schedule = try setup.cli.run(["schedule", "c1", "--json"])
        #expect(
            schedule.status == 0 && schedule.stdout.filter { !$0.isWhitespace }.contains(#""breaks":[]"#),
            "nothing was written: \(schedule.stdout)")
    }

    // Issue 11 #14 (CLI part).
    @Test(
        "break place --in with a huge duration is a usage error, not a crash",
        arguments: [
            "9999999999999999h", "9223372036854775807", "9223372036854775807ms", "2562047788015216h", "25h",
            "1h1h1h1h1h1h1h1h1h1h1h1h1h1h1h1h1h1h1h1h1h1h1h1h1h",
        ])
    func hugeDurations(duration: String) async throws {
        let setup = try await setUp(serve: false)
        defer { setup.server?.stop() }
        let refused = try setup.cli.run([
            "break", "place", "c1", "--in", duration, "--duration", "10", "--asset-uri",
            "https://ads.example.com/a.m3u8",
        ])
        #expect(refused.status == 2, "\(duration): \(refused.status) \(refused.stderr)")
        let limit = try setup.cli.run(["break", "limit", "c1", "brk-1", "--playout-limit", duration])
        #expect(limit.status == 2, "\(duration): \(limit.status) \(limit.stderr)")
    }

    // Issue 11 #14 (hook part).
    @Test("a signed hook with X-Cueline-Timestamp at the ends of Int64 is refused, not a crash")
    func hookTimestamp() async throws {
        let setup = try await setUp()
        defer { setup.server?.stop() }
        for timestamp in ["9223372036854775807", "-9223372036854775808", "9223372036854775", "-1"] {
            try await hookTimestamp(setup, timestamp)
        }
    }

    private func hookTimestamp(_ setup: Setup, _ timestamp: String) async throws {
        let body = #"{"event":"goal"}"#
        let mac = hmacSHA256(key: Array(Self.hookSecret.utf8), message: Array("\(timestamp).\(body)".utf8))
        let headers = [
            "X-Cueline-Timestamp": timestamp,
            "X-Cueline-Signature": "sha256=" + mac.map { String(format: "%02x", $0) }.joined(),
        ]
        let (answer, status) = try await HTTP.post("\(setup.base)/hooks/feed", json: body, headers: headers)
        #expect(status == 401 && answer.contains("server clock"), "\(status) \(answer)")
        #expect(try await setup.alive())
    }

    @Test("event pages: after, limit and Last-Event-ID at the extremes are read exactly or refused, never read as 0")
    func eventPages() async throws {
        let setup = try await setUp()
        defer { setup.server?.stop() }
        let (_, placed) = try await HTTP.post(setup.commands, json: try json(place))
        #expect(placed == 201)
        let events = "\(setup.base)/channels/c1/events"
        for query in [
            "after=-1", "after=abc", "after=9223372036854775808", "limit=-5", "limit=99999999999999999999", "after=1e3",
            "limit=0", "limit=1001",
        ] {
            let (answer, status) = try await HTTP.get("\(events)?\(query)")
            #expect(
                status == 422 && field(answer) == String(query.prefix { $0 != "=" }), "\(query): \(status) \(answer)")
        }
        let (tail, tailStatus) = try await HTTP.get("\(events)?after=9223372036854775807&limit=1000")
        #expect(tailStatus == 200 && !tail.contains("BreakPlaced"), "\(tail)")
        let (header, headerStatus) = try await HTTP.get(events, headers: ["Last-Event-ID": "-1"])
        #expect(headerStatus == 422 && field(header) == "Last-Event-ID", "\(header)")
        // 0 and 1001 were read as 1 and 1000 (issue 34): refused above; the range's ends are read as given.
        let (page, pageStatus) = try await HTTP.get("\(events)?after=1&limit=1")
        #expect(pageStatus == 200 && page.contains("BreakPlaced"), "\(page)")
        #expect(try await setup.alive())
    }
}
