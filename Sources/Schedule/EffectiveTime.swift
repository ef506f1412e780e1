import HLS

/// When commands take effect, so that playlists are a pure function of the log and the tick.
///
/// A command arriving at wall time w is decided as of `w + effectDelay`, and that instant is recorded on its events
/// (`decided_at`). A playlist rendered at tick T reflects exactly the events with `decided_at <= T`. The append
/// commits and reaches every follower within a few milliseconds, well inside the delay, so every instance, and any
/// later replay of the log, renders the same bytes at the same tick. An event that reaches a follower after its
/// `decided_at` (a commit slower than the delay) is applied at once and counted as late: replay may differ from
/// what that instance served during the gap.
public enum EffectiveTime {
    public static let effectDelayMilliseconds: Int64 = 50

    /// The decision instant of a command that arrives at `wallClock`.
    public static func decisionTime(arrival wallClock: Timestamp) -> Timestamp {
        wallClock.adding(milliseconds: effectDelayMilliseconds)
    }
}

/// Folds the events in effect at `tick`: those decided at or before it. Events must be in version order.
///
/// - Parameter retention: `.window` for rendering (replay): the same playlists from less state; `.all` for reports.
public func fold(
    _ channel: ChannelID, _ events: [RecordedScheduleEvent], asOf tick: Timestamp,
    retention: ChannelState.Retention = .all
) -> ChannelState {
    var state = ChannelState(channel: channel, retention: retention)
    for event in events where event.attribution.at <= tick {
        state.apply(event)
    }
    return state
}
