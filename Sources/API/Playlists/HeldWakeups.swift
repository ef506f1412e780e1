import NIOCore
import Projector
import Synchronization

/// Wake-ups of held requests, gathered per event loop. The ticker releases the thousand requests held on a part
/// boundary channel by channel; each loop takes its share in one task, which answers them back to back and takes those
/// gathered meanwhile until none is left (before reading the requests those answers bring), instead of one task, lock
/// and wake of the loop per request, interleaved with reads.
final class HeldWakeups: WakeupBatch {
    private let loop: any EventLoop
    /// The work gathered (run on `loop` only), and whether a task to run it is on the loop's queue or running.
    private let state = Mutex<(pending: [@Sendable () -> Void], scheduled: Bool)>(([], false))

    /// Whole answers made on this loop (touched on it only).
    let responses = LoopResponses()

    private init(loop: any EventLoop) {
        self.loop = loop
    }

    /// One per event loop.
    private static let loops = PerEventLoop { HeldWakeups(loop: $0) }

    static func on(_ loop: any EventLoop) -> HeldWakeups { loops.on(loop) }

    /// Gathers `work`, run on the loop at the next `wake()`.
    func add(_ work: @escaping @Sendable () -> Void) {
        state.withLock { $0.pending.append(work) }
    }

    /// Runs what gathered on the loop, in one task (none queued twice: a task on its way or running takes what gathers).
    func wake() {
        let schedule = state.withLock { state in
            guard !state.scheduled, !state.pending.isEmpty else { return false }
            state.scheduled = true
            return true
        }
        guard schedule else { return }
        loop.execute { self.drain() }
    }

    /// At most this many answers in one task while more keep gathering: then the loop's other work (reads, timers,
    /// other connections) takes its turn, and a task queued behind it goes on.
    static let perTask = 1024

    /// Runs what gathered, and what gathers meanwhile (the ticker releases a boundary's channels one after another),
    /// until nothing is left or `perTask` have run: `wake()` queues no task while this one runs.
    private func drain() {
        var ran = 0
        while true {
            let batch = state.withLock { state in
                defer { state.pending = [] }
                if state.pending.isEmpty { state.scheduled = false }
                return state.pending
            }
            if batch.isEmpty { return }
            run(batch)
            ran += batch.count
            if ran >= Self.perTask {
                // Still scheduled: what gathers until the queued task runs is its.
                loop.execute { self.drain() }
                return
            }
        }
    }

    private func run(_ batch: [@Sendable () -> Void]) {
        responses.beginWakeup()
        defer { responses.endWakeup() }
        for work in batch { work() }
    }
}
