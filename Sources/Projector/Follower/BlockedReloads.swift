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
    /// Requests held until a window exists (LL-HLS blocking playlist reload), by channel: released all at once by the
    /// tick that publishes the window they wait for (one wake-up per part boundary per channel), or at their deadline.
    struct Blocked {
        struct Waiter {
            var id: UInt64
            var target: Int64
            var deadline: Timestamp
            /// Called once, with whether the window exists (false: deadline, cancellation, shutdown).
            var resume: @Sendable (Bool) -> Void
            /// Where `resume` gathers its work, woken after it is resumed (at a boundary, in steps: `StagedWakeups`).
            var batch: (any WakeupBatch)?
        }

        /// What is waited for: a channel's windows (clock channels, `Rendered.completedTicks`), or one rendition of a
        /// relay channel with parts (its upstream's `RelayDecorator.PartsPosition.ordinal`: renditions move apart).
        struct Key: Hashable {
            var channel: ChannelID
            var rendition: Identifier?
        }

        /// The latest window published, by key.
        var published: [Key: Int64] = [:]
        var waiters: [Key: [Waiter]] = [:]
        var count = 0
        var nextID: UInt64 = 0
        var lastExpiry = Timestamp(milliseconds: .min)
        /// At or before the earliest deadline of those held (requests released since may have had it).
        var earliestDeadline = Timestamp(milliseconds: .max)
        /// The ticker stopped (shutdown): nothing would release a request any more, so none is held.
        var closed = false
    }

    // MARK: - Blocking reload

    /// Waits until the ticker has published a window of `channel` with at least `target` completed ticks (parts), at
    /// most `timeoutMilliseconds`. Returns false on time-out or cancellation. Costs no thread: a continuation in a list
    /// that the channel's next tick walks once.
    public func awaitWindow(
        _ channel: ChannelID, rendition: Identifier? = nil, completedTicks target: Int64, timeoutMilliseconds: Int64
    ) async -> Bool {
        let key = Blocked.Key(channel: channel, rendition: rendition)
        let deadline = clock().adding(milliseconds: timeoutMilliseconds)
        let id = blocked.withLock { blocked in
            blocked.nextID &+= 1
            return blocked.nextID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                // Cancelled already (the client went away before this ran): not registered.
                guard !Task.isCancelled else { return continuation.resume(returning: false) }
                register(key, id: id, target: target, deadline: deadline, batch: nil) {
                    continuation.resume(returning: $0)
                }
            }
        } onCancel: {
            // A client that went away: its slot is freed now (if it was registered yet; else at its deadline).
            let waiter = blocked.withLock { blocked -> Blocked.Waiter? in
                guard let index = blocked.waiters[key]?.firstIndex(where: { $0.id == id }) else { return nil }
                blocked.count -= 1
                return blocked.waiters[key]!.remove(at: index)
            }
            if let waiter { Self.resume([waiter], false) }
        }
    }

    /// The same for a caller that is not a task (an HTTP handler on its event loop): `resume` is called once, from the
    /// ticker (or at once when the window exists already), with whether the window exists; the caller hops to its own
    /// thread. Returns the registration's id (for `cancelWindow`), or nil, without calling `resume`, when the ticker
    /// has stopped.
    ///
    /// - Parameter batch: where `resume` gathers its work (an event loop's), woken once the requests released with it
    ///   have been resumed, or in steps of them at a boundary (`StagedWakeups`): a loop then answers its share of a
    ///   part's thousand held requests back to back.
    public func whenWindow(
        _ channel: ChannelID, rendition: Identifier? = nil, completedTicks target: Int64, timeoutMilliseconds: Int64,
        batch: (any WakeupBatch)? = nil, _ resume: @escaping @Sendable (Bool) -> Void
    ) -> UInt64? {
        let key = Blocked.Key(channel: channel, rendition: rendition)
        let deadline = clock().adding(milliseconds: timeoutMilliseconds)
        // One take of the lock for the id and the registration (a thousand players re-register after every part).
        let (id, ready) =
            blocked.withLock { blocked -> (UInt64, Bool?)? in
                guard !blocked.closed else { return nil }
                blocked.nextID &+= 1
                return (
                    blocked.nextID,
                    Self.register(
                        &blocked, key, id: blocked.nextID, target: target, deadline: deadline, batch: batch,
                        resume: resume)
                )
            } ?? (0, nil)
        guard id != 0 else { return nil }
        if let ready {
            resume(ready)
            batch?.wake()
        }
        return id
    }

    /// Drops a registration of `whenWindow` whose caller went away (its connection closed): its `resume` is not called.
    public func cancelWindow(_ channel: ChannelID, rendition: Identifier? = nil, id: UInt64) {
        let key = Blocked.Key(channel: channel, rendition: rendition)
        blocked.withLock { blocked in
            guard let index = blocked.waiters[key]?.firstIndex(where: { $0.id == id }) else { return }
            blocked.waiters[key]!.remove(at: index)
            if blocked.waiters[key]!.isEmpty { blocked.waiters[key] = nil }
            blocked.count -= 1
        }
    }

    func register(
        _ key: Blocked.Key, id: UInt64, target: Int64, deadline: Timestamp, batch: (any WakeupBatch)?,
        resume: @escaping @Sendable (Bool) -> Void
    ) {
        let ready = blocked.withLock {
            Self.register(&$0, key, id: id, target: target, deadline: deadline, batch: batch, resume: resume)
        }
        if let ready {
            resume(ready)
            batch?.wake()
        }
    }

    /// Adds a waiter under the lock, or says how to resume it at once (true: its window is there; false: closed).
    static func register(
        _ blocked: inout Blocked, _ key: Blocked.Key, id: UInt64, target: Int64, deadline: Timestamp,
        batch: (any WakeupBatch)?,
        resume: @escaping @Sendable (Bool) -> Void
    ) -> Bool? {
        if blocked.closed { return false }
        if let published = blocked.published[key], published >= target { return true }
        blocked.waiters[key, default: []].append(
            .init(id: id, target: target, deadline: deadline, resume: resume, batch: batch))
        blocked.earliestDeadline = min(blocked.earliestDeadline, deadline)
        blocked.count += 1
        return nil
    }

    /// Resumes `waiters` with `value`, then wakes each batch they gathered in, once.
    static func resume(_ waiters: [Blocked.Waiter], _ value: Bool) {
        var wakeups = StagedWakeups()
        wakeups.resume(waiters, value)
        wakeups.wake()
    }

    /// Requests released in steps (a boundary's channels one after another): their batches (event loops) are woken at
    /// the first release, so the loops start answering at once, then once `step` more requests have been released
    /// (a loop still answering takes them in the same wake-up; one that finished is woken again), and at `wake()`.
    /// Not once per channel: 5,000 channels of a few players each would wake each loop thousands of times.
    struct StagedWakeups {
        static let step = 64
        private var batches: [any WakeupBatch] = []
        private var released = 0
        private var woken = false

        mutating func resume(_ waiters: [Blocked.Waiter], _ value: Bool) {
            for waiter in waiters {
                waiter.resume(value)
                if let batch = waiter.batch, !batches.contains(where: { $0 === batch }) { batches.append(batch) }
            }
            released += waiters.count
            if !woken || released >= Self.step { wake() }
        }

        /// Wakes the batches gathered since the last wake.
        mutating func wake() {
            guard !batches.isEmpty else { return }
            for batch in batches { batch.wake() }
            batches = []
            released = 0
            woken = true
        }
    }

    /// Requests blocked now, over all channels.
    public var blockedRequests: Int { blocked.withLock { $0.count } }

    /// The capacity of a channel's array of events not yet in effect at its last tick (tests: flat in history).
    func pendingCapacity(of channel: ChannelID) -> Int? {
        shared.withLock { $0.channels[channel]?.pending.capacity }
    }

    /// The ticker published a window of `channel`: releases the requests waiting for it or an earlier one.
    func releaseBlocked(_ channel: ChannelID, rendition: Identifier? = nil, completedTicks: Int64) {
        Self.resume(releasable(channel, rendition: rendition, completedTicks: completedTicks), true)
    }

    /// Records the window published and takes the requests waiting for it or an earlier one, for the caller to resume.
    func releasable(_ channel: ChannelID, rendition: Identifier? = nil, completedTicks: Int64) -> [Blocked
        .Waiter]
    {
        let key = Blocked.Key(channel: channel, rendition: rendition)
        return blocked.withLock { blocked -> [Blocked.Waiter] in
            // A clock channel's windows only move forward. A relay rendition's upstream can go back (a restarted or
            // failed-over packager): what is published is where it is now, so a request for a part it has not reached
            // again is held, not woken at once into a loop.
            blocked.published[key] =
                rendition != nil ? completedTicks : max(blocked.published[key] ?? .min, completedTicks)
            guard let waiting = blocked.waiters[key] else { return [] }
            var ready: [Blocked.Waiter] = []
            var still: [Blocked.Waiter] = []
            for waiter in waiting {
                if waiter.target <= completedTicks { ready.append(waiter) } else { still.append(waiter) }
            }
            blocked.waiters[key] = still.isEmpty ? nil : still
            blocked.count -= ready.count
            return ready
        }
    }

    /// The ticker stops: answers every held request (as timed out) and holds no more.
    func closeBlocked() {
        let all = blocked.withLock { blocked -> [Blocked.Waiter] in
            blocked.closed = true
            let all = blocked.waiters.values.flatMap { $0 }
            blocked.waiters = [:]
            blocked.count = 0
            return all
        }
        Self.resume(all, false)
    }

    /// Answers the requests whose deadline passed (at most every 100 ms).
    func expireBlocked(now: Timestamp) {
        let expired = blocked.withLock { blocked -> [Blocked.Waiter] in
            // Walked only once the earliest deadline may have passed (at most every 100 ms): not at every wake of the
            // ticker with thousands held.
            guard blocked.count > 0, blocked.earliestDeadline <= now, now.milliseconds(since: blocked.lastExpiry) >= 100
            else { return [] }
            blocked.lastExpiry = now
            var expired: [Blocked.Waiter] = []
            var earliest = Timestamp(milliseconds: .max)
            for (key, waiting) in blocked.waiters {
                guard waiting.contains(where: { $0.deadline <= now }) else {
                    for waiter in waiting { earliest = min(earliest, waiter.deadline) }
                    continue
                }
                var still: [Blocked.Waiter] = []
                for waiter in waiting {
                    if waiter.deadline <= now {
                        expired.append(waiter)
                    } else {
                        still.append(waiter)
                        earliest = min(earliest, waiter.deadline)
                    }
                }
                blocked.waiters[key] = still.isEmpty ? nil : still
            }
            blocked.earliestDeadline = earliest
            blocked.count -= expired.count
            return expired
        }
        Self.resume(expired, false)
    }
}
