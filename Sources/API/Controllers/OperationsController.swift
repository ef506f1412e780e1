import Hummingbird
import Projector

/// What operators and their tools ask of an instance: liveness, readiness, metrics, the OpenAPI document (public),
/// and the channels a token may see.
struct OperationsController {
    let follower: ChannelFollower
    /// Renders the Prometheus exposition for `/metrics`; no route without it.
    let metrics: (@Sendable () -> String)?

    /// The public routes.
    func addRoutes(to group: RouterGroup<APIRequestContext>) {
        if let metrics {
            group.get("/metrics") { _, _ in Responses.text(metrics(), contentType: "text/plain; version=0.0.4") }
        }
        group.get("/healthz") { _, _ in "ok\n" }
        group.get("/openapi.json") { _, _ in
            Responses.text(OpenAPIDocument.json + "\n", contentType: "application/json")
        }
        group.get("/readyz", use: ready)
    }

    /// The routes that need a token.
    func addAuthenticatedRoutes(to group: RouterGroup<APIRequestContext>) {
        group.get("/channels", use: channels)
    }

    @Sendable func ready(_ request: Request, context: APIRequestContext) throws -> Response {
        guard follower.isReady else {
            throw APIError(
                .unavailable, "not ready: the event log has not been read yet or the database is unreachable")
        }
        return Responses.text("ready\n")
    }

    /// The channels the caller's token may read.
    @Sendable func channels(_ request: Request, context: APIRequestContext) throws -> Response {
        let caller = try context.caller(for: .anyToken)
        return jsonResponse(
            follower.channels().compactMap { $0.config == nil ? nil : ChannelView($0) }.filter { caller.mayRead($0.id) }
        )
    }
}
