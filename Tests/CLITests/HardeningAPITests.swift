import Foundation
import EventStore
import TestSupport
import Testing

/// Issue 11 regressions at the HTTP edge: hook replays, SCTE-35 cues resent after their break, what the SCTE-35
/// route tells a token about another channel, and the media directory. Against a real server and database.
@Suite(
    "Hardening: hook replays, SCTE-35 repeats and scope, media paths", .serialized,
    .enabled(
        if: TestDatabase.isConfigured && CLIRunner.isAvailable, "needs DATABASE_URL and CUELINE_BIN (scripts/test.sh)"))
struct HardeningAPITests {
    static let secret = "a-feed-secret-of-32-bytes-length"
    static let out = "/DA0AAAAAAAA///wBQb+cr0AUAAeAhxDVUVJSAAAjn/PAAGlmbAICAAAAAAsoKGKNAIAmsnRfg=="
    static let back = "/DAvAAAAAAAA///wBQb+dGKQoAAZAhdDVUVJSAAAjn+fCAgAAAAALKChijUCAKnMZ1g="

    struct Setup {
        var cli: CLIRunner
        var server: ServerProcess
        var tokens: [String: String]
        var media: URL

        func auth(_ name: String) -> [String: String] { ["Authorization": "Bearer \(tokens[name]!)"] }
        func url(_ path: String) -> String { server.baseURL + path }
    }

