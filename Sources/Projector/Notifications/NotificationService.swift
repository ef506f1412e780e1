import EventStore
import Foundation
import HLS
import Logging
import Schedule
import ServiceLifecycle

/// Signed notifications out (docs/notifications.md): every instance keeps the facts (``NotificationFeed``) and the
/// subscriptions' lag on `/metrics`; the one that holds the lease in the database delivers, one worker per
/// subscription, so a slow or failing subscriber delays no other, and never the playlists.
///
/// The lease is renewed every `renewInterval` and lasts `leaseTTL`: when its holder dies, another instance takes it
/// over within the TTL and starts from the cursors stored. A worker moves a cursor only in the statement that checks
/// the lease with its fencing token, so a holder that lost it stops at its next delivery.
public struct NotificationService: Service {
    let feed: NotificationFeed
    let store: PostgresSubscriptionStore
    let holder: String
    let clock: @Sendable () -> Timestamp
    let logger: Logger
    let leaseTTL: Duration
    let renewInterval: Duration
    let pollInterval: Duration
    let post: NotificationPost
    let metrics = NotificationMetrics()

    public init(
        feed: NotificationFeed, store: PostgresSubscriptionStore, clock: @escaping @Sendable () -> Timestamp,
        leaseTTL: Duration = .seconds(5), renewInterval: Duration = .seconds(1),
        pollInterval: Duration = .milliseconds(250), post: NotificationPost = .shared, logger: Logger
    ) {
        self.feed = feed
        self.store = store
        self.clock = clock
        self.leaseTTL = leaseTTL
        self.renewInterval = renewInterval
        self.pollInterval = pollInterval
        self.post = post
        self.logger = logger
        var generator = SystemRandomNumberGenerator()
        holder =
            "\(ProcessInfo.processInfo.hostName)/\(ProcessInfo.processInfo.processIdentifier)/"
            + hexDigits((0..<4).map { _ in UInt8.random(in: 0...255, using: &generator) })
    }

    struct Round {
        /// Whether the subscriptions and cursors have been read once: until then nothing is dropped from the feed.
        var loaded = false
        var subscriptions: [Subscription] = []
        var cursors: [String: [ChannelID: FactKey]] = [:]
        var token: Int64?
        var renewedAt: ContinuousClock.Instant?
        var lastRenewal: ContinuousClock.Instant?
        var reported: Set<String> = []
        /// The lease or the subscriptions could not be read: said once until they can again.
        var renewalFailing = false
        var readFailing = false
    }

    public func run() async throws {
        let registry = WorkerRegistry()
        metrics.leaseHeld.record(0)
        await withDiscardingTaskGroup { group in
            var round = Round()
            while !Task.isCancelled && !Task.isShuttingDownGracefully {
                // The lease and the subscriptions first (the first time too): the feed keeps what they still need.
                let now = ContinuousClock.now
                let renewing = round.lastRenewal.map({ now - $0 >= renewInterval }) ?? true
                if renewing {
                    round.lastRenewal = now
                    await renew(&round, registry: registry)
                }
                do {
                    let current = round
                    try await feed.poll(floor: { Self.floor(of: $0, current) })
                } catch {
                    metrics.pollErrors.increment()
                    logger.debug("notification feed poll failed", metadata: ["error": "\(error)"])
                }
                if renewing {
                    if let token = round.token {
                        for subscription in round.subscriptions where registry.running(subscription.name) == nil {
                            startWorker(
                                subscription, token: token, cursors: round.cursors[subscription.name] ?? [:],
                                registry: registry, group: &group)
                        }
                    }
                    report(&round)
                }
                try? await Task.sleep(for: pollInterval)
            }
            registry.retireAll()
            if let token = round.token {
                try? await store.releaseLease(holder: holder, token: token)
                metrics.leaseHeld.record(0)
            }
            group.cancelAll()
        }
    }

