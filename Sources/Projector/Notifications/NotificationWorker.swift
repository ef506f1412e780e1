import EventStore
import HLS
import Logging
import NIOCore
import Schedule
import Synchronization

/// Which workers are current: one generation per subscription. A worker runs while its generation is the current one
/// for its subscription, and stops itself at the next check otherwise (the lease lost or taken anew, the subscription
/// changed or deleted, shutdown).
final class WorkerRegistry: Sendable {
    struct Entry: Sendable {
        var generation: Int
        var fingerprint: Subscription
    }

    private let state = Mutex<(next: Int, entries: [String: Entry])>((0, [:]))

    func isCurrent(_ name: String, _ generation: Int) -> Bool {
        state.withLock { $0.entries[name]?.generation == generation }
    }

    /// The running worker's subscription as it was started, nil when none runs.
    func running(_ name: String) -> Subscription? {
        state.withLock { $0.entries[name]?.fingerprint }
    }

    /// Makes a new generation current for `subscription` and returns it.
    func start(_ subscription: Subscription) -> Int {
        state.withLock { state in
            state.next += 1
            state.entries[subscription.name] = Entry(generation: state.next, fingerprint: subscription)
            return state.next
        }
    }

    /// Ends the worker of `generation` (if it is still the current one for `name`).
    func retire(_ name: String, _ generation: Int) {
        state.withLock { state in
            if state.entries[name]?.generation == generation { state.entries[name] = nil }
        }
    }

    /// Ends every worker (or those whose subscription `keep` does not accept).
    func retireAll(keeping keep: (String) -> Bool = { _ in false }) {
        state.withLock { state in state.entries = state.entries.filter { keep($0.key) } }
    }
}

/// How long to wait before the next attempt after `failures` failed ones: 0.5 s doubled at each failure, at most 30 s.
enum NotificationBackoff {
    static func delay(afterFailures failures: Int) -> Duration {
        .milliseconds(min(30_000, 500 << min(failures - 1, 10)))
    }
}

/// Delivers one subscription's facts, channel by channel in key order, one at a time: each until the subscriber
/// answers 2xx (retried with ``NotificationBackoff``), then the cursor moves in the statement that checks the lease.
struct NotificationWorker: Sendable {
    let subscription: Subscription
    let generation: Int
    let lease: (holder: String, token: Int64)
    let feed: NotificationFeed
    let store: PostgresSubscriptionStore
    let registry: WorkerRegistry
    let post: NotificationPost
    let clock: @Sendable () -> Timestamp
    let metrics: NotificationMetrics
    let logger: Logger

    var isCurrent: Bool { !Task.isCancelled && registry.isCurrent(subscription.name, generation) }

    func run(from stored: [ChannelID: FactKey]) async {
        var cursors = stored
        let name = subscription.name
        var searched: Int?
        while isCurrent {
            // Nothing was left when the feed was at this generation: look again once it has moved.
            let generation = feed.generation
            guard generation != searched, let fact = next(cursors) else {
                searched = generation
                try? await Task.sleep(for: .milliseconds(100))
                continue
            }
            guard await deliver(fact) else { return }
            let moved: Bool
            do {
                moved = try await store.advance(
                    subscription: name, channel: fact.channel, to: fact.key, holder: lease.holder, token: lease.token)
            } catch {
                logger.warning(
                    "a delivered notification's cursor could not be stored; it will be sent again",
                    metadata: ["subscription": "\(name)", "delivery": "\(fact.deliveryID)", "error": "\(error)"])
                moved = false
            }
            guard moved else {
                // Lease lost, subscription deleted, or another holder went further: start again from what is stored.
                registry.retire(name, generation)
                return
            }
            cursors[fact.channel] = fact.key
            metrics.delivered(name).increment()
        }
    }

    /// The wanted fact with the lowest key over the subscription's channels, after their cursors.
    func next(_ cursors: [ChannelID: FactKey]) -> NotificationFact? {
        var best: NotificationFact?
        for channel in feed.channels where subscription.channels.isEmpty || subscription.channels.contains(channel) {
            let candidate = feed.next(
                on: channel, after: cursors[channel] ?? subscription.initialCursor,
                where: { subscription.wants($0.kind, on: $0.channel) })
            if let candidate, best.map({ candidate.key < $0.key }) ?? true { best = candidate }
        }
        return best
    }

    /// Sends `fact` until the subscriber takes it; false when the worker is no longer current.
    func deliver(_ fact: NotificationFact) async -> Bool {
        let body = fact.body(subscription: subscription.name)
        var failures = 0
        while isCurrent {
            do {
                try await post.send(
                    to: subscription.url, body: body, secret: subscription.secret, deliveryID: fact.deliveryID,
                    timestamp: clock().milliseconds / 1000, deadline: .seconds(10))
                return true
            } catch is CancellationError {
                return false
            } catch {
                failures += 1
                metrics.failed(subscription.name).increment()
                let delay = NotificationBackoff.delay(afterFailures: failures)
                logger.warning(
                    "notification not delivered; retrying",
                    metadata: [
                        "subscription": "\(subscription.name)", "channel": "\(fact.channel)",
                        "delivery": "\(fact.deliveryID)", "error": "\(error)", "attempt": "\(failures)",
                        "retry_in": "\(delay)",
                    ])
                // In slices, so that a lost lease or a deleted subscription stops the wait.
                let until = ContinuousClock.now + delay
                while isCurrent, ContinuousClock.now < until {
                    try? await Task.sleep(for: min(.milliseconds(250), until - ContinuousClock.now))
                }
            }
        }
        return false
    }
}
