import EventStore
import Schedule
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import ServiceLifecycle
import Synchronization

/// Who may do what over HTTP. Playlists, asset lists, health and metrics are public in both modes.
public enum AccessPolicy: Sendable {
    /// No tokens: commands and JSON reads are open to anyone who can reach the port. Closed networks and demos
    /// only (`serve --unauthenticated-commands`); the actor is the body's `actor`, else `http`.
    case open
    /// Bearer tokens from `cueline token create`, checked for role and channel on every request.
    case tokens(TokenCache)
}

/// The table of active tokens, held in memory: checking a bearer token never queries the database, so a flood of
/// made-up tokens costs a hash and a dictionary lookup, and the connection pool stays free for the follower.
///
/// - `run()` reloads the whole table (one query) every ``refreshInterval``: a revoked token stops working within
///   that, and an open event stream re-checks its token through this cache (within 5 s in all).
/// - A well-formed token the table does not hold reloads it at once, at most once per ``missReloadInterval`` for all
///   callers together (and one load at a time), so a token created a moment ago works on its first request.
/// - When the database cannot be read, the last table read stays in force (operators already working keep
///   working); before any table was read, tokens cannot be checked (503).
public final class TokenCache: Service, Sendable {
    let directory: any TokenDirectory
    let refreshInterval: Duration
    let missReloadInterval: Duration
    let logger: Logger

    private struct State {
        var tokens: [String: APIToken]?
        var loadedAt: ContinuousClock.Instant?
        var lastMissLoad: ContinuousClock.Instant?
        /// The callers waiting for the load in progress; nil when none is in progress.
        var waiters: [CheckedContinuation<[String: APIToken], any Error>]?
        /// How the last load ended, for a caller that came to join it just as it finished.
        var lastLoad: Result<[String: APIToken], any Error>?
        /// Asks the running `run()` to reload now (a known token seen while the table is stale); at most one request
        /// is kept. Nil while `run()` is not running.
        var wake: AsyncStream<Void>.Continuation?
    }

    private let state = Mutex(State())

    public init(
        directory: any TokenDirectory, refreshInterval: Duration = .seconds(1),
        missReloadInterval: Duration = .seconds(1),
        logger: Logger = Logger(label: "cueline.tokens")
    ) {
        self.directory = directory
        self.refreshInterval = refreshInterval
        self.missReloadInterval = missReloadInterval
        self.logger = logger
    }

    /// Reloads the table at once, then every `refreshInterval` and whenever a request finds it stale, until
    /// shutdown. The ticker is a child task of this call: all background work of the cache lives here.
    public func run() async throws {
        let (wakeups, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        state.withLock { $0.wake = wake }
        defer { state.withLock { $0.wake = nil } }
        wake.yield()
        await withDiscardingTaskGroup { group in
            group.addTask { [wake, refreshInterval] in
                while (try? await Task.sleep(for: refreshInterval)) != nil { wake.yield() }
            }
            await cancelWhenGracefulShutdown {
                for await _ in wakeups {
                    do {
                        _ = try await self.load()
                    } catch {
                        self.logger.warning(
                            "the token table could not be reloaded; the last one read stays in force",
                            metadata: ["error": "\(error)"])
                    }
                }
            }
            group.cancelAll()
        }
    }

    /// The active token with this secret, or nil (also for a malformed one).
    ///
    /// - Throws: when no table has been read yet and the database cannot be read.
    func token(secret: some StringProtocol) async throws -> APIToken? {
        guard TokenSecret.isWellFormed(secret) else { return nil }
        let digest = TokenSecret.digest(String(secret))
        let now = ContinuousClock.now
        let (snapshot, reload, stale) = state.withLock { state -> ([String: APIToken]?, Bool, Bool) in
            let known = state.tokens?[digest] != nil
            let stale = state.loadedAt.map { now - $0 > refreshInterval * 2 } ?? true
            var reload = false
            if !known || stale,
                state.waiters != nil || state.lastMissLoad.map({ now - $0 >= missReloadInterval }) ?? true
            {
                reload = true
                if state.waiters == nil { state.lastMissLoad = now }
            }
            return (state.tokens, reload, stale)
        }
        if let snapshot, let token = snapshot[digest] {
            // Known: answer now. If `run()` has not reloaded for a while (not running, or the database is down),
            // have `run()` reload now so that revocations still take effect.
            if reload && stale { state.withLock { $0.wake }?.yield() }
            return token
        }
        guard reload else { return nil }
        do {
            return try await load()[digest]
        } catch {
            if let snapshot { return snapshot[digest] }
            throw error
        }
    }

    /// Reads the whole table, or joins the read in progress: the first caller reads it in its own task and hands
    /// the outcome to those who came while it read (no task of its own, so nothing outlives its callers).
    private func load() async throws -> [String: APIToken] {
        let leads = state.withLock { state in
            guard state.waiters == nil else { return false }
            state.waiters = []
            return true
        }
        guard leads else {
            return try await withCheckedThrowingContinuation { continuation in
                let finished = state.withLock { state -> Result<[String: APIToken], any Error>? in
                    guard state.waiters != nil else { return state.lastLoad }
                    state.waiters?.append(continuation)
                    return nil
                }
                if let finished { continuation.resume(with: finished) }
            }
        }
        let outcome: Result<[String: APIToken], any Error>
        do {
            outcome = .success(try await directory.activeTokens())
        } catch {
            outcome = .failure(error)
        }
        let waiters = state.withLock { state in
            if case .success(let tokens) = outcome {
                state.tokens = tokens
                state.loadedAt = .now
            }
            state.lastLoad = outcome
            defer { state.waiters = nil }
            return state.waiters ?? []
        }
        for waiter in waiters { waiter.resume(with: outcome) }
        return try outcome.get()
    }
}

/// What a request wants to do.
enum Access: Sendable {
    case read(channel: ChannelID)
    /// Any valid token: listing channels (filtered by the token), and the first check of a command.
    case anyToken
    case command(String, channel: ChannelID)
    /// Managing notification subscriptions: an operator token for every channel (a subscription may name any
    /// channel and sends to any URL).
    case admin
}

/// The caller: a token, or nobody in open mode. Set on the request context by ``TokenAuthenticator``; a class, so
/// that the context every request carries (the public playlists' too) grows by one reference, not by a token.
final class Caller: Sendable {
    let token: APIToken?
    /// The secret the token was presented with, and the cache that knows it: a response that outlives its request
    /// (an event stream) asks again whether the token still allows it.
    let secret: String?
    let cache: TokenCache?

