import Foundation
import HLS
import Schedule
import TestSupport
import Testing

/// A relay channel whose upstream is an LL-HLS packager (`scripts/lib/ll_upstream.py`: 1 s segments of 0.25 s parts
/// appearing on the wall clock, blocking reload, preload hints, rendition reports): the relay follows it part by part
/// with blocking requests, serves its parts with this channel's date ranges, and holds its own clients on the next part.
@Suite(
    "Low-latency relay end to end",
    .enabled(
        if: TestDatabase.isConfigured && CLIRunner.isAvailable, "needs DATABASE_URL and CUELINE_BIN (scripts/test.sh)"))
struct RelayLowLatencyEndToEndTests {
    /// The packager stand-in on a free port, stopped with the test.
    final class Upstream: @unchecked Sendable {
        let process = Process()
        let port: Int
        /// When its segment 0 started (Unix seconds): part p of segment m ends at epoch + (4m + p + 1) / 4 s.
        let epoch: Double

        init() throws {
            let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent()
                .appendingPathComponent("scripts/lib/ll_upstream.py")
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["python3", script.path, "--port", "0"]
            let output = Pipe()
            process.standardOutput = output
            try process.run()
            // "listening PORT EPOCH"
            var line = Data()
            while let byte = try output.fileHandleForReading.read(upToCount: 1), !byte.isEmpty, byte != Data("\n".utf8)
            { line += byte }
            let words = String(decoding: line, as: UTF8.self).split(separator: " ")
            guard words.count == 3, let port = Int(words[1]), let epoch = Double(words[2]) else {
                throw StartFailure(output: String(decoding: line, as: UTF8.self))
            }
            self.port = port
            self.epoch = epoch
        }

        struct StartFailure: Error {
            var output: String
        }

        var baseURL: String { "http://127.0.0.1:\(port)" }

        /// SIGKILL: the test process holds SIGTERM blocked, and a child inherits that.
        func stop() {
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
        }
    }

    /// The next part a player asks for: the preload hint `…/seg<n>.<p>.m4s`.
    static func hinted(_ text: String) -> (msn: Int64, part: Int64)? {
        LowLatencyEndToEndTests.hinted(text)
    }

