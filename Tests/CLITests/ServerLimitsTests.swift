import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 11, defects 7 and 8, at small scale and exact: what `cueline serve` answers beyond each of its limits.
/// (`scripts/faults/fault-flood.sh` floods them at scale and measures the playlists meanwhile.)
@Suite(
    "Limits of cueline serve: connections, timeouts, sizes, event streams", .serialized,
    .enabled(
        if: TestDatabase.isConfigured && CLIRunner.isAvailable, "needs DATABASE_URL and CUELINE_BIN (scripts/test.sh)"))
struct ServerLimitsTests {
    struct ConnectFailed: Error {
        var errno: Int32
    }

    /// A blocking loopback TCP connection, for requests no HTTP client would send.
    final class RawConnection {
        let descriptor: Int32

        /// - Parameter receiveBuffer: the socket's receive buffer (`SO_RCVBUF`), set before connecting: small, for a
        ///   client that reads nothing and lets the server's answers pile up on the server's side.
        init(port: Int, receiveBuffer: Int32? = nil) throws {
            descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            if var size = receiveBuffer {
                setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
            }
            let connected = withLoopbackAddress(port: port) { connect(descriptor, $0, $1) }
            guard connected == 0 else { throw ConnectFailed(errno: errno) }
        }

        func send(_ text: String) {
            _ = text.utf8CString.dropLast().withUnsafeBufferPointer {
                Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
        }

        /// What arrives until the server closes the connection or `seconds` pass; `closed` says which. With `until`, also
        /// until what has arrived satisfies it (a test waiting for answers, not for a time a loaded machine may not keep).
        func read(for seconds: Double, until done: ((String) -> Bool)? = nil) -> (
            text: String, closed: Bool, after: Double
        ) {
            let started = Date()
            var data = [UInt8]()
            var buffer = [UInt8](repeating: 0, count: 65536)
            while Date().timeIntervalSince(started) < seconds {
                if let done, done(String(decoding: data, as: UTF8.self)) { break }
                var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
                let left = Int32(max(1, (seconds - Date().timeIntervalSince(started)) * 1000))
                guard poll(&poller, 1, left) > 0 else { continue }
                let count = recv(descriptor, &buffer, buffer.count, 0)
                if count <= 0 {
                    return (String(decoding: data, as: UTF8.self), true, Date().timeIntervalSince(started))
                }
                data += buffer[..<count]
            }
            return (String(decoding: data, as: UTF8.self), false, Date().timeIntervalSince(started))
        }

        /// Goes away as a client would (the descriptor stays ours until deinit).
        func hangUp() { shutdown(descriptor, Int32(SHUT_RDWR)) }

        /// Says it sends nothing more (a half-close) and keeps reading.
        func finishSending() { shutdown(descriptor, Int32(SHUT_WR)) }

        deinit { close(descriptor) }
    }

    struct Setup {
        var cli: CLIRunner
        var server: ServerProcess
        var tokens: [String: String]
    }

    private func setUp(_ arguments: [String]) async throws -> Setup {
        let url = try await TestDatabase.makeFreshDatabase()
        let cli = CLIRunner(environment: ["DATABASE_URL": url])
        #expect(try cli.run(["migrate"]).status == 0)
        #expect(
            try cli.run([
                "channel", "create", "one", "--segment-duration", "1", "--window", "6", "--rendition",
                "720p,1000000,720p/seg{n}.ts",
            ]).status == 0)
        var tokens: [String: String] = [:]
        for name in ["wall-a", "wall-b", "wall-c"] {
            let created = try cli.run(["token", "create", name, "--role", "viewer"])
            tokens[name] = created.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let server = try ServerProcess(databaseURL: url, extraArguments: arguments)
        try await server.waitUntilReady()
        return Setup(cli: cli, server: server, tokens: tokens)
    }

