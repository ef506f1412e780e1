import API
import EventStore
import Foundation
import HTTPTypes
import Hummingbird
import Projector
import Testing

@Suite("Operations routes, in process")
struct OperationsRouteTests {
    @Test("/healthz, /openapi.json and /metrics are public; /metrics is absent without an exposition")
    func publicRoutes() async throws {
        let fixture = try await APIFixture()
        try await fixture.test(metrics: { "cueline_up 1\n" }) { client in
            let health = try await client.get("/healthz")
            #expect(health.status == .ok && health.text == "ok\n")
            let document = try await client.get("/openapi.json")
            #expect(document.status == .ok && document.headers[.contentType] == "application/json")
            #expect(document.text == OpenAPIDocument.json + "\n")
            let metrics = try await client.get("/metrics")
            #expect(metrics.status == .ok && metrics.text == "cueline_up 1\n")
            #expect(metrics.headers[.contentType] == "text/plain; version=0.0.4")
        }
        try await fixture.test { client in
            #expect(try await client.get("/metrics").status == .notFound)
            // A path without a route: the router's 404, with a body that says so.
            let none = try await client.get("/nowhere")
            #expect(none.status == .notFound && none.error?.message.hasPrefix("no route for GET /nowhere;") == true)
        }
    }

    @Test("/readyz is 503 until the follower has read the log, then 200")
    func readiness() async throws {
        let store = InMemoryEventStore()
        let clock = TestClock()
        let follower = ChannelFollower(store: store, wakeups: { AsyncStream { _ in } }, clock: clock.read)
        let streams = EventStreams(follower: follower, store: store, limits: ServerLimits())
        let router = Routes.router(
            follower: follower,
            handler: CommandHandler(store: store, clock: clock.read, applied: { await follower.applied($0) }),
            mediaDirectory: nil, access: .open,
            eventStreams: streams)
        try await withRouterClient(router) { client in
            let before = try await client.get("/readyz")
            #expect(before.status == .serviceUnavailable)
            #expect(before.error?.message.hasPrefix("not ready") == true)
            try await follower.catchUp()
            let after = try await client.get("/readyz")
            #expect(after.status == .ok && after.text == "ready\n")
        }
    }

