import Foundation
import TestSupport
import Testing

/// Issue 12: the public media playlist GET is answered on the event loop (`PlaylistFastPath`) with what the router
/// would answer, and in the order of the requests on a connection.
@Suite(
    "Media playlists answered before the router: same answers, same order", .serialized,
    .enabled(
        if: TestDatabase.isConfigured && CLIRunner.isAvailable, "needs DATABASE_URL and CUELINE_BIN (scripts/test.sh)"))
struct PlaylistFastPathTests {
    typealias RawConnection = ServerLimitsTests.RawConnection

    /// Splits a stream of HTTP/1.1 answers (each with a Content-Length) into (status line, headers, body).
    /// `bodies: false` for answers to HEAD (a Content-Length but no body).
    static func answers(_ text: String, bodies: Bool = true) -> [(
        status: String, headers: [String: String], body: String, names: [String]
    )] {
        var rest = Substring(text)
        var result: [(String, [String: String], String, [String])] = []
        while let end = rest.range(of: "\r\n\r\n") {
            let lines = rest[..<end.lowerBound].components(separatedBy: "\r\n")
            var headers: [String: String] = [:]
            var names: [String] = []
            for line in lines.dropFirst() {
                guard let colon = line.firstIndex(of: ":") else { continue }
                headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                    in: .whitespaces)
                names.append(String(line[..<colon]))
            }
            let length = bodies ? Int(headers["content-length"] ?? "0") ?? 0 : 0
            let bodyStart = end.upperBound
            guard let bodyEnd = rest.utf8.index(bodyStart, offsetBy: length, limitedBy: rest.endIndex) else {
                // Its body has not all arrived: counted once it has.
                break
            }
            result.append((lines[0], headers, String(rest[bodyStart..<bodyEnd]), names))
            rest = rest[bodyEnd...]
        }
        return result
    }

    func fastRequests(_ base: String, _ counter: String = "cueline_playlist_fast_requests_total") async throws -> Int {
        let (metrics, _) = try await HTTP.get(base + "/metrics")
        let line = metrics.split(separator: "\n").first { $0.hasPrefix(counter + " ") }
        return Int(line?.split(separator: " ").last ?? "0") ?? 0
    }

    /// Polls `url` until the server serves it (the channel just created has reached the follower).
    static func untilServed(_ url: String) async throws {
        for _ in 0..<250 {
            if try await HTTP.get(url).1 == 200 { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        Issue.record("\(url) not served within 5 s")
    }

    /// Answered on raw bytes (`PlaylistRawPath`), before the HTTP codec.
    func rawRequests(_ base: String) async throws -> Int {
        try await fastRequests(base, "cueline_playlist_raw_requests_total")
    }

    @Test("a plain GET or HEAD is answered before the router with the router's bytes and headers; other forms go up")
    func sameAnswers() async throws {
        // Segments of 60 s: the window does not move between the two requests compared.
        let (_, cli, server) = try await ServerProcess.onFreshDatabase(extraArguments: ["--unauthenticated-commands"])
        defer { server.stop() }
        #expect(
            try cli.run([
                "channel", "create", "one", "--segment-duration", "60", "--window", "3", "--epoch",
                "2020-01-01T00:00:00Z", "--rendition", "720p,1000000,720p/seg{n}.ts",
            ]).status == 0)
        try await Self.untilServed(server.baseURL + "/channels/one/720p.m3u8")
        let before = try await fastRequests(server.baseURL), rawBefore = try await rawRequests(server.baseURL)
        for (method, origin) in [("GET", ""), ("GET", "Origin: https://player.example\r\n"), ("HEAD", "")] {
            let connection = try RawConnection(port: server.port)
            // The same request twice: plain (answered before the router), and with a query (the router answers).
            connection.send(
                "\(method) /channels/one/720p.m3u8 HTTP/1.1\r\nHost: x\r\n\(origin)\r\n\(method) /channels/one/720p.m3u8?via=router HTTP/1.1\r\nHost: x\r\n\(origin)\r\n"
            )
            let read = connection.read(for: 5) { Self.answers($0, bodies: method != "HEAD").count == 2 }
            let pair = Self.answers(read.text, bodies: method != "HEAD")
            try #require(pair.count == 2, "\(method): \(read.text)")
            var fast = pair[0].headers, routed = pair[1].headers
            #expect(fast["date"] != nil && routed["date"] != nil)
            fast["date"] = nil
            routed["date"] = nil
            #expect(pair[0].status == "HTTP/1.1 200 OK" && pair[1].status == pair[0].status)
            #expect(fast == routed, "\(method) \(origin)")
            // The same header names, spelled and ordered as the HTTP/1.1 encoder writes them.
            #expect(pair[0].names == pair[1].names, "\(method) \(origin)")
            #expect(pair[0].body == pair[1].body && (method == "HEAD" || pair[0].body.hasPrefix("#EXTM3U")))
            #expect((fast["access-control-allow-origin"] == "*") == !origin.isEmpty)
        }
        // Three plain requests answered before the router, on raw bytes (each the first of its connection); the three
        // with a query by the router, after the codec.
        #expect(try await fastRequests(server.baseURL) - before == 3)
        #expect(try await rawRequests(server.baseURL) - rawBefore == 3)

        // Misses and other forms are the router's: its 404s with their bodies, the multivariant playlist.
        let (unknown, unknownStatus) = try await HTTP.get(server.baseURL + "/channels/nope/720p.m3u8")
        #expect(unknownStatus == 404 && unknown.contains("nope"))
        let (rendition, renditionStatus) = try await HTTP.get(server.baseURL + "/channels/one/1080p.m3u8")
        #expect(renditionStatus == 404 && rendition.contains("1080p"))
        let (multivariant, multivariantStatus) = try await HTTP.get(server.baseURL + "/channels/one/master.m3u8")
        #expect(multivariantStatus == 200 && multivariant.contains("EXT-X-STREAM-INF"))
        #expect(try await fastRequests(server.baseURL) - before == 3)

        // `Connection: close` is the router's to honour: answered, then closed.
        let closing = try RawConnection(port: server.port)
        closing.send("GET /channels/one/720p.m3u8 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let closed = closing.read(for: 2)
        #expect(closed.closed && closed.text.hasPrefix("HTTP/1.1 200"), "\(closed)")
    }

    @Test("pipelined requests are answered in order: a playlist GET never overtakes an earlier command")
    func pipelinedOrder() async throws {
        let (_, cli, server) = try await ServerProcess.onFreshDatabase(extraArguments: ["--unauthenticated-commands"])
        defer { server.stop() }
        #expect(
            try cli.run([
                "channel", "create", "one", "--segment-duration", "2", "--window", "3", "--rendition",
                "720p,1000000,720p/seg{n}.ts",
            ]).status == 0)
        try await Self.untilServed(server.baseURL + "/channels/one/720p.m3u8")
        let before = try await fastRequests(server.baseURL)
        let body =
            #"{"command":"place_break","id":"pipelined","in":60,"duration":10,"asset_uri":"https://ads.example.com/a.m3u8"}"#
        let playlist = "GET /channels/one/720p.m3u8 HTTP/1.1\r\nHost: x\r\n\r\n"
        let connection = try RawConnection(port: server.port)
        // One write: two playlist GETs (answered before the router), a command (the router's, slow: a database
        // round trip), then GETs that must wait their turn behind it, then more playlist GETs.
        connection.send(
            playlist + playlist
                + "POST /channels/one/commands HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
                + playlist + "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n" + playlist + playlist)
        let read = connection.read(for: 10) { Self.answers($0).count == 7 }
        let answers = Self.answers(read.text)
        #expect(
            answers.map { String($0.status.prefix(12)) } == [
                "HTTP/1.1 200", "HTTP/1.1 200", "HTTP/1.1 201", "HTTP/1.1 200", "HTTP/1.1 200", "HTTP/1.1 200",
                "HTTP/1.1 200",
            ], "\(read.text)")
        #expect(answers.count == 7 && answers[2].body.contains("pipelined"))
        #expect(
            answers.count == 7 && [0, 1, 3, 5, 6].allSatisfy { answers[$0].body.hasPrefix("#EXTM3U") }
                && answers[4].body.contains("ok"))
        // The two before the command at least were answered here (the rest may be, once the command's answer has gone).
        #expect(try await fastRequests(server.baseURL) - before >= 2)
    }

    @Test(
        "an LL-HLS blocking reload is held on the event loop and answered at its part; requests behind it wait their turn"
    )
    func heldInOrder() async throws {
        let (_, cli, server) = try await ServerProcess.onFreshDatabase()
        defer { server.stop() }
        let create = try cli.run([
            "channel", "create", "ll", "--segment-duration", "1", "--part-duration", "0.25", "--window", "8",
            "--rendition", "720p,1000000,720p/seg{n}.m4s", "--part", "720p=720p/seg{n}.{p}.m4s",
        ])
        #expect(create.status == 0, "\(create.stderr)")
        // The hinted part is the one in progress; the same part of the next segment is a whole segment (1 s) away, so
        // the request is still held however slowly this test reached the server (the hinted part itself can end before
        // a loaded machine sends the request, which is then answered at once).
        let hinted = try await HTTP.hintedPart(server.baseURL + "/channels/ll/720p.m3u8")
        let (msn, part) = (hinted.msn + 1, hinted.part)
        let before = try await fastRequests(server.baseURL), rawBefore = try await rawRequests(server.baseURL)
        let held = "GET /channels/ll/720p.m3u8?_HLS_msn=\(msn)&_HLS_part=\(part) HTTP/1.1\r\nHost: x\r\n\r\n"
        let connection = try RawConnection(port: server.port)
        connection.send(
            held + "GET /channels/ll/master.m3u8 HTTP/1.1\r\nHost: x\r\n\r\n"
                + "GET /channels/ll/720p.m3u8 HTTP/1.1\r\nHost: x\r\n\r\n")
        let answers = Self.answers(connection.read(for: 6) { Self.answers($0).count == 3 }.text)
        #expect(answers.map { String($0.status.prefix(12)) } == ["HTTP/1.1 200", "HTTP/1.1 200", "HTTP/1.1 200"])
        guard answers.count == 3 else { return }
        // The held answer holds the part asked for and may be cached; the multivariant playlist, then the plain GET, follow it.
        #expect(
            answers[0].body.contains("seg\(msn).\(part).m4s\"") && answers[0].headers["cache-control"] == "max-age=6")
        #expect(answers[1].body.contains("#EXT-X-STREAM-INF") && answers[2].headers["cache-control"] == "max-age=1")
        // The held one was answered on raw bytes, the first of its connection; the multivariant playlist and the plain
        // GET behind it went to the codec (the plain one answered before the router, or by it).
        #expect(try await rawRequests(server.baseURL) - rawBefore == 1)
        #expect(try await fastRequests(server.baseURL) - before >= 1)
        // Malformed or far-ahead directives go up to the router: 400 naming the directive.
        let (far, farStatus) = try await HTTP.get(
            server.baseURL + "/channels/ll/720p.m3u8?_HLS_msn=\(msn)&_HLS_part=99")
        #expect(farStatus == 400 && far.contains(#""field":"_HLS_part""#))
    }
}