    @Test(
        "a request head that does not arrive in time is answered 408 and closed; an idle connection is closed (slowloris)"
    )
    func timeouts() async throws {
        let setup = try await setUp(["--header-timeout", "1", "--idle-timeout", "2"])
        defer { setup.server.stop() }
        // Through the HTTP codec, and a player's playlist request read on raw bytes (`PlaylistRawPath`).
        for start in ["GET /healthz HTTP/1.1\r\nHost: x\r\n", "GET /channels/one/720p.m3u8 HTTP/1.1\r\nHost: x\r\n"] {
            let slow = try RawConnection(port: setup.server.port)
            slow.send(start)
            let answer = slow.read(for: 4)
            #expect(answer.closed && answer.text.hasPrefix("HTTP/1.1 408"), "\(start): \(answer)")
            #expect(answer.after > 0.8 && answer.after < 2.5, "\(answer.after)")
        }

        // Kept alive after a request, then silent: closed after the idle timeout, without an answer.
        let idle = try RawConnection(port: setup.server.port)
        idle.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        let first = idle.read(for: 0.5)
        #expect(first.text.hasPrefix("HTTP/1.1 200") && !first.closed, "\(first)")
        let rest = idle.read(for: 4)
        #expect(rest.closed && rest.text.isEmpty && rest.after > 1 && rest.after < 3, "\(rest)")
    }

    @Test("oversized request heads and bodies are refused with 431 and 413")
    func sizes() async throws {
        let setup = try await setUp(["--max-header-bytes", "2048", "--max-body-bytes", "4096"])
        defer { setup.server.stop() }
        for path in ["/healthz", "/channels/one/720p.m3u8"] {
            let header = try RawConnection(port: setup.server.port)
            header.send("GET \(path) HTTP/1.1\r\nHost: x\r\nX-Big: \(String(repeating: "a", count: 3000))\r\n\r\n")
            let refusedHeader = header.read(for: 3)
            #expect(refusedHeader.closed && refusedHeader.text.hasPrefix("HTTP/1.1 431"), "\(path): \(refusedHeader)")
        }
        let body = try RawConnection(port: setup.server.port)
        body.send(
            "POST /channels/one/commands HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n"
        )
        let refusedBody = body.read(for: 3)
        #expect(refusedBody.closed && refusedBody.text.hasPrefix("HTTP/1.1 413"), "\(refusedBody)")
        let (_, fine) = try await HTTP.get(setup.server.baseURL + "/channels/one/720p.m3u8")
        #expect(fine == 200)
    }

    @Test(
        "a client that sends requests and never reads the answers gets no more than the send buffers hold, then is closed; others are answered"
    )
    func unreadAnswers() async throws {
        let setup = try await setUp([])
        defer { setup.server.stop() }
        /// Playlists answered on raw bytes so far (`cueline_playlist_raw_requests_total`).
        func answered() async throws -> Int {
            let (metrics, _) = try await HTTP.get(setup.server.baseURL + "/metrics")
            return metricSample(metrics, "cueline_playlist_raw_requests_total").map { Int($0) } ?? 0
        }
        let before = try await answered()
        // 2,500 playlist requests at once (~117 KB, about 2 MB of answers), none of them read.
        let greedy = try RawConnection(port: setup.server.port, receiveBuffer: 4096)
        greedy.send(String(repeating: "GET /channels/one/720p.m3u8 HTTP/1.1\r\nHost: x\r\n\r\n", count: 2500))
        try await Task.sleep(for: .seconds(1))
        // The kernel's send buffer (twice 64 KiB), the server's own (64 KiB) and the client's small receive buffer hold
        // a few hundred answers of ~800 bytes; the kernel's auto-tuned buffer (up to 4 MiB) held all 2,500.
        let written = try await answered() - before
        #expect(written > 0 && written < 800, "\(written) answers written to a client that reads none")
        let (_, status) = try await HTTP.get(setup.server.baseURL + "/channels/one/720p.m3u8")
        #expect(status == 200)
        // Its unread requests passed 4 x the header limit: closed (what was written arrives, then the end).
        let rest = greedy.read(for: 10)
        #expect(rest.closed, "still open after \(rest.after) s and \(rest.text.utf8.count) bytes")
    }