    @Test("/channels: 401 without a valid token, each token sees its channels, open mode sees all")
    func channels() async throws {
        var fixture = try await APIFixture()
        _ = try await fixture.handler.handle(
            .createChannel(APIFixture.config("news")), channel: "news", context: APIFixture.context())
        try await fixture.follower.catchUp()
        try await fixture.test { [fixture] client in
            let none = try await client.get("/channels")
            #expect(none.status == .unauthorized && none.error?.field == "Authorization")
            #expect(none.headers[.wwwAuthenticate] == #"Bearer realm="cueline""#)
            #expect(none.error?.message.contains("cueline token create") == true)
            let basic = try await client.get("/channels", [.authorization: "Basic abc"])
            #expect(
                basic.status == .unauthorized
                    && basic.error?.message == "the Authorization header must be Bearer <token>")
            let malformed = try await client.get("/channels", [.authorization: "Bearer cue_xyz"])
            #expect(
                malformed.status == .unauthorized
                    && malformed.error?.message.hasPrefix("the token is malformed") == true)
            let unknown = try await client.get(
                "/channels", [.authorization: "Bearer cue_" + String(repeating: "0", count: 64)])
            #expect(unknown.status == .unauthorized && unknown.error?.message == "the token is unknown or revoked")
            let all = try await client.get("/channels", fixture.auth("desk"))
            #expect(all.status == .ok)
            let ids = try #require(try JSONSerialization.jsonObject(with: Data(buffer: all.body)) as? [[String: Any]])
                .compactMap { $0["id"] as? String }
            #expect(ids.sorted() == ["demo", "news"])
            let scoped = try await client.get("/channels", fixture.auth("news"))
            let scopedIDs = try #require(
                try JSONSerialization.jsonObject(with: Data(buffer: scoped.body)) as? [[String: Any]]
            ).compactMap { $0["id"] as? String }
            #expect(scopedIDs == ["news"])
        }
        fixture.open = true
        try await fixture.test { client in
            let all = try await client.get("/channels")
            #expect(all.status == .ok)
            #expect(
                try #require(try JSONSerialization.jsonObject(with: Data(buffer: all.body)) as? [[String: Any]]).count
                    == 2)
        }
    }

    @Test("tokens that cannot be checked (the database is down, no table read yet) are 503, not 401")
    func tokensUnavailable() async throws {
        var fixture = try await APIFixture()
        fixture.tokenDirectory = UnreachableTokens()
        try await fixture.test { [fixture] client in
            let answer = try await client.get("/channels", fixture.auth("desk"))
            #expect(answer.status == .serviceUnavailable)
            #expect(answer.error?.message.hasPrefix("tokens cannot be checked") == true)
            // Public routes never ask for a token.
            #expect(try await client.get("/channels/demo/720p.m3u8").status == .ok)
        }
    }

    @Test("an error answer carries the CORS header like any other")
    func corsOnErrors() async throws {
        let fixture = try await APIFixture()
        try await fixture.test { client in
            let answer = try await client.get("/channels/nope/master.m3u8", [.origin: "https://player.example"])
            #expect(answer.status == .notFound)
            #expect(answer.headers[.accessControlAllowOrigin] == "*")
            #expect(answer.headers[.contentType] == "application/json" && answer.headers[.cacheControl] == "no-cache")
        }
    }

    @Test("/media serves regular files inside the directory; dot segments and escapes are 404 with our body")
    func media() async throws {
        var fixture = try await APIFixture()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "cueline-api-media-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data("segment".utf8).write(to: directory.appendingPathComponent("seg0.ts"))
        fixture.mediaDirectory = directory.path
        try await fixture.test { client in
            let file = try await client.get("/media/seg0.ts")
            #expect(file.status == .ok && file.text == "segment")
            // Served from the console's origin: a document among the media gets an opaque origin and no scripts.
            try Data("<script>sessionStorage</script>".utf8).write(to: directory.appendingPathComponent("page.html"))
            let page = try await client.get("/media/page.html")
            #expect(
                page.status == .ok && page.headers[.contentSecurityPolicy] == "sandbox"
                    && file.headers[.contentSecurityPolicy] == "sandbox")
            for bad in ["/media/../etc/passwd", "/media//seg0.ts", "/media/", "/media/missing.ts"] {
                let answer = try await client.get(bad)
                #expect(answer.status == .notFound, "\(bad)")
                #expect(answer.error?.message == "no such file", "\(bad)")
            }
        }
    }

    @Test(
        "a request no route takes: 405 with Allow where the path takes other methods, else 404; both name the method and path"
    )
    func unrouted() async throws {
        let fixture = try await APIFixture()
        try await fixture.test { [fixture] client in
            let put = try await client.execute(
                uri: "/channels/demo/commands", method: .put, headers: fixture.auth("desk"),
                body: ByteBuffer(string: "{}"))
            #expect(put.status == .methodNotAllowed && put.headers[.allow] == "POST")
            #expect(put.error?.message == "/channels/demo/commands does not take PUT; it takes POST")
            // The commands route's literal wins over `/channels/{channel}/{playlist}`, as in the router: GET is not
            // offered there, though a playlist's path has the same shape.
            let get = try await client.get("/channels/demo/commands", fixture.auth("desk"))
            #expect(get.status == .methodNotAllowed && get.headers[.allow] == "POST")
            let delete = try await client.execute(
                uri: "/channels/demo/720p.m3u8", method: .delete, headers: [.origin: "https://player.example"])
            #expect(delete.status == .methodNotAllowed && delete.headers[.allow] == "GET, HEAD")
            #expect(
                delete.headers[.contentType] == "application/json" && delete.headers[.accessControlAllowOrigin] == "*")
            let none = try await client.get("/nothing/here")
            #expect(
                none.status == .notFound
                    && none.error?.message == "no route for GET /nothing/here; the routes are listed at /openapi.json")
            let deep = try await client.execute(uri: "/channels/demo", method: .delete)
            #expect(
                deep.status == .notFound && deep.error?.message.hasPrefix("no route for DELETE /channels/demo;") == true
            )
        }
    }

    @Test("error categories: one status each, and back; conflicts exit 3, everything else 1")
    func categories() {
        for category in ErrorCategory.allCases {
            #expect(ErrorCategory(status: Int(category.status.code)) == category)
        }
        #expect(Set(ErrorCategory.allCases.map(\.status.code)).count == ErrorCategory.allCases.count)
        #expect(ErrorCategory(status: 201) == nil)
        #expect(ErrorCategory.conflict.exitCode == 3)
        #expect(ErrorCategory.invalid.exitCode == 1 && ErrorCategory.unavailable.exitCode == 1)
        #expect(
            ErrorCategory.invalid.status == .unprocessableContent
                && ErrorCategory.unauthenticated.status == .unauthorized)
        // A failed command has one category wherever it was sent: the CLI's exit code and the server's status agree.
        #expect(
            ErrorCategory(CommandError.store(.versionConflict(channel: "demo", expected: .exactly(1), actual: 2)))
                == .conflict)
        #expect(ErrorCategory(CommandError.store(.commandIDReused(commandID: "k"))).exitCode == 3)
        #expect(ErrorCategory(CommandError.store(.unavailable("down"))) == .unavailable)
        #expect(ErrorCategory(CommandError.store(.invalidValue("NUL"))) == .invalid)
        #expect(ErrorCategory(CommandError.refused(.unknownChannel("nope"))) == .notFound)
    }
}

