import EventStore
import Foundation
import HLS
import Hummingbird
import Logging
import Metrics
import NIOCore
import Postgres
import Projector
import ServiceLifecycle

/// What `cueline serve` is built from: where the log is, where to listen, and what it lets clients hold.
public struct ServerSettings: Sendable {
    /// The log's database (`postgresql://…`).
    public var databaseURL: String
    public var host = "127.0.0.1"
    public var port = 8080
    public var limits = ServerLimits()
    /// Files under it are served at `/media/…` (demo segments and ads).
    public var mediaDirectory: String?
    /// Feed hooks: signed payloads turned into commands at `POST /hooks/{name}`.
    public var hooks = HookSet()
    /// Commands and reads without a token (a demo or a closed network): the access policy is open.
    public var unauthenticatedCommands = false
    /// The wall clock, read by the follower and the command handler only.
    public var clock: @Sendable () -> Timestamp

    public init(databaseURL: String, clock: @escaping @Sendable () -> Timestamp) {
        self.databaseURL = databaseURL
        self.clock = clock
    }
}

/// The server, assembled: the database pool and its NOTIFY listener, the follower (which reads the log and renders
/// the playlists), the command handler, the live event streams, the connection gate and the HTTP routes, each service
/// in the order it starts (and, reversed, stops: the pool last, once nothing borrows from it). Checks the schema and
/// reads the whole log once before it returns, so the server answers from the first request.
///
/// - Parameters:
///   - metrics: the Prometheus exposition for `/metrics` (nil: not served).
///   - eventLoopGroupProvider: the HTTP server's event loops (`cueline serve` may pin one to each CPU).
///   - onServerRunning: called once the server listens, with its channel (its bound address).
public func buildApplication(
    _ settings: ServerSettings, metrics: (@Sendable () -> String)? = nil,
    eventLoopGroupProvider: EventLoopGroupProvider = .singleton, logger: Logger,
    onServerRunning: @escaping @Sendable (any Channel) async -> Void = { _ in }
) async throws -> some ApplicationProtocol {
    let (url, limits) = (settings.databaseURL, settings.limits)
    // Two kept open: the follower's watermark reads (every 20 ms) hold one for a round trip, and a command arriving
    // meanwhile finds the other rather than opening one within its 30 ms to reach the database. The pool lends
    // connections before its run() starts, for the checks and the first read below.
    let pool = PostgresPool(url: url, maximumConnections: 8, keepIdle: 2, logger: logger)
    let listener = PostgresListener(url: url, channel: PostgresEventStore.notifyChannel, logger: logger)
    let store = PostgresEventStore(pool: pool, logger: logger)
    try await store.checkSchema()
    // Sessions of its own (LISTEN, prepared statements): refused behind a pooler in transaction mode.
    try await SessionCheck.notificationsArrive(url: url)
    // Hints of this instance's own appends wake no catch-up when their events are folded already (`hasFolded`).
    let follower = ChannelFollower(
        store: store, samples: PostgresRenderSampleStore(pool: pool),
        hints: { folded in listener.wakeups(skipping: folded) }, clock: settings.clock, logger: logger)
    await follower.primeCheckpoints()
    try await follower.catchUp()
    let refusals = PostgresRefusalStore(pool: pool)
    let handler = CommandHandler(
        store: store, refusals: refusals, clock: settings.clock, logger: logger,
        knownState: { follower.followedState(of: $0) }, assets: AssetPlaylists(),
        applied: { await follower.applied($0) })
    let eventStreams = EventStreams(follower: follower, store: store, limits: limits)
    let gate = ConnectionGate(limits: limits)
    let tokens =
        settings.unauthenticatedCommands
        ? nil : TokenCache(directory: PostgresTokenStore(pool: pool, logger: logger), logger: logger)
    let subscriptions = PostgresSubscriptionStore(pool: pool, logger: logger)
    let router = Routes.router(
        follower: follower, handler: handler, mediaDirectory: settings.mediaDirectory, metrics: metrics,
        hooks: settings.hooks, access: tokens.map { .tokens($0) } ?? .open, eventStreams: eventStreams,
        auditReads: AuditReads(proxies: limits.trustedProxies), subscriptions: subscriptions)
    // Signed notifications out: every instance keeps the facts and the lag; the lease holder delivers.
    let notifications = NotificationService(
        feed: NotificationFeed(
            store: store, refusals: refusals, watermark: { follower.foldedWatermark }, logger: logger),
        store: subscriptions, clock: settings.clock, logger: logger)
    let services: [any Service] =
        [
            pool, PoolGauges(pool: pool), listener, follower, RelayPoller(follower: follower, logger: logger),
            eventStreams, gate, notifications,
        ] + (tokens.map { [$0] } ?? [])
    return Application(
        router: router, server: GuardedHTTP1Channel.server(limits: limits, gate: gate, playlists: follower),
        configuration: .init(
            address: .hostname(settings.host, port: settings.port), serverName: "cueline", backlog: 4096),
        services: services,
        onServerRunning: { channel in
            logger.notice(
                "serving",
                metadata: [
                    "address": "http://\(settings.host):\(channel.localAddress?.port ?? settings.port)",
                    "max_connections": "\(limits.maxConnections)", "header_timeout": "\(limits.headerTimeoutSeconds)",
                    "idle_timeout": "\(limits.idleTimeoutSeconds)", "body_timeout": "\(limits.bodyTimeoutSeconds)",
                    "shares": "\(limits.sharesDescription)",
                ])
            await onServerRunning(channel)
        },
        eventLoopGroupProvider: eventLoopGroupProvider,
        logger: logger)
}

/// The database pool on `/metrics`, every second: `cueline_db_pool_connections{state="idle"|"lent"}` (lent counts
/// those being opened) and `cueline_db_pool_checkouts_waiting` (commands and reads waiting for a connection: the pool
/// is too small, or the database too slow, for the load).
struct PoolGauges: Service {
    let pool: PostgresPool

    func run() async throws {
        let idle = Gauge(label: "cueline_db_pool_connections", dimensions: [("state", "idle")])
        let lent = Gauge(label: "cueline_db_pool_connections", dimensions: [("state", "lent")])
        let waiting = Gauge(label: "cueline_db_pool_checkouts_waiting")
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            let counts = pool.counts
            idle.record(counts.idle)
            lent.record(counts.open - counts.idle)
            waiting.record(counts.waiting)
            do {
                try await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(1)) }
            } catch {
                return
            }
        }
    }
}