    @Test(
        "requests for the router sent in a row are answered one at a time as the client reads, all of them and in order, also after a half-close"
    )
    func pipelinedThroughTheRouter() async throws {
        let setup = try await setUp([])
        defer { setup.server.stop() }
        // /openapi.json (~29 KB) goes through the router; a client with a small receive buffer reads them slowly.
        let paths = ["/openapi.json", "/healthz", "/openapi.json", "/readyz", "/openapi.json"]
        let client = try RawConnection(port: setup.server.port, receiveBuffer: 4096)
        client.send(paths.map { "GET \($0) HTTP/1.1\r\nHost: x\r\n\r\n" }.joined())
        client.finishSending()
        let answers = client.read(for: 10)
        let statuses = answers.text.components(separatedBy: "HTTP/1.1 ").dropFirst().map { $0.prefix(3) }
        #expect(
            statuses == ["200", "200", "200", "200", "200"],
            "\(statuses) after \(answers.after) s, closed: \(answers.closed)")
        #expect(answers.closed, "the connection ends after the last answer")
        // Far more than a player would send ahead, never read: closed, and the server answers others.
        let greedy = try RawConnection(port: setup.server.port, receiveBuffer: 1024)
        greedy.send(String(repeating: "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", count: 400))
        let (_, status) = try await HTTP.get(setup.server.baseURL + "/healthz")
        #expect(status == 200)
        #expect(greedy.read(for: 10).closed, "closed once 256 parts wait behind unread answers")
    }