@Suite("The OpenAPI document and the router agree, in process")
struct DocumentedRoutesTests {
    @Test("every documented path and method has a route: no answer is the router's own \"no route for\" 404 or its 405")
    func everyDocumentedPathHasARoute() async throws {
        let fixture = try await APIFixture()
        let document = try #require(
            try JSONSerialization.jsonObject(with: Data(OpenAPIDocument.json.utf8)) as? [String: Any])
        let paths = try #require(document["paths"] as? [String: [String: Any]])
        #expect(paths.count == 20)  // + refusals (issue 15), /subscriptions[/{name}] (issue 33), prerolls (issue 35)
        let routes = paths.map { ($0.key, Array($0.value.keys)) }
        try await fixture.test(metrics: { "" }) { [fixture] client in
            for (template, methods) in routes {
                let path = template.replacingOccurrences(of: "{channel}", with: "demo").replacingOccurrences(
                    of: "{rendition}", with: "720p"
                )
                .replacingOccurrences(of: "{id}", with: "x").replacingOccurrences(of: "{name}", with: "feed")
                .replacingOccurrences(of: "{file}", with: "0-0.m3u8")
                for method in methods {
                    let answer =
                        method == "post"
                        ? try await client.post(path, "{}", fixture.auth("desk"))
                        : method == "delete"
                            ? try await client.execute(uri: path, method: .delete, headers: fixture.auth("desk"))
                            : try await client.get(
                                path + (path.hasSuffix("/events") ? "?limit=1" : ""), fixture.auth("desk"))
                    #expect(
                        answer.error?.message.hasPrefix("no route for") != true,
                        "\(method.uppercased()) \(template) has no route")
                    // The public `/channels/{channel}/{playlist}` route answers any unknown last segment with its own
                    // 404 ("no such resource: schedule"): that is a missing route too.
                    #expect(
                        answer.error?.message.hasPrefix("no such resource") != true,
                        "\(method.uppercased()) \(template) fell through to the playlist route")
                    #expect(answer.status != .methodNotAllowed, "\(method.uppercased()) \(template) is not allowed")
                }
            }
        }
    }
}