    init(token: APIToken?, secret: String? = nil, cache: TokenCache? = nil) {
        self.token = token
        self.secret = secret
        self.cache = cache
    }

    /// The actor recorded on events: the token's name; in open mode what the body says, else `http`.
    func actor(claimed: String?) -> String {
        token?.name ?? claimed ?? "http"
    }

    func mayRead(_ channel: ChannelID) -> Bool {
        token?.mayRead(channel: channel) ?? true
    }

    /// Why this caller may not do `access`, or nil when it may (always nil in open mode).
    func refusal(of access: Access) -> String? {
        guard let token else { return nil }
        switch access {
        case .anyToken:
            return nil
        case .read(let channel):
            return token.mayRead(channel: channel) ? nil : "token \(token.name) is not allowed on channel \(channel)"
        case .command(let type, let channel):
            return token.refusal(command: type, channel: channel)
        case .admin:
            return token.role == .operator && token.channels.isEmpty
                ? nil
                : "token \(token.name) may not manage subscriptions: that takes an operator token for every channel"
        }
    }

    /// For a response that outlives its request (an event stream): whether the caller's token still allows `access`,
    /// asked again through the token cache; nil in open mode. A token that cannot be checked at the moment (no table
    /// read yet) counts as still allowed: the next check decides.
    func recheck(_ access: Access) -> (@Sendable () async -> Bool)? {
        guard let cache, let secret else { return nil }
        return {
            let token: APIToken?
            do {
                token = try await cache.token(secret: secret)
            } catch {
                return true
            }
            guard let token else { return false }
            return Caller(token: token).refusal(of: access) == nil
        }
    }
}

/// The one place a bearer token is read: puts the caller on the context, or refuses the request before its handler
/// runs — 401 without a valid token (an unknown, revoked or malformed one), 503 when tokens cannot be checked. What
/// the caller may do is the handler's one call, ``APIRequestContext/caller(for:)``.
struct TokenAuthenticator: RouterMiddleware {
    typealias Context = APIRequestContext
    let policy: AccessPolicy

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        var context = context
        context.identity = try await caller(of: request)
        return try await next(request, context)
    }

    func caller(of request: Request) async throws(APIError) -> Caller {
        guard case .tokens(let cache) = policy else { return Caller(token: nil) }
        guard let header = request.headers[.authorization] else {
            throw .unauthenticated("send Authorization: Bearer <token>; create one with cueline token create")
        }
        guard header.lowercased().hasPrefix("bearer ") else {
            throw .unauthenticated("the Authorization header must be Bearer <token>")
        }
        let secret = header.dropFirst(7).trimmingCharacters(in: .whitespaces)
        // Refused before it is hashed: a token is `cue_` and 64 lowercase hex digits.
        guard TokenSecret.isWellFormed(secret) else {
            throw .unauthenticated(
                "the token is malformed: a token is cue_ followed by 64 lowercase hex digits, as cueline token create prints it"
            )
        }
        let token: APIToken?
        do {
            token = try await cache.token(secret: secret)
        } catch {
            throw APIError(.unavailable, "tokens cannot be checked: the database is unreachable; retry shortly")
        }
        guard let token else { throw .unauthenticated("the token is unknown or revoked") }
        return Caller(token: token, secret: secret, cache: cache)
    }
}