    @Test(
        "HTTP/1.0 without keep-alive, Connection: Close and CONNECT end the connection after the answer; Expect: 100-continue is answered 100, in turn, its clock starting then; a refusal behind an answer waits for it"
    )
    func connectionSemantics() async throws {
        let setup = try await setUp(["--header-timeout", "1"])
        defer { setup.server.stop() }
        // Through the router and through the playlist path: a 1.0 client may read its answer to the end of the
        // connection, and must not wait out the idle timeout for it.
        for request in [
            "GET /healthz HTTP/1.0\r\n\r\n", "GET /channels/one/720p.m3u8 HTTP/1.0\r\n\r\n",
            "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: Close\r\n\r\n",
        ] {
            let client = try RawConnection(port: setup.server.port)
            client.send(request)
            let answer = client.read(for: 3)
            #expect(answer.text.hasPrefix("HTTP/1.1 200") && answer.closed && answer.after < 1, "\(request): \(answer)")
        }
        for request in [
            "GET /healthz HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
        ] {
            let client = try RawConnection(port: setup.server.port)
            client.send(request)
            let answer = client.read(for: 1)
            #expect(answer.text.hasPrefix("HTTP/1.1 200") && !answer.closed, "\(request): \(answer)")
        }
        // The body is sent once the server asks for it (curl waits a second otherwise, other clients longer).
        // A viewer's token: the body is read (the command's type decides what the token may do) before the 403.
        let command =
            "POST /channels/one/commands HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(setup.tokens["wall-a"]!)\r\n"
            + "Content-Type: application/json\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n"
        let expecting = try RawConnection(port: setup.server.port)
        expecting.send(command)
        let interim = expecting.read(for: 2) { $0.contains("\r\n\r\n") }
        #expect(interim.text == "HTTP/1.1 100 Continue\r\n\r\n" && interim.after < 1, "\(interim)")
        #expect(expecting.read(for: 0.3).text.isEmpty, "nothing more until the body")
        expecting.send("{}")
        let final = expecting.read(for: 2) { $0.contains("}") }
        #expect(final.text.hasPrefix("HTTP/1.1 422") && final.text.contains("command is required"), "\(final)")
        // Behind another request, it comes after that request's answer, never inside it.
        let pipelined = try RawConnection(port: setup.server.port)
        pipelined.send("GET /openapi.json HTTP/1.1\r\nHost: x\r\n\r\n" + command)
        let first = pipelined.read(for: 2) { $0.contains("100 Continue\r\n\r\n") }
        let answers = first.text.components(separatedBy: "HTTP/1.1 ")
        #expect(
            answers.count == 3 && answers[1].hasPrefix("200") && answers[1].hasSuffix("}\n")
                && answers[2] == "100 Continue\r\n\r\n", "\(first.text.suffix(200))")
        // Held behind an answer slower than the header timeout (a blocking reload two segments ahead), an expecting
        // request's clock starts when its turn comes: both are answered, nothing is cut off.
        #expect(
            try setup.cli.run([
                "channel", "create", "ll", "--segment-duration", "2", "--part-duration", "0.5", "--window", "6",
                "--rendition", "720p,1000000,720p/seg{n}.m4s", "--map", "720p=720p/init.mp4", "--part",
                "720p=720p/seg{n}.{p}.m4s",
            ]).status == 0)
        var playlist = ""
        for _ in 0..<50 where !playlist.contains("#EXTINF") {
            (playlist, _) = try await HTTP.get(setup.server.baseURL + "/channels/ll/720p.m3u8")
            try await Task.sleep(for: .milliseconds(100))
        }
        let sequence = Int(
            playlist.split(separator: "\n").first { $0.hasPrefix("#EXT-X-MEDIA-SEQUENCE:") }!.dropFirst(22))!
        let segments = playlist.components(separatedBy: "#EXTINF").count - 1
        // Four parts (2 s) after the last one listed, within the server's horizon of 6. A body length keeps the
        // reload off the raw path, into the codec, where requests are held.
        let listed = playlist.components(separatedBy: "#EXTINF").last!.components(separatedBy: "#EXT-X-PART:").count - 1
        let target = (segment: sequence + segments + (listed + 3) / 4, part: (listed + 3) % 4)
        let blocked = try RawConnection(port: setup.server.port)
        blocked.send(
            "GET /channels/ll/720p.m3u8?_HLS_msn=\(target.segment)&_HLS_part=\(target.part) HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"
                + command.replacingOccurrences(of: "/channels/one/", with: "/channels/ll/"))
        let reloaded = blocked.read(for: 8) { $0.hasSuffix("100 Continue\r\n\r\n") }
        #expect(
            reloaded.text.hasPrefix("HTTP/1.1 200") && reloaded.text.hasSuffix("\nHTTP/1.1 100 Continue\r\n\r\n"),
            "\(reloaded)")
        #expect(
            reloaded.after > 1.2,
            "the reload was not slower than the header timeout: this checks nothing (\(reloaded.after) s)")
        blocked.send("{}")
        let held = blocked.read(for: 2) { $0.contains("}") }
        #expect(held.text.hasPrefix("HTTP/1.1 422") && !held.closed, "\(held)")

        // Bytes after a request that ends the connection, or a refused request behind an answer in progress: that
        // answer still goes out whole, then the refusal, then the close.
        let afterClose = try RawConnection(port: setup.server.port)
        afterClose.send("GET /healthz HTTP/1.0\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        let one = afterClose.read(for: 2)
        #expect(one.text.hasPrefix("HTTP/1.1 200") && one.text.hasSuffix("\r\n\r\nok\n") && one.closed, "\(one)")
        let behind = try RawConnection(port: setup.server.port)
        behind.send(
            "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nPOST /channels/one/commands HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999\r\n\r\n"
        )
        let both = behind.read(for: 2)
        #expect(both.text.hasPrefix("HTTP/1.1 200") && both.text.contains("ok\nHTTP/1.1 413") && both.closed, "\(both)")
        // A 1.0 client that asked to keep the connection is told it is kept; a CONNECT is answered and closed (its
        // answer has no length).
        let kept = try RawConnection(port: setup.server.port)
        kept.send("GET /healthz HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        #expect(kept.read(for: 1).text.lowercased().contains("\r\nconnection: keep-alive\r\n"))
        let connect = try RawConnection(port: setup.server.port)
        connect.send("CONNECT /channels/one/commands HTTP/1.1\r\nHost: x\r\n\r\n")
        let tunnel = connect.read(for: 2)
        #expect(tunnel.text.hasPrefix("HTTP/1.1 405") && tunnel.closed, "\(tunnel)")

        // A 1.0 client is never sent 100 (RFC 9110): it sends its body after a while by itself.
        let old = try RawConnection(port: setup.server.port)
        old.send(command.replacingOccurrences(of: "HTTP/1.1", with: "HTTP/1.0"))
        #expect(old.read(for: 0.5).text.isEmpty)
        old.send("{}")
        let oldAnswer = old.read(for: 2)
        #expect(oldAnswer.text.hasPrefix("HTTP/1.1 422") && oldAnswer.closed, "\(oldAnswer)")
    }

    @Test("at the connection cap the longest idle connection makes room; when all are busy, 503 with Retry-After")
    func connectionCap() async throws {
        // Without tokens, so the command route waits for the body: a request in progress.
        let setup = try await setUp([
            "--max-connections", "4", "--max-arriving-bodies-per-address", "4", "--header-timeout", "5",
            "--unauthenticated-commands",
        ])
        defer { setup.server.stop() }
        let idle = try (0..<4).map { _ in try RawConnection(port: setup.server.port) }
        try await Task.sleep(for: .milliseconds(200))
        // A fifth, a playlist request: served; the oldest idle connection was closed for it.
        let (_, status) = try await HTTP.get(setup.server.baseURL + "/channels/one/720p.m3u8")
        #expect(status == 200)
        #expect(idle[0].read(for: 1).closed, "the longest idle connection makes room")
        // Four requests in progress: three bodies still arriving (as many as the cap keeps places for: below it) and a
        // live event stream. Nothing can be evicted.
        let busy = try (0..<4).map { _ in try RawConnection(port: setup.server.port) }
        for connection in busy.prefix(3) {
            connection.send(
                "POST /channels/one/commands HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"
            )
        }
        busy[3].send("GET /channels/one/events HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n")
        try await Task.sleep(for: .milliseconds(300))
        let refused = try RawConnection(port: setup.server.port)
        let answer = refused.read(for: 3)
        #expect(
            answer.closed && answer.text.hasPrefix("HTTP/1.1 503")
                && answer.text.lowercased().contains("retry-after: 1"), "\(answer)")
        _ = idle
    }

    @Test("event streams: per token 429, in all 503, both with Retry-After; a stream that ends gives its place back")
    func eventStreamCaps() async throws {
        let setup = try await setUp(["--max-streams-per-token", "1", "--max-streams", "2"])
        defer { setup.server.stop() }
        func open(_ token: String) throws -> RawConnection {
            let connection = try RawConnection(port: setup.server.port)
            connection.send(
                "GET /channels/one/events HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\nAuthorization: Bearer \(setup.tokens[token]!)\r\n\r\n"
            )
            return connection
        }
        let first = try open("wall-a")
        #expect(first.read(for: 0.5).text.hasPrefix("HTTP/1.1 200"))
        let second = try open("wall-a")
        let perToken = second.read(for: 1).text
        #expect(perToken.hasPrefix("HTTP/1.1 429") && perToken.lowercased().contains("retry-after: 10"), "\(perToken)")
        let other = try open("wall-b")
        #expect(other.read(for: 0.5).text.hasPrefix("HTTP/1.1 200"))
        let third = try open("wall-c")
        let total = third.read(for: 1).text
        #expect(total.hasPrefix("HTTP/1.1 503") && total.lowercased().contains("retry-after: 10"), "\(total)")
        // Playlists are not affected, and JSON pages of the log are not streams.
        let (_, playlist) = try await HTTP.get(setup.server.baseURL + "/channels/one/720p.m3u8")
        #expect(playlist == 200)
        let (_, page) = try await HTTP.get(
            setup.server.baseURL + "/channels/one/events",
            headers: ["Authorization": "Bearer \(setup.tokens["wall-c"]!)"])
        #expect(page == 200)
        // A client that goes away frees its place at the next write (a keep-alive comment at the latest, 5 s).
        first.hangUp()
        var reopened = ""
        for _ in 0..<14 where !reopened.hasPrefix("HTTP/1.1 200") {
            try await Task.sleep(for: .milliseconds(500))
            reopened = try open("wall-a").read(for: 0.3).text
        }
        #expect(reopened.hasPrefix("HTTP/1.1 200"), "\(reopened)")
    }

    @Test("limits are checked at start: out of range is a usage error naming the key")
    func badLimits() throws {
        let cli = CLIRunner(environment: ["DATABASE_URL": TestDatabase.url!])
        let zero = try cli.run(["serve", "--port", "1", "--max-connections", "0"])
        #expect(zero.status != 0 && zero.stderr.contains("max_connections"), "\(zero.stderr)")
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("limits-\(UUID().uuidString).conf")
        try Data("header_timeout = 0\nmax_streams = lots\n".utf8).write(to: file)
        let check = try cli.run(["config", "check", file.path])
        #expect(
            check.status == 1 && check.stdout.contains("header_timeout") && check.stdout.contains("max_streams"),
            "\(check.stdout)")
    }

    /// The threads of a process by name, with the CPUs each may run on (`Cpus_allowed_list`).
    static func threadCPUs(_ pid: Int32) throws -> [(name: String, cpus: String)] {
        try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task").map { task in
            let name = try String(contentsOfFile: "/proc/\(pid)/task/\(task)/comm", encoding: .utf8).trimmingCharacters(
                in: .whitespacesAndNewlines)
            let status = try String(contentsOfFile: "/proc/\(pid)/task/\(task)/status", encoding: .utf8)
            let line = status.split(separator: "\n").first { $0.hasPrefix("Cpus_allowed_list:") } ?? ""
            return (name, line.dropFirst("Cpus_allowed_list:".count).trimmingCharacters(in: .whitespaces))
        }
    }

    @Test(
        "--pin-event-loops: one event loop on each CPU the server may use, each pinned to its own, and it serves; without it the loops may run anywhere; a bad value is refused naming the key"
    )
    func pinnedEventLoops() async throws {
        let (url, cli, pinned) = try await ServerProcess.onFreshDatabase(extraArguments: ["--pin-event-loops"])
        defer { pinned.stop() }
        let status = try String(contentsOfFile: "/proc/\(pinned.pid)/status", encoding: .utf8)
        let allowedLine = try #require(status.split(separator: "\n").first { $0.hasPrefix("Cpus_allowed_list:") })
        let allowed = allowedLine.dropFirst("Cpus_allowed_list:".count).trimmingCharacters(in: .whitespaces)
        let threads = try Self.threadCPUs(pinned.pid)
        let loops = threads.filter { $0.name.hasPrefix("NIO-ELT") }
        if pinned.log.contains("the CPU quota") {
            // A machine whose CPU quota is narrower than its CPUs (a limited container): nothing pinned, and said so.
            #expect(loops.isEmpty && pinned.log.contains("event loops not pinned"), "\(threads)\n\(pinned.log)")
        } else {
            #expect(!loops.isEmpty, "no event loop threads: \(threads)")
            // Each loop on one CPU (a single number, no range or list), no two on the same, all among the allowed ones.
            #expect(loops.allSatisfy { Int($0.cpus) != nil }, "\(loops)")
            #expect(Set(loops.map(\.cpus)).count == loops.count, "\(loops)")
            #expect(pinned.log.contains("event loops pinned"), "\(pinned.log)")
        }
        let (_, health) = try await HTTP.get(pinned.baseURL + "/healthz")
        #expect(health == 200)

        let free = try ServerProcess(databaseURL: url)
        defer { free.stop() }
        try await free.waitUntilReady()
        let freeLoops = try Self.threadCPUs(free.pid).filter { $0.name.hasPrefix("NIO-") }
        #expect(!freeLoops.isEmpty && freeLoops.allSatisfy { $0.cpus == allowed }, "\(freeLoops) vs \(allowed)")

        let file = FileManager.default.temporaryDirectory.appendingPathComponent("pin-\(UUID().uuidString).conf")
        try Data("pin_event_loops = yes\n".utf8).write(to: file)
        let check = try cli.run(["config", "check", file.path])
        #expect(
            check.status == 1 && check.stdout.contains("pin_event_loops") && check.stdout.contains("true or false"),
            "\(check.stdout)")
    }
}