    @Test(
        "parts, hints and reports relayed; clients block on the upstream's next part; the early return reaches the first answer after its effect"
    )
    func relayedParts() async throws {
        let upstream = try Upstream()
        defer { upstream.stop() }
        let (_, cli, server) = try await ServerProcess.onFreshDatabase()
        defer { server.stop() }
        let create = try cli.run([
            "channel", "create", "rl", "--relay", "\(upstream.baseURL)/{rendition}/index.m3u8", "--rendition",
            "720p,1000000",
            "--rendition", "480p,600000", "--segment-duration", "1", "--window", "8", "--public-url", server.baseURL,
        ])
        #expect(create.status == 0, "\(create.stderr)")
        let tokens = try cli.createTokens([("desk", ["--role", "operator"])])
        let playlist = "\(server.baseURL)/channels/rl/720p.m3u8"
        var (text, status) = (String(), 0)
        for _ in 0..<100 where status != 200 {
            (text, status) = try await HTTP.get(playlist)
            if status != 200 { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(status == 200, "\(text)")

        // The upstream's LL-HLS tags, relayed: parts and the hint with absolute URIs, the report pointing at this
        // channel's playlist of that rendition, server control of our own (blocking reload, no delta updates).
        #expect(text.contains("#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,PART-HOLD-BACK=0.750\n"), "\(text)")
        #expect(text.contains("#EXT-X-PART-INF:PART-TARGET=0.250\n"))
        #expect(text.contains(#"#EXT-X-PART:DURATION=0.250,URI="\#(upstream.baseURL)/720p/seg"#))
        #expect(text.contains(#"#EXT-X-PRELOAD-HINT:TYPE=PART,URI="\#(upstream.baseURL)/720p/seg"#))
        #expect(text.contains(#"#EXT-X-RENDITION-REPORT:URI="480p.m3u8",LAST-MSN="#))
        #expect(!text.contains("upstream-ad-"), "the upstream's own interstitial is dropped")
        #expect(Lint.check(text).isEmpty, "\(Lint.check(text))")
        let (far, farStatus) = try await HTTP.get(playlist + "?_HLS_msn=\(Self.hinted(text)!.msn + 3)")
        #expect(farStatus == 400 && far.contains("more than two segments"), "\(far)")

        let place = try cli.run([
            "break", "place", "rl", "--id", "brk-1", "--in", "2s", "--duration", "20s", "--asset-uri",
            "https://ads.example.com/a.m3u8",
        ])
        #expect(place.status == 0, "\(place.stderr)")
        let answeredBefore = try await PlaylistFastPathTests().fastRequests(server.baseURL)
        let (answers, sentAt, decided) = try await LowLatencyEndToEndTests.blockOnEveryPart(
            playlist: playlist, from: text, seconds: 7, commands: "\(server.baseURL)/channels/rl/commands",
            token: tokens["desk"]!)
        #expect(answers.contains { $0.text.contains(#"ID="brk-1""#) })
        // Held and answered on the event loop, as a clock channel's (not a task per request in the router).
        let answeredHere = try await PlaylistFastPathTests().fastRequests(server.baseURL) - answeredBefore
        #expect(answeredHere >= answers.count, "\(answeredHere) of \(answers.count) answered before the router")
        for answer in answers {
            #expect(
                answer.text.contains("X-PLAYOUT-LIMIT=") == (answer.tick >= decided),
                "tick \(answer.tick) decided \(decided)")
            #expect(Lint.check(answer.text).isEmpty, "\(Lint.check(answer.text))")
        }
        // Each answer is a valid update of the one before (sequence, segments and date ranges kept as the rules say).
        for (previous, current) in zip(answers, answers.dropFirst()) {
            let findings = Lint.checkUpdate(
                previous: try PlaylistParser.parseMedia(previous.text),
                current: try PlaylistParser.parseMedia(current.text))
            #expect(findings.isEmpty, "\(findings)")
        }
        // Both renditions from one render (the same X-Cueline-Tick): they agree, and each one's report of the other says
        // where the other's playlist ends.
        var renditions: [(name: String, text: String)] = []
        for _ in 0..<20 {
            let (high, _, highHeaders) = try await HTTP.getWithHeaders(playlist)
            let (low, _, lowHeaders) = try await HTTP.getWithHeaders("\(server.baseURL)/channels/rl/480p.m3u8")
            if highHeaders["x-cueline-tick"] == lowHeaders["x-cueline-tick"] {
                renditions = [("720p", high), ("480p", low)]
                break
            }
        }
        try #require(renditions.count == 2, "no two renditions from one render in 20 tries")
        let parsed = try renditions.map { (name: $0.name, parsed: try PlaylistParser.parseMedia($0.text)) }
        #expect(Lint.checkRenditions(parsed).isEmpty, "\(Lint.checkRenditions(parsed))")
        for (index, other) in [(0, 1), (1, 0)] {
            let last = try #require(RelayDecorator.partsPosition(parsed[other].parsed.playlist)?.lastPart)
            #expect(
                renditions[index].text.contains(
                    #"#EXT-X-RENDITION-REPORT:URI="\#(renditions[other].name).m3u8",LAST-MSN=\#(last.msn),LAST-PART=\#(last.part)"#
                ), "\(renditions[index].text)")
        }
        let first = try #require(answers.first { $0.text.contains("X-PLAYOUT-LIMIT=") })
        // What is asserted above is exact (every answer rendered at or after the effect holds the tag, none before); the
        // time is a loose bound only (a commit, a part boundary and two round trips, on a machine other suites load).
        #expect(
            first.at.timeIntervalSince(sentAt) < 3.0,
            "command → client holding the augmenting tag: \(first.at.timeIntervalSince(sentAt)) s")
        // How long after the part asked for ended upstream each answer came (a relay polling upstream instead of
        // blocking would be up to its poll interval late).
        let late = answers.dropFirst().map {
            ($0.at.timeIntervalSince1970 - (upstream.epoch + Double(4 * $0.asked.msn + $0.asked.part + 1) * 0.25))
                * 1000
        }.sorted()
        #expect(late.count > 16)
        #expect(late.first! > -5, "an answer before its part existed upstream: \(late.first!) ms")
        #expect(late[late.count / 2] < 100, "median answer \(late[late.count / 2]) ms after the upstream's part ended")
        let (stats, _) = try await HTTP.get(upstream.baseURL + "/stats")
        let blocking =
            stats.range(of: #""blocking": "#).flatMap { Int(stats[$0.upperBound...].prefix(while: \.isNumber)) } ?? 0
        #expect(blocking > 40, "the relay asked the upstream with blocking reloads: \(stats)")
    }
}
