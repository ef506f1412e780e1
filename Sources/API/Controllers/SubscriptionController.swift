import EventStore
import Foundation
import Hummingbird
import Logging
import Schedule

/// `GET /subscriptions`, `POST /subscriptions`, `DELETE /subscriptions/{name}`: notification subscriptions over the
/// API, for admins (an operator token for every channel; anyone in open mode), as `cueline subscription` does on the
/// database (docs/notifications.md). The secret is in the answer to the POST only.
struct SubscriptionController {
    let directory: any SubscriptionDirectory
    private static let logger = Logger(label: "cueline.notifications")

    /// The POST's body (snake_case).
    struct Create: Decodable {
        var name: String
        var url: String
        var channels: [String]?
        var events: [String]?
    }

    struct Created: Encodable {
        var subscription: Subscription
        var secret: String
    }

    struct Listing: Encodable {
        var subscriptions: [Subscription]
    }

    static let keys = StrictKeys.Shape.object([
        "name": .any, "url": .any, "channels": .list(.any), "events": .list(.any),
    ])

    func addRoutes(to group: RouterGroup<APIRequestContext>) {
        group.get("/subscriptions", use: list)
        group.post("/subscriptions", use: create)
        group.delete("/subscriptions/{name}", use: delete)
    }

    @Sendable func list(_ request: Request, context: APIRequestContext) async throws -> Response {
        _ = try context.caller(for: .admin)
        return jsonResponse(Listing(subscriptions: try await stored { try await directory.list() }))
    }

    @Sendable func create(_ request: Request, context: APIRequestContext) async throws -> Response {
        let caller = try context.caller(for: .admin)
        let body = try await decodeBody(Create.self, request, keys: Self.keys) {
            DecodingProblem($0, snakeCase: true).error
        }
        var channels: [ChannelID] = []
        for (index, text) in (body.channels ?? []).enumerated() {
            guard let channel = ChannelID(text) else {
                throw APIError.invalid("channels[\(index)]", "must be a channel id: \(Identifier.rule)")
            }
            if !channels.contains(channel) { channels.append(channel) }
        }
        var events: [NotificationKind] = []
        for (index, text) in (body.events ?? []).enumerated() {
            guard let kind = NotificationKind(rawValue: text) else {
                throw APIError.invalid("events[\(index)]", "must be one of \(NotificationKind.names)")
            }
            if !events.contains(kind) { events.append(kind) }
        }
        let created = try await stored {
            try await directory.create(
                name: body.name, url: body.url, channels: channels, events: events,
                createdBy: caller.actor(claimed: nil))
        }
        var response = jsonResponse(Created(subscription: created, secret: created.secret))
        response.status = .created
        return response
    }

    @Sendable func delete(_ request: Request, context: APIRequestContext) async throws -> Response {
        _ = try context.caller(for: .admin)
        let name = try context.parameters.require("name")
        try await stored { try await directory.delete(name: name) }
        return Response(status: .noContent)
    }

    /// Runs a store call; its errors become the API's (422 naming the field, 409, 404, 503).
    private func stored<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as SubscriptionError {
            switch error {
            case .invalid(let field, let reason): throw APIError.invalid(field, reason)
            case .nameTaken: throw APIError(.conflict, error.description)
            case .unknown: throw APIError(.notFound, error.description)
            }
        } catch {
            Self.logger.error("subscriptions could not be read or written", metadata: ["error": "\(error)"])
            throw APIError(
                .unavailable, "subscriptions are unreachable; retry shortly (the details are in the server's log)")
        }
    }
}