    /// Takes or renews the lease, then reads the subscriptions and the cursors (after the lease, so that the previous
    /// holder's last cursor is seen), and stops the workers that should not run.
    func renew(_ round: inout Round, registry: WorkerRegistry) async {
        let previous = round.token
        do {
            round.token = try await store.acquireLease(
                holder: holder, ttlMilliseconds: Int64(leaseTTL / .milliseconds(1)))
            if round.token != nil { round.renewedAt = .now }
            round.renewalFailing = false
        } catch {
            // Not renewed: held still until its TTL runs out, counted from the last renewal, less a second's margin.
            if let renewed = round.renewedAt, ContinuousClock.now - renewed < leaseTTL - .seconds(1) {
                if !round.renewalFailing {
                    logger.warning("the notification lease could not be renewed", metadata: ["error": "\(error)"])
                }
                round.renewalFailing = true
            } else {
                round.token = nil
            }
        }
        if round.token != previous {
            registry.retireAll()
            metrics.leaseHeld.record(round.token == nil ? 0 : 1)
            if let token = round.token {
                metrics.takeovers.increment()
                logger.notice("delivering notifications", metadata: ["holder": "\(holder)", "token": "\(token)"])
            } else if previous != nil {
                logger.notice("notification lease lost; delivery stopped", metadata: ["holder": "\(holder)"])
            }
        }
        do {
            round.subscriptions = try await store.list()
            round.cursors = try await store.cursors()
            round.loaded = true
            if round.readFailing { logger.notice("subscriptions read again") }
            round.readFailing = false
        } catch {
            // Every second while the database is unreachable: said once.
            if !round.readFailing {
                logger.warning("subscriptions could not be read", metadata: ["error": "\(error)"])
            }
            round.readFailing = true
            return
        }
        // A subscription deleted or changed (deleted and created again): its worker stops.
        let current = Dictionary(round.subscriptions.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        let unchanged = Set(current.keys.filter { registry.running($0) == current[$0] })
        registry.retireAll(keeping: { unchanged.contains($0) })
    }

    func startWorker(
        _ subscription: Subscription, token: Int64, cursors: [ChannelID: FactKey], registry: WorkerRegistry,
        group: inout DiscardingTaskGroup
    ) {
        let worker = NotificationWorker(
            subscription: subscription, generation: registry.start(subscription), lease: (holder, token), feed: feed,
            store: store, registry: registry, post: post, clock: clock, metrics: metrics, logger: logger)
        group.addTask { await worker.run(from: cursors) }
    }

    /// Each subscription's lag on `/metrics` (from the stored cursors, so every instance shows the same), and the
    /// facts every subscription has had dropped from the feed.
    func report(_ round: inout Round) {
        let knownUntil = feed.knownUntil
        var names: Set<String> = []
        for subscription in round.subscriptions {
            names.insert(subscription.name)
            var (count, oldest): (Int, FactKey?) = (0, nil)
            for channel in feed.channels
            where subscription.channels.isEmpty || subscription.channels.contains(channel) {
                let cursor = round.cursors[subscription.name]?[channel] ?? subscription.initialCursor
                let backlog = feed.backlog(
                    on: channel, after: cursor, where: { subscription.wants($0.kind, on: $0.channel) })
                count += backlog.count
                if let first = backlog.oldest { oldest = min(oldest ?? first, first) }
            }
            metrics.lag(subscription.name).record(count)
            let behind = oldest.map { max(0, knownUntil.milliseconds - $0.atMilliseconds) } ?? 0
            metrics.lagSeconds(subscription.name).record(Double(behind) / 1000)
        }
        for gone in round.reported.subtracting(names) {
            metrics.lag(gone).record(0)
            metrics.lagSeconds(gone).record(0)
        }
        round.reported = names
        let current = round
        feed.trim { Self.floor(of: $0, current) }
    }

    /// What every subscription wanting `channel` has had: the lowest of their cursors (nil when none wants it; the
    /// lowest key of all until the subscriptions have been read once).
    static func floor(of channel: ChannelID, _ round: Round) -> FactKey? {
        guard round.loaded else { return FactKey(atMilliseconds: .min, position: .min, rank: .min) }
        var floor: FactKey?
        for subscription in round.subscriptions
        where subscription.channels.isEmpty || subscription.channels.contains(channel) {
            let cursor = round.cursors[subscription.name]?[channel] ?? subscription.initialCursor
            floor = min(floor ?? cursor, cursor)
        }
        return floor
    }
}
