import HLS
import Schedule
import Synchronization

/// What `cueline subscription …` and the admin API manage: subscriptions by name. The deliverer reads the same rows
/// through ``PostgresSubscriptionStore``, which also keeps the cursors and the lease.
public protocol SubscriptionDirectory: Sendable {
    /// Creates a subscription with a new secret and returns it (the only time the secret is shown).
    ///
    /// - Throws: ``SubscriptionError`` naming the field, or the name taken.
    func create(name: String, url: String, channels: [ChannelID], events: [NotificationKind], createdBy: String)
        async throws -> Subscription

    /// Every subscription by name, secrets included.
    func list() async throws -> [Subscription]

    /// Deletes a subscription (and its cursors).
    ///
    /// - Throws: ``SubscriptionError/unknown(_:)`` when none has this name.
    func delete(name: String) async throws
}

extension PostgresSubscriptionStore: SubscriptionDirectory {}

/// Subscriptions in memory, for tests and in-process servers (nothing delivers them).
public final class InMemorySubscriptionStore: SubscriptionDirectory {
    private let subscriptions = Mutex<[String: Subscription]>([:])
    let clock: @Sendable () -> Timestamp

    public init(clock: @escaping @Sendable () -> Timestamp = { Timestamp(milliseconds: 0) }) {
        self.clock = clock
    }

    public func create(name: String, url: String, channels: [ChannelID], events: [NotificationKind], createdBy: String)
        async throws -> Subscription
    {
        try Subscription.validate(name: name, url: url)
        let subscription = Subscription(
            name: name, url: url, channels: channels, events: events, secret: Subscription.generateSecret(),
            createdAt: clock(), createdBy: createdBy)
        try subscriptions.withLock { (all: inout [String: Subscription]) throws(SubscriptionError) in
            guard all[name] == nil else { throw .nameTaken(name) }
            all[name] = subscription
        }
        return subscription
    }

    public func list() async throws -> [Subscription] {
        subscriptions.withLock { $0.values.sorted { $0.name < $1.name } }
    }

    public func delete(name: String) async throws {
        let removed = subscriptions.withLock { $0.removeValue(forKey: name) }
        guard removed != nil else { throw SubscriptionError.unknown(name) }
    }
}
