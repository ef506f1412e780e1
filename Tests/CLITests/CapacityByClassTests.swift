import Foundation
import TestSupport
import Testing

/// Issue 34, defects 1, 2 and 6 at small scale: held blocking reloads and request bodies still arriving each have their
/// share of the connections, so that the players' GETs of any channel keep theirs (`scripts/faults/fault-flood.sh`
/// floods them at scale).
@Suite(
    "Capacity by class: held reloads and arriving bodies", .serialized,
    .enabled(
        if: TestDatabase.isConfigured && CLIRunner.isAvailable, "needs DATABASE_URL and CUELINE_BIN (scripts/test.sh)"))
struct CapacityByClassTests {
    typealias RawConnection = ServerLimitsTests.RawConnection

    private func serve(_ arguments: [String]) async throws -> (cli: CLIRunner, server: ServerProcess) {
        let (_, cli, server) = try await ServerProcess.onFreshDatabase(extraArguments: arguments)
        for create in [
            [
                "channel", "create", "one", "--segment-duration", "1", "--window", "6", "--rendition",
                "720p,1000000,720p/seg{n}.ts",
            ],
            [
                "channel", "create", "ll", "--segment-duration", "8", "--part-duration", "2", "--window", "32",
                "--rendition", "720p,1000000,720p/seg{n}.m4s", "--part", "720p=720p/seg{n}.{p}.m4s",
            ],
        ] {
            let created = try cli.run(create)
            #expect(created.status == 0, "\(created.stderr)")
        }
        return (cli, server)
    }

    /// A blocking reload of the LL channel that is held for 2-4 s.
    private func heldReload(_ server: ServerProcess) async throws -> String {
        // The first segment (8 s) must have begun; then the playlist hints at the part in progress, and two parts after
        // it are 2-4 s away (4 parts of 2 s to a segment).
        let hinted = try await HTTP.hintedPart(
            server.baseURL + "/channels/ll/720p.m3u8", tries: 200, every: .milliseconds(100))
        let target = hinted.msn * 4 + hinted.part + 2
        return "GET /channels/ll/720p.m3u8?_HLS_msn=\(target / 4)&_HLS_part=\(target % 4) HTTP/1.1\r\nHost: x\r\n\r\n"
    }

