import EventStore
import Foundation
import HTTPTypes
import Hummingbird
import Synchronization

/// Who may do what over HTTP. Playlists, asset lists, health and metrics are public in both modes.
public enum AccessPolicy: Sendable {
    /// No tokens: commands and JSON reads are open to anyone who can reach the port. Closed networks and demos
    /// only (`serve --unauthenticated-commands`); the actor is the body's `actor`, else `http`.
    case open
    /// Bearer tokens from `cueline token create`, checked for role and channel on every request.
    case tokens(TokenCache)
}

/// Looks tokens up and remembers the ones found for a few seconds, so a database outage does not lock out
/// operators who were already working; a revoked token stops working within `ttl`.
public final class TokenCache: Sendable {
    let directory: any TokenDirectory
    let ttl: Duration
    private let found = Mutex<[String: (token: APIToken, at: ContinuousClock.Instant)]>([:])

    public init(directory: any TokenDirectory, ttl: Duration = .seconds(5)) {
        self.directory = directory
        self.ttl = ttl
    }

    func token(secret: String) async throws -> APIToken? {
        let digest = TokenSecret.digest(secret)
        let cached = found.withLock { $0[digest] }
        if let cached, ContinuousClock.now - cached.at < ttl { return cached.token }
        do {
            // Only tokens that exist are cached: random guesses cannot fill memory.
            let token = try await directory.token(digest: digest)
            found.withLock { found in
                if let token {
                    if found.count > 10_000 { found.removeAll() }
                    found[digest] = (token, ContinuousClock.now)
                } else {
                    found[digest] = nil
                }
            }
            return token
        } catch {
            if let cached { return cached.token }
            throw error
        }
    }
}

/// What a request wants to do.
enum Access {
    case read(channel: String)
    /// Any valid token: listing channels (filtered by the token), and the first check of a command.
    case anyToken
    case command(String, channel: String)
}

/// The caller: a token, or nobody in open mode.
struct Caller {
    var token: APIToken?

    /// The actor recorded on events: the token's name; in open mode what the body says, else `http`.
    func actor(claimed: String?) -> String {
        token?.name ?? claimed ?? "http"
    }

    func mayRead(_ channel: String) -> Bool {
        token?.mayRead(channel: channel) ?? true
    }
}

extension AccessPolicy {
    /// The caller, or the response that refuses the request: 401 without a valid token, 403 when the token's
    /// role or channels do not allow it, 503 when tokens cannot be checked.
    func authorize(_ request: Request, _ access: Access) async -> Result<Caller, AccessRefusal> {
        guard case .tokens(let cache) = self else { return .success(Caller(token: nil)) }
        guard let header = request.headers[.authorization] else {
            return .failure(.unauthenticated("send Authorization: Bearer <token>; create one with cueline token create"))
        }
        guard header.lowercased().hasPrefix("bearer ") else {
            return .failure(.unauthenticated("the Authorization header must be Bearer <token>"))
        }
        let secret = header.dropFirst(7).trimmingCharacters(in: .whitespaces)
        let token: APIToken?
        do {
            token = try await cache.token(secret: secret)
        } catch {
            return .failure(.unavailable("tokens cannot be checked: the database is unreachable; retry shortly"))
        }
        guard let token else { return .failure(.unauthenticated("the token is unknown or revoked")) }
        switch access {
        case .anyToken:
            return .success(Caller(token: token))
        case .read(let channel):
            guard token.mayRead(channel: channel) else {
                return .failure(.forbidden("token \(token.name) is not allowed on channel \(channel)"))
            }
        case .command(let type, let channel):
            if let refusal = token.refusal(command: type, channel: channel) { return .failure(.forbidden(refusal)) }
        }
        return .success(Caller(token: token))
    }
}

enum AccessRefusal: Error {
    case unauthenticated(String)
    case forbidden(String)
    case unavailable(String)

    var response: Response {
        switch self {
        case .unauthenticated(let message):
            var response = errorResponse(.unauthorized, message, field: "Authorization")
            response.headers[.wwwAuthenticate] = #"Bearer realm="cueline""#
            return response
        case .forbidden(let message):
            return errorResponse(.forbidden, message)
        case .unavailable(let message):
            return errorResponse(.serviceUnavailable, message)
        }
    }
}
