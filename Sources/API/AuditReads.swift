import Dispatch
import Foundation
import Hummingbird
import Metrics
import Synchronization

/// The expensive audit reads (`GET …/replay`, `…/as-run`, JSON pages of `…/events`): each may read and fold a whole
/// channel's log, so a few clients repeating them could otherwise hold every thread of the cooperative pool (the
/// public playlists wait behind them) and the memory of as many copies of the log.
///
/// - At most ``running`` run at once on this instance, and ``queued`` more wait their turn; beyond that the answer is
///   503 with `Retry-After` at once, without reading anything.
/// - They run on a dispatch queue of their own (a task executor preference: reading, decoding, folding, rendering
///   and encoding alike), never on the cooperative pool, so the playlists keep its threads.
/// - Once none is running, the memory they freed is given back to the operating system (`malloc_trim`), at most once
///   a second, instead of the process staying at the peak.
public final class AuditReads: Sendable {
    /// Why a read was not started.
    struct Busy: Error {
        var running: Int
        var queued: Int

        /// 503 with `Retry-After`.
        var error: APIError {
            APIError(
                .unavailable,
                "this instance is already running \(running) audit reads (replay, as-run, event and refusal pages) with \(queued) waiting, its limit; retry after a few seconds"
            ).with(.retryAfter, "2")
        }
    }

    private struct State {
        var running = 0
        var waiters: [(id: UInt64, continuation: CheckedContinuation<Bool, Never>)] = []
        /// Reads admitted to wait: counted when admitted, before their continuation is in `waiters`, so two reads
        /// arriving together cannot both take the last place.
        var waiting = 0
        var nextID: UInt64 = 0
        var lastTrim = ContinuousClock.now
    }

    let running: Int
    let queued: Int
    private let state = Mutex(State())
    private let queue: DispatchQueue
    private let executor: QueueExecutor
    private let refused = Counter(label: "cueline_audit_reads_refused_total")

    /// - Parameters:
    ///   - running: reads at once; by default 1 on a machine of up to 3 cores, else 2.
    ///   - queued: reads waiting for a turn beyond those.
    public init(running: Int = ProcessInfo.processInfo.activeProcessorCount <= 3 ? 1 : 2, queued: Int = 4) {
        self.running = max(1, running)
        self.queued = max(0, queued)
        queue = DispatchQueue(label: "cueline.audit-reads", qos: .utility, attributes: .concurrent)
        executor = QueueExecutor(queue: queue)
    }

    /// Runs the jobs of the tasks that prefer it on a dispatch queue instead of the cooperative pool.
    final class QueueExecutor: TaskExecutor {
        let queue: DispatchQueue

        init(queue: DispatchQueue) {
            self.queue = queue
        }

        func enqueue(_ job: consuming ExecutorJob) {
            let job = UnownedJob(job)
            queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
        }
    }

    /// Runs `body` on the audit reads' own threads when a turn is free (waiting in the bounded queue for one).
    ///
    /// - Throws: 503 (``Busy``) when the queue is full, without running `body`; what `body` throws.
    func run(_ body: @Sendable () async throws -> Response) async throws -> Response {
        guard await acquire() else {
            refused.increment()
            throw Busy(running: running, queued: queued).error
        }
        defer { release() }
        return try await withTaskExecutorPreference(executor) { try await body() }
    }

    /// True when a turn was taken; false when the queue is full (or the task was cancelled while waiting).
    private func acquire() async -> Bool {
        enum Admission { case now, wait(UInt64), refuse }
        let admission = state.withLock { state -> Admission in
            if state.running < running {
                state.running += 1
                return .now
            }
            guard state.waiting < queued else { return .refuse }
            state.waiting += 1
            state.nextID += 1
            return .wait(state.nextID)
        }
        switch admission {
        case .now: return true
        case .refuse: return false
        case .wait(let id):
            return await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in
                    // Admitted to wait under the lock before this one: a read may have finished in between with
                    // no one in line to hand its turn to. Then the turn is free: take it instead of waiting.
                    let now = state.withLock { state -> Bool? in
                        if Task.isCancelled {
                            state.waiting -= 1
                            return false
                        }
                        if state.running < running {
                            state.waiting -= 1
                            state.running += 1
                            return true
                        }
                        state.waiters.append((id, continuation))
                        return nil
                    }
                    if let now { continuation.resume(returning: now) }
                }
            } onCancel: {
                let waiter = state.withLock { state -> CheckedContinuation<Bool, Never>? in
                    guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                    state.waiting -= 1
                    return state.waiters.remove(at: index).continuation
                }
                waiter?.resume(returning: false)
            }
        }
    }

    /// Hands the turn to the next waiter (it stays counted as running), or frees it.
    private func release() {
        let (next, trim) = state.withLock { state -> (CheckedContinuation<Bool, Never>?, Bool) in
            if !state.waiters.isEmpty {
                state.waiting -= 1
                return (state.waiters.removeFirst().continuation, false)
            }
            state.running -= 1
            guard state.running == 0, ContinuousClock.now - state.lastTrim > .seconds(1) else { return (nil, false) }
            state.lastTrim = .now
            return (nil, true)
        }
        next?.resume(returning: true)
        if trim { queue.async { MemoryTrim.giveBack() } }
    }
}