    @Test("a request body that stops arriving is answered 408 naming the body, within --body-timeout of its head")
    func bodyTimeout() async throws {
        let (_, server) = try await serve([
            "--body-timeout", "1", "--header-timeout", "10", "--unauthenticated-commands",
        ])
        defer { server.stop() }
        let slow = try RawConnection(port: server.port)
        slow.send(
            "POST /channels/one/commands HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"comm"
        )
        let answer = slow.read(for: 5)
        #expect(
            answer.closed && answer.text.hasPrefix("HTTP/1.1 408") && answer.text.contains("request body"), "\(answer)")
        #expect(answer.after > 0.8 && answer.after < 2.5, "answered after \(answer.after) s")
    }

    @Test(
        "bodies still arriving past an address's share are refused 503 at once; a body that arrives whole takes no share; playlists are served meanwhile"
    )
    func arrivingBodies() async throws {
        let (_, server) = try await serve([
            "--max-arriving-bodies", "8", "--max-arriving-bodies-per-address", "2", "--body-timeout", "5",
        ])
        defer { server.stop() }
        let head =
            "POST /hooks/scores HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 60000\r\n\r\n{"
        let slow = try (0..<2).map { _ in try RawConnection(port: server.port) }
        for connection in slow { connection.send(head) }
        try await Task.sleep(for: .milliseconds(300))
        let third = try RawConnection(port: server.port)
        third.send(head)
        let refused = third.read(for: 3)
        #expect(
            refused.closed && refused.text.hasPrefix("HTTP/1.1 503") && refused.text.contains("Retry-After: 1"),
            "\(refused)")
        #expect(refused.after < 1, "refused after \(refused.after) s")
        // A command whose body came with its head is not held up by the two.
        let whole = try RawConnection(port: server.port)
        whole.send(
            "POST /channels/one/commands HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
        )
        let answered = whole.read(for: 3) { $0.contains("\r\n\r\n") }
        #expect(!answered.text.hasPrefix("HTTP/1.1 503"), "\(answered)")
        let (_, status) = try await HTTP.get(server.baseURL + "/channels/one/720p.m3u8")
        #expect(status == 200)
        // The two slow ones were answered 404 at once (no hook of that name) and end at their deadline, with no
        // second answer.
        for connection in slow {
            let late = connection.read(for: 8)
            #expect(
                late.closed && late.text.hasPrefix("HTTP/1.1 404") && !late.text.contains("HTTP/1.1 408"), "\(late)")
        }
    }

    @Test(
        "held blocking reloads past an address's share are answered 503 at once; the others are held and answered at their part"
    )
    func heldPerAddress() async throws {
        let (_, server) = try await serve(["--max-held-reloads-per-address", "2"])
        defer { server.stop() }
        let request = try await heldReload(server)
        let held = try (0..<2).map { _ in try RawConnection(port: server.port) }
        for connection in held { connection.send(request) }
        try await Task.sleep(for: .milliseconds(200))
        let third = try RawConnection(port: server.port)
        third.send(request)
        let refused = third.read(for: 3) { $0.contains("}") }
        #expect(
            refused.text.hasPrefix("HTTP/1.1 503") && refused.text.contains("max_held_reloads_per_address"),
            "\(refused)")
        #expect(refused.after < 1, "refused after \(refused.after) s")
        for connection in held {
            let answer = connection.read(for: 8) { $0.contains("PRELOAD-HINT") }
            #expect(answer.text.hasPrefix("HTTP/1.1 200"), "\(answer)")
        }
    }

    @Test(
        "behind a trusted proxy, held reloads count against the client X-Forwarded-For names: two clients hold one each, a client's second is refused; what a client writes itself further left is not read"
    )
    func heldPerForwardedClient() async throws {
        let (_, server) = try await serve([
            "--max-held-reloads-per-address", "1", "--trusted-proxy", "127.0.0.0/8", "--trusted-proxy", "::1",
        ])
        defer { server.stop() }
        let request = try await heldReload(server)
        func from(_ forwarded: String) -> String {
            request.replacingOccurrences(of: "Host: x\r\n", with: "Host: x\r\nX-Forwarded-For: \(forwarded)\r\n")
        }
        let held = try (0..<2).map { _ in try RawConnection(port: server.port) }
        held[0].send(from("203.0.113.7"))
        held[1].send(from("203.0.113.8"))
        try await Task.sleep(for: .milliseconds(200))
        // The first client again, having written another address itself to the left of the proxy's entry.
        let again = try RawConnection(port: server.port)
        again.send(from("198.51.100.1, 203.0.113.7"))
        let refused = again.read(for: 3) { $0.contains("}") }
        #expect(
            refused.text.hasPrefix("HTTP/1.1 503") && refused.text.contains("max_held_reloads_per_address"),
            "\(refused)")
        for connection in held {
            let answer = connection.read(for: 8) { $0.contains("PRELOAD-HINT") }
            #expect(answer.text.hasPrefix("HTTP/1.1 200"), "\(answer)")
        }
    }

    @Test(
        "at the connection cap with no connection idle, a new connection takes the oldest held reload's place: that one is answered 503 and closed, and the new one is served"
    )
    func evictsOldestHeld() async throws {
        let (_, server) = try await serve([
            "--max-connections", "16", "--max-held-reloads-per-address", "12", "--max-arriving-bodies", "4",
            "--max-arriving-bodies-per-address", "4", "--body-timeout", "30",
        ])
        defer { server.stop() }
        let request = try await heldReload(server)
        // 12 held reloads (the cap keeps 3/4 of its places for them) and 4 bodies arriving slowly: none idle.
        let held = try (0..<12).map { _ in try RawConnection(port: server.port) }
        for connection in held {
            connection.send(request)
            try await Task.sleep(for: .milliseconds(10))
        }
        let bodies = try (0..<4).map { _ in try RawConnection(port: server.port) }
        for connection in bodies {
            connection.send(
                "POST /hooks/scores HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 60000\r\n\r\n{"
            )
        }
        try await Task.sleep(for: .milliseconds(200))
        // New players: each is served, the first ones in place of what is idle (this test's own HTTP client's
        // connection), then in place of the oldest held reloads.
        var players: [RawConnection] = []
        for _ in 0..<3 {
            let player = try RawConnection(port: server.port)
            players.append(player)
            player.send("GET /channels/one/720p.m3u8 HTTP/1.1\r\nHost: x\r\n\r\n")
            let served = player.read(for: 3) { $0.contains("#EXTM3U") }
            #expect(served.text.hasPrefix("HTTP/1.1 200"), "\(served)")
        }
        let oldest = held[0].read(for: 3)
        #expect(
            oldest.closed && oldest.text.hasPrefix("HTTP/1.1 503") && oldest.text.contains("took this one's place"),
            "\(oldest)")
        // The others are still held, and answered at their part.
        let next = held[1].read(for: 8) { $0.contains("PRELOAD-HINT") }
        #expect(next.text.hasPrefix("HTTP/1.1 200"), "\(next)")
    }
}
