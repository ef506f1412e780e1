import HTTPTypes
import Hummingbird
import Synchronization

/// The answer to a request no route takes, which Hummingbird leaves with an empty body: 405 with `Allow` when its
/// path has routes for other methods (`PUT …/commands`), else 404; both with the JSON error body of every other
/// refusal, naming the method and the path, so a client's typo is found from the answer alone.
struct UnroutedRequests<Context: RequestContext>: RouterMiddleware {
    /// The router's routes, set once they are all added (`Routes.router`).
    final class Table: Sendable {
        private let routes = Mutex<[(path: [String], method: HTTPRequest.Method)]>([])

        func set(_ routes: [Router<Context>.RouteDescription]) {
            let table = routes.map { route in (path: route.path.components.map(\.description), method: route.method) }
            self.routes.withLock { $0 = table }
        }

        /// The methods of the routes the router would take `path` to, in a fixed order: a literal component wins over
        /// a capture at each level (`/channels/x/commands` is the commands route's path, never
        /// `/channels/{channel}/{playlist}`'s). Hummingbird's trie also goes back to a capture when a literal leads
        /// nowhere deeper down, and knows `{name}.ext` captures; no route here needs either, and
        /// `DocumentedRoutesTests` fails if a documented route is ever answered 405 or "no route".
        func methods(for path: String) -> [HTTPRequest.Method] {
            var candidates = routes.withLock { $0 }
            for (depth, component) in path.split(separator: "/", omittingEmptySubsequences: true).enumerated() {
                let literal = candidates.filter { depth < $0.path.count && $0.path[depth] == component }
                candidates =
                    literal.isEmpty
                    ? candidates.filter {
                        depth < $0.path.count && Self.isCapture($0.path[depth])
                            || $0.path.prefix(depth + 1).contains("**")
                    }
                    : literal
            }
            let depth = path.split(separator: "/", omittingEmptySubsequences: true).count
            var methods = candidates.filter { $0.path.count == depth || $0.path.contains("**") }.map(\.method)
            // HEAD is answered wherever GET is (`autoGenerateHeadEndpoints`), though the routes do not list it.
            if methods.contains(.get) { methods.append(.head) }
            var seen = Set<String>()
            return methods.sorted { $0.rawValue < $1.rawValue }.filter { seen.insert($0.rawValue).inserted }
        }

        private static func isCapture(_ element: String) -> Bool {
            (element.hasPrefix("{") && element.hasSuffix("}")) || element.hasPrefix(":") || element == "*"
        }
    }

    let table: Table

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        do {
            return try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound && context.endpointPath == "NotFound" {
            let path = String(request.uri.path.prefix(256)).escapingControlCharacters
            let allowed = table.methods(for: request.uri.path).filter { $0 != request.method }
            guard !allowed.isEmpty else {
                throw APIError(
                    .notFound, "no route for \(request.method) \(path); the routes are listed at /openapi.json")
            }
            let names = allowed.map(\.rawValue).joined(separator: ", ")
            throw APIError(.methodNotAllowed, "\(path) does not take \(request.method); it takes \(names)").with(
                .allow, names)
        }
    }
}
