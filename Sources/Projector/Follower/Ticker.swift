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
    /// What the ticker keeps of a window it published: to release the requests held on it, then to sample it and time it.
    struct Published {
        var completedTicks: Int64
        var hasParts: Bool
        var version: Int64
        var tick: Timestamp
        var readyAt: Timestamp
        var rendererVersion: Int
        var bodies: [Identifier: ByteBuffer]

        init(_ window: borrowing Rendered) {
            completedTicks = window.completedTicks
            hasParts = window.partsPerSegment != nil
            version = window.version
            tick = window.tick
            readyAt = window.readyAt
            rendererVersion = window.rendererVersion
            bodies = window.bodies
        }
    }

    /// Renders every clock channel as soon as a segment boundary passes, so requests find the new window
    /// ready, and records how late after the boundary that happened. Channels wait in a queue ordered by their
    /// next boundary, so a wake touches only the channels that are due, however many there are.
    /// The most render samples kept while they cannot be written (about 25 MiB).
    static let heldSamplesLimit = 200_000
    /// The most samples one write sends.
    static let samplesPerWrite = 5_000

    package func tickAtSegmentBoundaries() async throws {
        defer { closeBlocked() }
        // Samples go to the database beside the ticker, never in its way: a write that waits (a database host gone,
        // until keepalives drop the connection; a slow disk) must not hold the next boundary's windows or the requests
        // blocked on them. At most 64 batches wait; beyond that a batch is dropped and counted (`cueline verify` then
        // has fewer samples of those ticks to check). Samples a write could not record (the database unreachable, a
        // failover) are kept, the newest `heldSamplesLimit`, and written with the next batch, so that `cueline verify`
        // sees what was served through the outage (the database takes ticks within 10 minutes of its clock).
        let (pending, recorder) = AsyncStream<[RenderSample]>.makeStream(bufferingPolicy: .bufferingOldest(64))
        try await withThrowingTaskGroup(of: Void.self) { group in
            if let sampleStore = samples {
                group.addTask { [logger, metrics] in
                    var held: [RenderSample] = []
                    for await batch in pending {
                        held += batch
                        if held.count > Self.heldSamplesLimit {
                            metrics.renderSamplesDropped.increment(by: held.count - Self.heldSamplesLimit)
                            held.removeFirst(held.count - Self.heldSamplesLimit)
                        }
                        let failedBefore = held.count > batch.count
                        do {
                            var written = 0
                            while written < held.count {
                                let end = min(held.count, written + Self.samplesPerWrite)
                                try await sampleStore.recordRenderSamples(Array(held[written..<end]))
                                written = end
                            }
                            if failedBefore {
                                logger.notice(
                                    "render samples recorded again, \(held.count - batch.count) of them kept through the outage"
                                )
                            }
                            held.removeAll(keepingCapacity: held.count < 4 * Self.samplesPerWrite)
                        } catch {
                            if !failedBefore {
                                logger.warning(
                                    "could not record render samples; kept to record when the database answers",
                                    metadata: ["error": "\(error)"])
                            }
                        }
                    }
                }
            }
            defer { recorder.finish() }
            try await tick(recordingSamplesIn: recorder)
        }
    }

    func tick(recordingSamplesIn recorder: AsyncStream<[RenderSample]>.Continuation) async throws {
        let cores = max(1, ProcessInfo.processInfo.activeProcessorCount)
        var ticker = TickerState(now: clock())
        while !Task.isCancelled {
            var samples: [RenderSample] = []
            let now = servingTime()
            // New channels join the queue.
            if ticker.needsScan(channelCount: shared.withLock { $0.channels.count }, now: now) {
                let clockChannels = shared.withLock { shared in
                    shared.channels.compactMap { id, entry in entry.state.config?.source == .clock ? id : nil }
                }
                ticker.join(clockChannels, now: now)
            }
            // The windows of the channels due now are published (swapped in under the lock: rendered ahead), and the
            // requests held on each released as soon as it is: an event loop answers its share of them back to back,
            // taking those of the next channels as they come (woken at the first release, then once per
            // `StagedWakeups.step` requests, not once per channel). The windows replaced are let go of, and the samples
            // and lateness recorded, only after that. A window not rendered ahead (a command decided late, the first
            // boundary) is rendered here, then its requests released.
            var wakeups = StagedWakeups()
            var retired: [Rendered] = []
            var toRender: Set<ChannelID> = []
            var due: [(id: ChannelID, boundary: Timestamp, completed: Int64)] = []
            while let id = ticker.nextDue(at: now) {
                var replaced: Rendered?
                guard
                    let (config, ready) = shared.withLock({
                        $0.channels[id]?.publish(servingTime: now, retired: &replaced)
                    })
                else {
                    ticker.leave(id)
                    continue
                }
                if let replaced { retired.append(replaced) }
                let (isNew, boundary, completed) = ticker.scheduled(id, timeline: Timeline(config), now: now)
                guard isNew else { continue }
                if !ready {
                    toRender.insert(id)
                } else if config.partsPerSegment != nil {
                    // At once, channel by channel: the event loops start answering the first channel's players
                    // while the others are published (a loop's wake-up takes what gathers while it runs).
                    wakeups.resume(releasable(id, completedTicks: completed), true)
                }
                due.append((id, boundary, completed))
            }
            wakeups.wake()
            retired = []
            var published: [(id: ChannelID, window: Published, boundary: Timestamp, completed: Int64)] = []
            var released: [Blocked.Waiter] = []
            for (id, boundary, completed) in due {
                // A render that fails leaves the channel's requests held (to their deadline, or a later window).
                guard let window = try? withWindow(id, Published.init) else { continue }
                if toRender.contains(id), window.hasParts, window.completedTicks >= completed {
                    released += releasable(id, completedTicks: window.completedTicks)
                }
                published.append((id, window, boundary, completed))
            }
            Self.resume(released, true)
            for (id, window, boundary, completed) in published {
                let (sample, time) = ticker.published(id, completed: completed, version: window.version)
                if sample {
                    for (rendition, body) in window.bodies.sorted(by: { $0.key < $1.key }) {
                        samples.append(
                            RenderSample(
                                channel: id, tick: window.tick, rendition: rendition,
                                rendererVersion: window.rendererVersion,
                                sha256: sha256Hex(String(buffer: body))))
                    }
                }
                if time {
                    // When the window became servable, not when this loop reached the channel: once its bytes
                    // existed (rendered ahead, or by whichever request or tick rendered it) and the serving time had
                    // reached its boundary (the watermark). Any request from then on is answered with it.
                    metrics.tickLateness.recordNanoseconds(
                        max(
                            0,
                            servableInstant(readyAt: window.readyAt, boundary: boundary).milliseconds(since: boundary))
                            * 1_000_000)
                    metrics.ticksRendered.increment()
                }
            }
            expireBlocked(now: clock())
            // Windows of the coming boundaries, rendered ahead on every core; published when their boundary is served.
            let dueAhead = ticker.dueAhead(at: clock())
            if dueAhead.count < 64 || cores == 1 {
                for (id, boundary) in dueAhead { renderAhead(id, boundary: boundary) }
            } else {
                let chunk = (dueAhead.count + cores - 1) / cores
                await withTaskGroup(of: Void.self) { group in
                    for start in stride(from: 0, to: dueAhead.count, by: chunk) {
                        let part = dueAhead[start..<min(dueAhead.count, start + chunk)]
                        group.addTask { for (id, boundary) in part { self.renderAhead(id, boundary: boundary) } }
                    }
                }
            }
            if !samples.isEmpty, self.samples != nil, case .dropped = recorder.yield(samples) {
                metrics.renderSamplesDropped.increment(by: samples.count)
            }
            let wait = ticker.wait(
                now: now, clock: clock(), knownUntil: shared.withLock { $0.knownUntil }, monotonic: .now)
            if wait.askWatermark { _ = watermarkWake.withLock { $0?.yield() } }
            try await Task.sleep(for: wait.sleep, tolerance: .zero)
        }
    }

    /// Renders a clock channel's window for the boundary `boundary` ahead of it, from the schedule in effect at that
    /// instant as far as it is known now, and keeps it aside until a tick at or past the boundary is served. Returns
    /// whether it rendered (false: the channel is gone, not a clock channel, already past that boundary, or rendered
    /// ahead already from the same schedule). A command folded later that takes effect at or before the boundary
    /// changes the version in effect there, and that window is then rendered again when served.
    @discardableResult
    package func renderAhead(_ channel: ChannelID, boundary: Timestamp) -> Bool {
        let snapshot: (ChannelConfig, ChannelState, Int64, Rendered.Effect)? = shared.withLock { shared in
            guard let entry = shared.channels[channel], entry.lastTick < boundary else { return nil }
            let inEffect = entry.inEffect(at: boundary)
            let effect = entry.effect(at: boundary)
            guard let config = inEffect.config, config.source == .clock else { return nil }
            let completed = Timeline(config).completedTicks(at: boundary)
            if let ahead = entry.ahead, ahead.completedTicks == completed, ahead.effect == effect { return nil }
            if let current = entry.rendered, current.completedTicks == completed, current.effect == effect {
                return nil
            }
            return (config, inEffect, completed, effect)
        }
        guard let (config, inEffect, completed, effect) = snapshot else { return false }
        guard var rendered = try? Self.render(config: config, state: inEffect, tick: boundary) else { return false }
        rendered.completedTicks = completed
        rendered.effect = effect
        rendered.readyAt = clock()
        return shared.withLock { shared in
            // Served past the boundary meanwhile (a request rendered it): nothing to keep.
            guard let entry = shared.channels[channel], entry.lastTick < boundary else { return false }
            shared.channels[channel]!.ahead = rendered
            return true
        }
    }
}

/// Where the wake-ups of held requests gather (an HTTP server's event loop): each `resume` given with it adds its work,
/// and `wake()`, called after they are resumed (at a boundary, in steps while later channels are published), runs
/// what gathered, and what gathers while it runs.
public protocol WakeupBatch: AnyObject, Sendable {
    func wake()
}
