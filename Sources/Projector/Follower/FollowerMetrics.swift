import Metrics

/// The follower's metrics, made once (registered at start, so dashboards see zeros rather than missing series).
struct FollowerMetrics: Sendable {
    /// Catch-ups that failed (the log unreachable or refusing).
    let databaseErrors = Counter(label: "cueline_database_errors_total")
    /// Watermarks that waited past their deadline for a transaction holding the log head.
    let logHeadBusy = Counter(label: "cueline_log_head_busy_total")
    /// How far the folded position is behind the log's head at the last catch-up.
    let positionLag = Gauge(label: "cueline_log_position_lag")
    /// NOTIFY hints for events folded already (a command's own), which woke no catch-up.
    let hintsSkipped = Counter(label: "cueline_hints_skipped_total")
    /// Events this build cannot decode, skipped.
    let unreadableEvents = Counter(label: "cueline_unreadable_events_total")
    /// Events folded after a tick at or past their effect was served without them (the log was unreachable).
    let lateEvents = Counter(label: "cueline_late_events_total")
    /// Times the log left a read unanswered past the silence limit.
    let logSilences = Counter(label: "cueline_log_silences_total")
    /// Windows published at a boundary, and how late after it each became servable.
    let ticksRendered = Counter(label: "cueline_ticks_rendered_total")
    let tickLateness = Timer(label: "cueline_tick_lateness_seconds", preferredDisplayUnit: .seconds)
    /// Render samples dropped because the database did not take them fast enough.
    let renderSamplesDropped = Counter(label: "cueline_render_samples_dropped_total")
}
