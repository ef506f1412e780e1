import Metrics

/// The notification metrics. Labelled by subscription name: subscriptions are few, and named by an operator.
struct NotificationMetrics: Sendable {
    /// 1 on the instance that holds the delivery lease, else 0.
    let leaseHeld = Gauge(label: "cueline_notification_lease_held")
    /// Times this instance took the lease over (from nobody, an expired holder, or itself after a lapse).
    let takeovers = Counter(label: "cueline_notification_lease_takeovers_total")
    /// Polls of the log that failed.
    let pollErrors = Counter(label: "cueline_notification_poll_errors_total")

    /// Facts due to the subscription (final, wanted, after its cursor) and not yet delivered.
    func lag(_ subscription: String) -> Gauge {
        Gauge(label: "cueline_notification_lag", dimensions: [("subscription", subscription)])
    }

    /// How long the oldest undelivered fact of the subscription has been due, in seconds (0 when none is).
    func lagSeconds(_ subscription: String) -> Gauge {
        Gauge(label: "cueline_notification_lag_seconds", dimensions: [("subscription", subscription)])
    }

    /// Deliveries answered 2xx, and attempts that failed (each retry counts).
    func delivered(_ subscription: String) -> Counter {
        Counter(label: "cueline_notifications_delivered_total", dimensions: [("subscription", subscription)])
    }

    func failed(_ subscription: String) -> Counter {
        Counter(label: "cueline_notification_attempts_failed_total", dimensions: [("subscription", subscription)])
    }
}
