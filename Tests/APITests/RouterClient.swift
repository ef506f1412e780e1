import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOEmbedded
import ServiceLifecycle

/// What the router answered one request with.
struct TestResponse: Sendable {
    let head: HTTPResponse
    let body: ByteBuffer
    var status: HTTPResponse.Status { head.status }
    var headers: HTTPFields { head.headerFields }
}

/// Sends requests straight to a router's responder, in process (no socket, no HTTP codec), as the server would hand
/// them over: a request head and its whole body, a context made from the connection's source, and an error the
/// responder throws answered 500 (as `Application` does).
///
/// HummingbirdTesting's router mode does this too, but that library also carries its live-server clients
/// (AsyncHTTPClient, and with it swift-nio-ssl's BoringSSL, HTTP/2 and compression): several minutes of a fresh build
/// on 2 cores, for tests that never open a socket. The end-to-end suites talk to a real `cueline serve` instead.
struct RouterClient: Sendable {
    let respond: @Sendable (Request) async throws -> Response
    let makeSource: @Sendable () -> ApplicationRequestContextSource

    init<Context: RequestContext>(_ router: Router<Context>, logger: Logger)
    where Context.Source == ApplicationRequestContextSource {
        let responder = router.buildResponder()
        makeSource = { ApplicationRequestContextSource(channel: NIOAsyncTestingChannel(), logger: logger) }
        let source = makeSource
        respond = { request in
            let context = Context(source: source())
            do {
                return try await responder.respond(to: request, context: context)
            } catch {
                return Response(status: .internalServerError)
            }
        }
    }

    func execute(uri: String, method: HTTPRequest.Method, headers: HTTPFields = [:], body: ByteBuffer? = nil)
        async throws -> TestResponse
    {
        var headers = headers
        if let body { headers[.contentLength] = String(body.readableBytes) }
        let request = Request(
            head: HTTPRequest(method: method, scheme: "http", authority: "localhost", path: uri, headerFields: headers),
            body: RequestBody(buffer: body ?? ByteBuffer()))
        let response = try await respond(request)
        let collected = Collected()
        try await response.body.write(Collector(into: collected))
        return TestResponse(head: response.head, body: collected.buffer)
    }

    /// The body as written: the writer is handed over (consumed), so it writes into this.
    private final class Collected {
        var buffer = ByteBuffer()
    }

    private struct Collector: ResponseBodyWriter {
        let into: Collected
        mutating func write(_ buffer: ByteBuffer) async throws { into.buffer.writeImmutableBuffer(buffer) }
        consuming func finish(_ trailingHeaders: HTTPFields?) async throws {}
    }
}

/// Runs `body` with a `RouterClient` on `router` while `services` run (started before `body`, shut down gracefully
/// after it, whether it returns or throws).
func withRouterClient<Context: RequestContext, Value: Sendable>(
    _ router: Router<Context>, services: [any Service] = [], _ body: @Sendable (RouterClient) async throws -> Value
) async throws -> Value where Context.Source == ApplicationRequestContextSource {
    let logger = Logger(label: "cueline.tests.router")
    let client = RouterClient(router, logger: logger)
    guard !services.isEmpty else { return try await body(client) }
    let (started, startedContinuation) = AsyncStream<Void>.makeStream()
    let group = ServiceGroup(
        configuration: .init(services: services + [Started(continuation: startedContinuation)], logger: logger))
    return try await withThrowingTaskGroup(of: Void.self) { tasks in
        tasks.addTask { try await group.run() }
        // The group starts its services in order: once the last one runs, the others have been started.
        for await _ in started {}
        do {
            let value = try await body(client)
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
            return value
        } catch {
            await group.triggerGracefulShutdown()
            throw error
        }
    }
}

/// Ends `continuation` once it runs, then waits for the graceful shutdown.
private struct Started: Service {
    let continuation: AsyncStream<Void>.Continuation
    func run() async throws {
        continuation.finish()
        try? await gracefulShutdown()
    }
}
