import EventStore
import Foundation
import HLS
import Logging
import Metrics
import NIOCore
import Schedule
import ServiceLifecycle
import Synchronization

extension ChannelFollower {
    /// One channel as the follower holds it: its folded schedule, the events not yet in effect, and its windows.
    struct Entry {
        /// Every event folded: the schedule as the log has it now (commands decide against it), in the hot form
        /// (`ChannelState.Retention.window`: retired breaks have left it, so memory does not grow with the log).
        var state: ChannelState
        /// The events in effect at every tick from now on: the longest prefix (in version order) of the log whose
        /// events were all decided at or before `lastTick`, folded.
        var settled: ChannelState
        /// The events after that prefix, in version order: decided after the last tick served (usually none, or
        /// a command's events during its effect delay). Nothing older is kept: memory does not grow with the log.
        var pending: [RecordedScheduleEvent] = []
        var rendered: Rendered?
        /// The window of the next boundary, rendered ahead for exactly that instant (`tick` = the boundary) and not
        /// served before it: `prepare` publishes it once a tick at or past the boundary is served, if the schedule in
        /// effect then is the one it was rendered from (else a late command changed it and it is rendered again).
        var ahead: Rendered?
        var lastTick = Timestamp(milliseconds: .min)
        /// Relay channels: the latest upstream playlist of each rendition, and a counter of their changes.
        var upstreams: [Identifier: MediaPlaylist] = [:]
        var upstreamGeneration: Int64 = 0
        /// An event at or below `state.version` could not be read by this build (skipped): the state is then not the
        /// fold a build that reads it would reach, so it is never written as a replay checkpoint.
        var skippedUnreadable = false
    }

}

extension ChannelFollower.Entry {
    /// What a request needs: the cached playlists, or what to render them from.
    /// A window to render (`prepare` answers from the kept one in place otherwise).
    enum Step: Error {
        case render(
            config: ChannelConfig, state: ChannelState, tick: Timestamp, completed: Int64,
            effect: ChannelFollower.Rendered.Effect,
            upstreams: [Identifier: MediaPlaylist])
    }

    /// Folds an event in. Returns the tick already served at or after the event's effect without it, if any: only
    /// possible while the log was unreachable (then ticks are served past the watermark, see `servingTime`).
    mutating func fold(_ recorded: RecordedScheduleEvent) -> Timestamp? {
        let diverged = lastTick >= recorded.attribution.at ? lastTick : nil
        state.apply(recorded)
        pending.append(recorded)
        settle(upTo: lastTick)
        rendered = nil
        return diverged
    }

    /// Picks the tick (never before the last one served), settles what is in effect for good, and answers `body` from
    /// the kept window, in place, when the window and the schedule in effect are the same; else says what to render.
    /// Nil: the channel has no configuration in effect.
    ///
    /// - Parameter retired: the window the swap replaced, if any, for the caller to let go of outside the lock.
    mutating func prepare<T>(
        servingTime: Timestamp, retired: inout ChannelFollower.Rendered?,
        _ body: (borrowing ChannelFollower.Rendered) -> T
    ) -> Result<T, Step>? {
        let tick = max(servingTime, lastTick)
        lastTick = tick
        settle(upTo: tick)
        let effect = effect(at: tick)
        // The settled state is in effect unless a pending event is (then it is folded, only to be rendered from).
        let completed: Int64
        if effect.pending == 0 {
            guard let config = settled.config else { return nil }
            completed = config.source == .clock ? Timeline(config).completedTicks(at: tick) : upstreamGeneration
        } else {
            guard let config = inEffect(at: tick).config else { return nil }
            completed = config.source == .clock ? Timeline(config).completedTicks(at: tick) : upstreamGeneration
        }
        // Compared in place: binding the kept window to a name would copy it.
        if rendered?.completedTicks == completed, rendered?.effect == effect {
            return .success(body(rendered!))
        }
        if ahead?.completedTicks == completed, ahead?.effect == effect, let aheadTick = ahead?.tick, aheadTick <= tick {
            // Rendered ahead for this window from this schedule: published now (the swap), not rendered again.
            retired = rendered.take()
            rendered = ahead.take()
            return .success(body(rendered!))
        }
        let inEffect = inEffect(at: tick)
        guard let config = inEffect.config else { return nil }
        return .failure(
            .render(
                config: config, state: inEffect, tick: tick, completed: completed, effect: effect, upstreams: upstreams)
        )
    }

    /// The ticker at a clock channel's boundary: moves the channel's tick to `servingTime` (as any request would) and
    /// publishes the window of that tick if it is at hand (kept, or rendered ahead: the swap), in place. Nil for a relay
    /// or a channel without configuration; `ready` false when the window is still to be rendered.
    mutating func publish(servingTime: Timestamp, retired: inout ChannelFollower.Rendered?) -> (
        config: ChannelConfig, ready: Bool
    )? {
        guard let config = state.config, config.source == .clock else { return nil }
        switch prepare(servingTime: servingTime, retired: &retired, { _ in () }) {
        case .success?: return (config, true)
        case .failure?, nil: return (config, false)
        }
    }

    /// Moves the leading pending events decided at or before `tick` into the settled state. Ticks served to a
    /// channel never go backwards, so they are in effect for good.
    mutating func settle(upTo tick: Timestamp) {
        var settledCount = 0
        for event in pending {
            guard event.attribution.at <= tick else { break }
            settled.apply(event)
            settledCount += 1
        }
        guard settledCount > 0 else { return }
        pending.removeFirst(settledCount)
        // A log read before the first tick (a restart on a long log) leaves the array at its peak capacity, 100,000
        // events for a year's channel, and their memory in the allocator: both are let go of.
        if pending.capacity > 1024, pending.capacity > 4 * pending.count {
            var kept: [RecordedScheduleEvent] = []
            kept.reserveCapacity(pending.count)
            kept.append(contentsOf: pending)
            pending = kept
            if settledCount >= 10_000 { MemoryTrim.request() }
        }
    }

    /// Which events `inEffect(at: tick)` folds (see ``ChannelFollower/Rendered/Effect``): what a kept window is
    /// compared on, not the version alone.
    func effect(at tick: Timestamp) -> ChannelFollower.Rendered.Effect {
        .init(settled: settled.version, pending: pending.count { $0.attribution.at <= tick })
    }

    /// What `fold(asOf: tick)` of the whole log gives: the settled prefix, then the pending events decided at or
    /// before `tick` in version order.
    func inEffect(at tick: Timestamp) -> ChannelState {
        guard pending.contains(where: { $0.attribution.at <= tick }) else { return settled }
        var state = settled
        for event in pending where event.attribution.at <= tick { state.apply(event) }
        return state
    }
}