    /// Channels `one` and `two` (1 s segments), tokens `desk` (operator, all channels), `scte` (automation on
    /// `one`), `wall` (viewer); hooks `feed` (signed timestamp and body) and `ids` (a delivery id in the body);
    /// a media directory with a file, a symlink inside and symlinks out.
    private func setUp() async throws -> Setup {
        let (url, cli) = try await CLIRunner.onFreshDatabase(channels: ["one", "two"])
        let tokens = try cli.createTokens([
            ("desk", ["--role", "operator"]),
            (
                "scte",
                [
                    "--role", "automation", "--channel", "one", "--command", "place_break", "--command",
                    "cancel_current_event", "--command", "cancel_break",
                ]
            ),
            ("wall", ["--role", "viewer"]),
        ])
        let temporary = FileManager.default.temporaryDirectory.appendingPathComponent("hardening-\(UUID().uuidString)")
        let media = temporary.appendingPathComponent("media")
        let outside = temporary.appendingPathComponent("outside")
        try FileManager.default.createDirectory(
            at: media.appendingPathComponent("sub"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
        try Data("segment\n".utf8).write(to: media.appendingPathComponent("sub/seg1.ts"))
        try Data("secret\n".utf8).write(to: outside.appendingPathComponent("secret.txt"))
        try FileManager.default.createSymbolicLink(
            atPath: media.appendingPathComponent("alias.ts").path, withDestinationPath: "sub/seg1.ts")
        try FileManager.default.createSymbolicLink(
            atPath: media.appendingPathComponent("leak.txt").path,
            withDestinationPath: outside.appendingPathComponent("secret.txt").path)
        try FileManager.default.createSymbolicLink(
            atPath: media.appendingPathComponent("out").path, withDestinationPath: outside.path)
        let hooks = temporary.appendingPathComponent("hooks.json")
        try Data(
            """
            {"hooks": [
              {"name": "feed", "secret": "\(Self.secret)", "tolerance_seconds": 300, "rules": [
                {"when": {"event": "timeout"}, "channel": "one",
                 "command": {"command": "place_break", "in": 2, "duration": 1, "asset_uri": "https://ads.example.com/t.m3u8"}}]},
              {"name": "ids", "secret": "\(Self.secret)", "delivery_id": "$.delivery", "rules": [
                {"when": {"event": "timeout"}, "channel": "two",
                 "command": {"command": "place_break", "in": 2, "duration": 1, "asset_uri": "https://ads.example.com/t.m3u8"}}]}
            ]}
            """.utf8
        ).write(to: hooks)
        let server = try ServerProcess(
            databaseURL: url, extraArguments: ["--hooks", hooks.path, "--media-dir", media.path])
        try await server.waitUntilReady()
        return Setup(cli: cli, server: server, tokens: tokens, media: media)
    }

    private func signed(_ body: String, at seconds: Int) -> [String: String] {
        let mac = hmacSHA256(key: Array(Self.secret.utf8), message: Array("\(seconds).\(body)".utf8))
        return [
            "X-Cueline-Timestamp": String(seconds),
            "X-Cueline-Signature": "sha256=" + mac.map { String(format: "%02x", $0) }.joined(),
        ]
    }

    private func count(_ type: String, on channel: String, _ setup: Setup) async throws -> Int {
        let (events, _) = try await HTTP.get(setup.url("/channels/\(channel)/events"), headers: setup.auth("desk"))
        return events.components(separatedBy: #""type":"\#(type)""#).count - 1
    }

    @Test("hooks: a captured delivery re-sent with another Idempotency-Key is the same command (defect 5)")
    func hookReplayWithAnotherKey() async throws {
        let setup = try await setUp()
        defer { setup.server.stop() }
        let now = Int(Date().timeIntervalSince1970)
        let body = #"{"event":"timeout"}"#
        let (placed, placedStatus) = try await HTTP.post(
            setup.url("/hooks/feed"), json: body,
            headers: signed(body, at: now).merging(["Idempotency-Key": "first"]) { $1 })
        #expect(placedStatus == 201 && placed.contains(#""replayed":false"#), "\(placed)")
        // Late enough that a second break would not overlap the first: only the command id stops it.
        try await Task.sleep(for: .milliseconds(1500))
        let (replayed, replayedStatus) = try await HTTP.post(
            setup.url("/hooks/feed"), json: body,
            headers: signed(body, at: now).merging(["Idempotency-Key": "second"]) { $1 })
        #expect(replayedStatus == 201 && replayed.contains(#""replayed":true"#), "\(replayed)")
        #expect(try await count("BreakPlaced", on: "one", setup) == 1)

        // With a delivery id in the signed body, a retry re-signed with a new timestamp is the same command too.
        let delivery = #"{"event":"timeout","delivery":"d-1"}"#
        let (first, firstStatus) = try await HTTP.post(
            setup.url("/hooks/ids"), json: delivery, headers: signed(delivery, at: now))
        #expect(firstStatus == 201, "\(first)")
        let (retry, retryStatus) = try await HTTP.post(
            setup.url("/hooks/ids"), json: delivery,
            headers: signed(delivery, at: now + 1).merging(["Idempotency-Key": "x"]) { $1 })
        #expect(retryStatus == 201 && retry.contains(#""replayed":true"#), "\(retry)")
        let anonymous = #"{"event":"timeout"}"#
        let (missing, missingStatus) = try await HTTP.post(
            setup.url("/hooks/ids"), json: anonymous, headers: signed(anonymous, at: now))
        #expect(missingStatus == 422 && missing.contains("$.delivery"), "\(missing)")
        #expect(try await count("BreakPlaced", on: "two", setup) == 1)
    }

    @Test(
        "SCTE-35: the same out cue after its break ended places a new break; repeats while it is ahead or on air are the placing command again (defect 10)"
    )
    func scte35CueAfterItsBreak() async throws {
        let setup = try await setUp()
        defer { setup.server.stop() }
        let url = setup.url("/channels/one/scte35")
        let out = #"{"section":"\#(Self.out)","asset_list":"https://ads.example.com/decide"}"#
        let (placed, placedStatus) = try await HTTP.post(url, json: out, headers: setup.auth("scte"))
        #expect(
            placedStatus == 201 && placed.contains("scte35-1207959694") && !placed.contains("scte35-1207959694-2"),
            "\(placed)")
        try await Task.sleep(for: .milliseconds(2200))  // on air
        let (onAir, onAirStatus) = try await HTTP.post(url, json: out, headers: setup.auth("scte"))
        // The same bytes for the same break: the placing command again, answered as it was (nothing written).
        #expect(onAirStatus == 201 && onAir.contains(#""replayed":true"#), "\(onAir)")
        let (ended, endedStatus) = try await HTTP.post(
            url, json: #"{"section":"\#(Self.back)"}"#, headers: setup.auth("scte"))
        #expect(endedStatus == 201, "\(ended)")
        try await Task.sleep(for: .milliseconds(1100))
        let (again, againStatus) = try await HTTP.post(url, json: out, headers: setup.auth("scte"))
        #expect(
            againStatus == 201 && again.contains("scte35-1207959694-2"),
            "the same bytes after the break are a new cue: \(again)")
        let (repeated, repeatedStatus) = try await HTTP.post(url, json: out, headers: setup.auth("scte"))
        #expect(
            repeatedStatus == 201 && repeated.contains(#""replayed":true"#) && repeated.contains("scte35-1207959694-2"),
            "\(repeated)")
        #expect(try await count("BreakPlaced", on: "one", setup) == 2)
    }

    @Test("SCTE-35: a token scoped to one channel, or a viewer, learns nothing of another channel's breaks (defect 13)")
    func scte35Scope() async throws {
        let setup = try await setUp()
        defer { setup.server.stop() }
        let out = #"{"section":"\#(Self.out)","asset_list":"https://ads.example.com/decide"}"#
        let (placed, placedStatus) = try await HTTP.post(
            setup.url("/channels/two/scte35"), json: out, headers: setup.auth("desk"))
        #expect(placedStatus == 201, "\(placed)")
        // Channel two has a break for this splice event; a token for channel one must not hear of it.
        for body in [out, #"{"section":"\#(Self.back)"}"#] {
            let (answer, status) = try await HTTP.post(
                setup.url("/channels/two/scte35"), json: body, headers: setup.auth("scte"))
            #expect(status == 403 && !answer.contains("scte35-"), "\(answer)")
            let (viewer, viewerStatus) = try await HTTP.post(
                setup.url("/channels/two/scte35"), json: body, headers: setup.auth("wall"))
            #expect(viewerStatus == 403 && !viewer.contains("scte35-"), "\(viewer)")
        }
        // Whether a channel exists is not told either.
        let (_, unknown) = try await HTTP.post(
            setup.url("/channels/nope/scte35"), json: out, headers: setup.auth("scte"))
        #expect(unknown == 403)
        // A section that would not even decode is refused for the channel first.
        let (_, garbage) = try await HTTP.post(
            setup.url("/channels/two/scte35"), json: #"{"section":"AAAA"}"#, headers: setup.auth("scte"))
        #expect(garbage == 403)
    }

    /// A GET sent as is (no path normalisation, no redirect following): status, headers (lowercased names), body.
    private func rawGet(_ setup: Setup, _ path: String) throws -> (status: Int, headers: [String: String], body: String)
    {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        process.arguments = ["-s", "-i", "--path-as-is", "--max-time", "5", setup.server.baseURL + path]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        let parts = text.components(separatedBy: "\r\n\r\n")
        let head = parts.first?.components(separatedBy: "\r\n") ?? []
        let status = head.first.flatMap { Int($0.split(separator: " ").dropFirst().first ?? "") } ?? 0
        var headers: [String: String] = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                in: .whitespaces)
        }
        return (status, headers, parts.dropFirst().joined(separator: "\r\n\r\n"))
    }

    @Test("media: no protocol-relative redirect, no empty or dot segments, no symlink out of the directory (defect 14)")
    func mediaPaths() async throws {
        let setup = try await setUp()
        defer { setup.server.stop() }
        let file = try rawGet(setup, "/media/sub/seg1.ts")
        #expect(file.status == 200 && file.body == "segment\n")
        let alias = try rawGet(setup, "/media/alias.ts")
        #expect(alias.status == 200 && alias.body == "segment\n", "a symlink that stays inside is served")
        for path in [
            "/media//x", "/media//sub", "/media/sub//seg1.ts", "/media/./sub/seg1.ts", "/media/sub/../sub/seg1.ts",
            "/media/../Package.swift", "/media/%2e%2e/outside/secret.txt", "/media/sub", "/media/sub/", "/media/",
            "/media",
            "/media/leak.txt", "/media/out/secret.txt", "/media/out", "/media/%2F%2Fexample.com",
        ] {
            let answer = try rawGet(setup, path)
            #expect(answer.status == 404, "\(path): \(answer.status) \(answer.headers)")
            #expect(answer.headers["location"] == nil, "\(path) redirects to \(answer.headers["location"] ?? "")")
            #expect(!answer.body.contains("secret"), "\(path)")
        }
    }
}
