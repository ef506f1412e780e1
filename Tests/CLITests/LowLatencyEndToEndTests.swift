import Foundation
import HLS
import TestSupport
import Testing

/// A channel with 1 s segments of 0.25 s parts against a real PostgreSQL and the running server: a client that blocks
/// on every next part, as an LL-HLS player does, and an early return sent over HTTP in the middle of a break.
@Suite(
    "Low-latency channel end to end",
    .enabled(
        if: TestDatabase.isConfigured && CLIRunner.isAvailable, "needs DATABASE_URL and CUELINE_BIN (scripts/test.sh)"))
struct LowLatencyEndToEndTests {
    struct Answer {
        var asked: (msn: Int64, part: Int64)
        var at: Date
        var tick: Date
        var text: String
    }

    static func isoDate(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.date(from: text)
    }

    /// The next part a player asks for: the preload hint `…/seg<n>.<p>.m4s`.
    static func hinted(_ text: String) -> (msn: Int64, part: Int64)? {
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("#EXT-X-PRELOAD-HINT:") }),
            let seg = line.range(of: "seg"), let end = line.range(of: ".m4s")
        else { return nil }
        let numbers = line[seg.upperBound..<end.lowerBound].split(separator: ".")
        guard numbers.count == 2, let msn = Int64(numbers[0]), let part = Int64(numbers[1]) else { return nil }
        return (msn, part)
    }

    /// A client blocking on every next part of `playlist` (starting from the hint in `text`) for `seconds`, as a player
    /// does; 3.3 s in (mid-part as the clock goes), `cancel_current_event` is sent to `commands`. Each answer must hold
    /// the part asked for. Returns the answers, when the command was sent, and the effect instant it answered.
    static func blockOnEveryPart(
        playlist: String, from text: String, seconds: Double, commands: String, token: String
    ) async throws -> (answers: [Answer], sentAt: Date, decidedAt: Date) {
        let started = Date()
        var answers: [Answer] = []
        var sentAt: Date?
        var decidedAt: Date?
        while Date().timeIntervalSince(started) < seconds {
            let next = try #require(Self.hinted(answers.last?.text ?? text))
            let (body, code, headers) = try await HTTP.getWithHeaders(
                playlist + "?_HLS_msn=\(next.msn)&_HLS_part=\(next.part)")
            #expect(code == 200, "\(body)")
            answers.append(
                Answer(
                    asked: next, at: Date(), tick: Self.isoDate(headers["x-cueline-tick"] ?? "") ?? .distantPast,
                    text: body))
            #expect(body.contains("seg\(next.msn).\(next.part).m4s\""), "asked \(next), got \(body.suffix(300))")
            if sentAt == nil, Date().timeIntervalSince(started) > 3.3 {
                sentAt = Date()
                let (answer, code) = try await HTTP.post(
                    commands, json: #"{"command":"cancel_current_event"}"#,
                    headers: ["Authorization": "Bearer \(token)"])
                #expect(code == 201, "\(answer)")
                let decided = answer.range(of: #""decided_at":""#).map {
                    answer[$0.upperBound...].prefix(while: { $0 != "\"" })
                }
                decidedAt = decided.flatMap { Self.isoDate(String($0)) }
            }
        }
        return (answers, try #require(sentAt), try #require(decidedAt))
    }

    @Test(
        "blocking reload answers each next part at its boundary; the early return is in the first answer at or after its effect"
    )
    func blockingClientSeesEarlyReturn() async throws {
        let (_, cli, server) = try await ServerProcess.onFreshDatabase()
        defer { server.stop() }
        let renditions = ["720p", "480p"]
        let create = try cli.run(
            [
                "channel", "create", "ll", "--segment-duration", "1", "--part-duration", "0.25", "--window", "10",
                "--public-url", server.baseURL,
            ]
                + renditions.flatMap {
                    [
                        "--rendition", "\($0),1000000,\($0)/seg{n}.m4s", "--map", "\($0)=\($0)/init.mp4", "--part",
                        "\($0)=\($0)/seg{n}.{p}.m4s",
                    ]
                })
        #expect(create.status == 0, "\(create.stderr)")
        let tokens = try cli.createTokens([("desk", ["--role", "operator"])])
        let playlist = "\(server.baseURL)/channels/ll/720p.m3u8"
        var (text, status) = (String(), 0)
        for _ in 0..<100 where status != 200 {
            (text, status) = try await HTTP.get(playlist)
            if status != 200 { try await Task.sleep(for: .milliseconds(20)) }
        }
        #expect(status == 200)
        #expect(text.contains("#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES"))

        // Malformed or far-ahead directives: 400 naming the directive.
        let (bad, badStatus) = try await HTTP.get(playlist + "?_HLS_msn=12x")
        #expect(badStatus == 400 && bad.contains(#""field":"_HLS_msn""#), "\(bad)")
        let (far, farStatus) = try await HTTP.get(playlist + "?_HLS_msn=\(Self.hinted(text)!.msn + 3)")
        #expect(farStatus == 400 && far.contains("more than two segments"), "\(far)")
        let (_, skipStatus) = try await HTTP.get(playlist + "?_HLS_skip=v3")
        #expect(skipStatus == 400)

        let place = try cli.run([
            "break", "place", "ll", "--id", "brk-1", "--in", "2s", "--duration", "20s", "--asset-uri",
            "https://ads.example.com/a.m3u8",
        ])
        #expect(place.status == 0, "\(place.stderr)")
        let (answers, sentAt, decidedAt) = try await Self.blockOnEveryPart(
            playlist: playlist, from: text, seconds: 8, commands: "\(server.baseURL)/channels/ll/commands",
            token: tokens["desk"]!)
        let decided = decidedAt
        // Every answer rendered for a tick at or after the command's effect holds the augmenting tag; none before.
        for answer in answers {
            #expect(
                answer.text.contains("X-PLAYOUT-LIMIT=") == (answer.tick >= decided),
                "tick \(answer.tick) decided \(decided)")
        }
        let first = try #require(answers.first { $0.text.contains("X-PLAYOUT-LIMIT=") })
        let commandToClient = first.at.timeIntervalSince(sentAt)
        // The exact property is the one above; the time is a loose bound (a commit, a part boundary, two round trips).
        #expect(commandToClient < 3.0, "command → client holding the augmenting tag: \(commandToClient) s")
        // Answers come at part boundaries (parts end on multiples of 250 ms from a whole second), soon after them.
        let late = answers.dropFirst().map { ($0.at.timeIntervalSince1970 * 1000).truncatingRemainder(dividingBy: 250) }
            .sorted()
        #expect(late.count > 16)
        #expect(late[late.count / 2] < 100, "median answer \(late[late.count / 2]) ms after its part boundary")

        // A delta update: the oldest segments skipped, with the date ranges' recently removed list.
        let (delta, deltaStatus) = try await HTTP.get(playlist + "?_HLS_skip=v2")
        #expect(deltaStatus == 200)
        #expect(delta.contains("#EXT-X-SKIP:SKIPPED-SEGMENTS=") && delta.contains("RECENTLY-REMOVED-DATERANGES="))
        #expect(Lint.check(delta).isEmpty, "\(Lint.check(delta))")
        #expect(Lint.check(answers.last!.text).isEmpty, "\(Lint.check(answers.last!.text))")
    }
}
