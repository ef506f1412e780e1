import Dispatch
import Foundation
import Hummingbird
import Metrics
import Projector
import Schedule
import Synchronization

/// The expensive audit reads (`GET …/replay`, `…/as-run`, JSON pages of `…/events` and `…/refusals`, schedule pages
/// beyond the first 100 breaks): each may read and fold a whole channel's log, so a few clients repeating them could
/// otherwise hold every thread of the cooperative pool (the public playlists wait behind them) and the memory of as
/// many copies of the log.
///
/// - At most ``running`` run at once on this instance. The others wait in line fairly (``AuditReadQueue``): per caller
///   (its token, else its client address), then per channel, so one caller's backlog never makes another caller's
///   first read wait behind it or be refused. A caller with ``waitingPerCaller`` reads waiting has its next one
///   refused; beyond ``waiting`` in all, a newcomer takes the place of the newest read of the caller with the most
///   waiting. A refused read is answered 503 with `Retry-After` at once, without reading anything.
/// - They run on a dispatch queue of their own (a task executor preference: reading, decoding, folding, rendering
///   and encoding alike), never on the cooperative pool, so the playlists keep its threads.
/// - Once none is running, the memory they freed is given back to the operating system (`malloc_trim`), at most once
///   a second, instead of the process staying at the peak.
public final class AuditReads: Sendable {
    /// How a waiting read's wait ended.
    private enum Turn: Sendable {
        case granted
        case refused(AuditReadQueue.Refusal)
        case cancelled
    }

    private struct State {
        var queue: AuditReadQueue
        /// The waiting reads' continuations, by id: a read is in the queue exactly while its continuation is here
        /// (both change under one lock).
        var waiting: [UInt64: CheckedContinuation<Turn, Never>] = [:]
        var nextID: UInt64 = 0
        var lastTrim = ContinuousClock.now
    }

    let running: Int
    /// Whose `X-Forwarded-For` names the caller of an unauthenticated read (open mode).
    let proxies: TrustedProxies
    let waitingPerCaller: Int
    let waiting: Int
    private let state: Mutex<State>
    private let queue: DispatchQueue
    private let executor: QueueExecutor
    private let refused = Counter(label: "cueline_audit_reads_refused_total")

    /// - Parameters:
    ///   - running: reads at once, one caller's at most one fewer (by default 2: a caller's long reads never keep
    ///     another's first read waiting behind them; they run on a queue of their own, beside the playlists).
    ///   - waitingPerCaller: reads of one caller (token, else client address) waiting for a turn beyond those.
    ///   - waiting: reads waiting in all.
    public init(
        running: Int = 2, waitingPerCaller: Int = 2,
        waiting: Int = 16, proxies: TrustedProxies = .none
    ) {
        self.proxies = proxies
        let limits = AuditReadQueue.Limits(running: running, waitingPerCaller: waitingPerCaller, waiting: waiting)
        self.running = limits.running
        self.waitingPerCaller = limits.waitingPerCaller
        self.waiting = limits.waiting
        state = Mutex(State(queue: AuditReadQueue(limits)))
        queue = DispatchQueue(label: "cueline.audit-reads", qos: .utility, attributes: .concurrent)
        executor = QueueExecutor(queue: queue)
    }

    /// Who `request` is, for its share of the line: its token, else its client address (``TrustedProxies``).
    func caller(_ request: Request, _ context: APIRequestContext) -> String {
        context.auditCaller(request, proxies: proxies)
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

    /// Reads waiting for a turn now.
    package var waitingNow: Int { state.withLock { $0.queue.waiting } }

    /// Runs `body` on the audit reads' own threads when a turn is free (waiting in line for one).
    ///
    /// - Parameters:
    ///   - caller: who reads: `token NAME`, or `address A` (``APIRequestContext/auditCaller``).
    ///   - channel: what it reads.
    /// - Throws: 503 when the read is refused (its caller is over its share, the line is full, or a newcomer took its
    ///   place), without running `body`; what `body` throws.
    func run(caller: String, channel: ChannelID, _ body: @Sendable () async throws -> Response) async throws -> Response
    {
        let key = AuditReadQueue.Key(caller: caller, channel: channel.rawValue)
        switch await acquire(key) {
        case .granted:
            break
        case .refused(let refusal):
            refused.increment()
            throw error(refusal)
        case .cancelled:
            refused.increment()
            throw CancellationError()
        }
        defer { release(key) }
        return try await withTaskExecutorPreference(executor) { try await body() }
    }

    /// 503 with `Retry-After`, saying why.
    private func error(_ refusal: AuditReadQueue.Refusal) -> APIError {
        let message: String
        switch refusal {
        case .callerFull(let caller, let waiting):
            message =
                "\(caller) already has \(waiting) audit reads (replay, as-run, event, refusal and schedule pages) waiting on this instance, the most one caller may; wait for their answers, then retry"
        case .instanceFull(let running, let waiting):
            message =
                "this instance is already running \(running) audit reads (replay, as-run, event, refusal and schedule pages) with \(waiting) waiting, its limit; retry after a few seconds"
        case .displaced(let caller):
            message =
                "this audit read of \(caller) gave its place in line to another caller's first read (\(caller) has the most waiting); retry after a few seconds"
        }
        return APIError(.unavailable, message).with(.retryAfter, "2")
    }

    private func acquire(_ key: AuditReadQueue.Key) async -> Turn {
        let id = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                // Admitted and, when it waits, put in line with its continuation under one lock: a release that picks
                // it always finds the continuation to resume.
                let (now, displaced) = state.withLock {
                    state -> (Turn?, (continuation: CheckedContinuation<Turn, Never>, caller: String)?) in
                    if Task.isCancelled { return (.cancelled, nil) }
                    switch state.queue.admit(id, key) {
                    case .run:
                        return (.granted, nil)
                    case .refuse(let refusal):
                        return (.refused(refusal), nil)
                    case .wait(let displacing):
                        state.waiting[id] = continuation
                        return (
                            nil,
                            displacing.flatMap { displaced in
                                state.waiting.removeValue(forKey: displaced.id).map { ($0, displaced.caller) }
                            }
                        )
                    }
                }
                if let displaced {
                    displaced.continuation.resume(returning: .refused(.displaced(caller: displaced.caller)))
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Turn, Never>? in
                guard state.queue.cancel(id) else { return nil }
                return state.waiting.removeValue(forKey: id)
            }
            waiter?.resume(returning: .cancelled)
        }
    }

    /// Hands the turn to the next waiter (it stays counted as running), or frees it.
    private func release(_ key: AuditReadQueue.Key) {
        let (next, trim) = state.withLock { state -> (CheckedContinuation<Turn, Never>?, Bool) in
            switch state.queue.release(key) {
            case .handOver(let id):
                return (state.waiting.removeValue(forKey: id), false)
            case .free(let idle):
                guard idle, ContinuousClock.now - state.lastTrim > .seconds(1) else { return (nil, false) }
                state.lastTrim = .now
                return (nil, true)
            }
        }
        next?.resume(returning: .granted)
        if trim { queue.async { MemoryTrim.giveBack() } }
    }
}
