import EventStore
import Hummingbird
import Projector

/// The HTTP interface, wired: playlists and asset lists, health and metrics (public), commands, SCTE-35 cues, the
/// schedule, log and audit reads (a token, unless the policy is open), feed hooks (signed). The routes themselves
/// live in the controllers (`Controllers/`); this only builds the router, its middlewares and the groups.
public enum Routes {
    /// Builds the router.
    ///
    /// - Parameters:
    ///   - mediaDirectory: when set, files under it are served at `/media/…` (demo segments and ads).
    ///   - metrics: renders the Prometheus exposition for `/metrics`.
    ///   - access: who may send commands and read the schedule, log and audit endpoints.
    ///   - eventStreams: the live event streams (`GET …/events` as Server-Sent Events), a service the caller runs.
    ///   - auditReads: how many replays, as-run reports, JSON event pages and refusal pages may run at once (see `AuditReads`).
    ///   - subscriptions: notification subscriptions, managed by admins at `/subscriptions` (nil: no such routes).
    ///   - adDecisions: asks breaks' ad servers for viewers' asset lists (nil: one over the handler's asset playlists).
    public static func router(
        follower: ChannelFollower, handler: CommandHandler, mediaDirectory: String?,
        metrics: (@Sendable () -> String)? = nil,
        hooks: HookSet = HookSet(), access: AccessPolicy, eventStreams: EventStreams,
        auditReads: AuditReads = AuditReads(), subscriptions: (any SubscriptionDirectory)? = nil,
        adDecisions: AdDecisions? = nil
    ) -> Router<APIRequestContext> {
        // HEAD answers like GET without the body (CDNs and players probe with it).
        let router = Router(context: APIRequestContext.self, options: .autoGenerateHeadEndpoints)
        router.middlewares.add(MetricsMiddleware())
        router.middlewares.add(CORSMiddleware(allowOrigin: .all))
        let unrouted = UnroutedRequests<APIRequestContext>.Table()
        router.middlewares.add(UnroutedRequests(table: unrouted))
        if let mediaDirectory {
            router.middlewares.add(MediaPathGuard(directory: mediaDirectory))
            router.middlewares.add(FileMiddleware(mediaDirectory, urlBasePath: "/media", searchForIndexHtml: false))
        }
        let executor = CommandExecutor(handler: handler)
        let operations = OperationsController(follower: follower, metrics: metrics)

        // Public: no authenticator runs, so a playlist costs its lookup and nothing more.
        let open = router.group()
        operations.addRoutes(to: open)
        let assets = handler.assets ?? AssetPlaylists()
        PlaylistController(
            follower: follower, assets: assets, adDecisions: adDecisions ?? AdDecisions(assets: assets)
        ).addRoutes(to: open)
        HookController(hooks: hooks, executor: executor, follower: follower).addRoutes(to: open)

        // A caller on the context (401/503 before any handler runs without one); each handler checks its scope.
        let authenticated = router.group().add(middleware: TokenAuthenticator(policy: access))
        operations.addAuthenticatedRoutes(to: authenticated)
        CommandController(executor: executor).addRoutes(to: authenticated)
        SCTE35Controller(executor: executor, follower: follower).addRoutes(to: authenticated)
        AuditController(follower: follower, store: handler.store, eventStreams: eventStreams, auditReads: auditReads)
            .addRoutes(to: authenticated)
        RefusalController(follower: follower, refusals: handler.refusals, auditReads: auditReads).addRoutes(
            to: authenticated)  // issue 15
        if let subscriptions {
            SubscriptionController(directory: subscriptions).addRoutes(to: authenticated)  // issue 33
        }
        ConsoleController(access: access).addRoutes(to: router)  // the operator console at /console (issue 15)
        unrouted.set(router.routes)
        return router
    }
}
