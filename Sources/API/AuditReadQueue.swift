/// Whose audit read runs next, who waits and who is refused, as a value: every input returns what to do, and
/// ``AuditReads`` does it (resumes a waiter, answers 503). No clock, no tasks, no locks: tested without concurrency.
///
/// A read belongs to a caller (a token, or the client address without one) and a channel. Fair per caller, then per
/// channel:
/// - At most ``Limits/running`` reads run at once, and at most ``Limits/runningPerCaller`` of one caller (by default
///   one fewer than all: a caller's long reads never hold every turn, so another's read starts at once beside them).
///   A freed turn goes to the waiting caller, among those under their own share, who had a turn least
///   recently (one with none running or waiting counts as never), and within that caller to the channel it read least
///   recently; within a channel, in arrival order. So a caller's first read waits for the reads already running, never
///   behind another caller's backlog; behind a proxy, where every caller has the same address, the channels still
///   take turns.
/// - Each caller has at most ``Limits/waitingPerCaller`` reads waiting: its next one is refused, not anyone else's.
/// - At most ``Limits/waiting`` wait in all. When that is full, a newcomer takes the place of the newest waiting read
///   of the caller with the most waiting (that read is refused instead), unless that caller has no more than one read
///   waiting beyond the newcomer's own: then the newcomer is refused (no caller is over its share).
package struct AuditReadQueue: Sendable {
    /// Who reads what.
    package struct Key: Hashable, Sendable {
        /// `token NAME`, or `address A` for a caller without a token.
        package var caller: String
        package var channel: String

        package init(caller: String, channel: String) {
            self.caller = caller
            self.channel = channel
        }
    }

    package struct Limits: Hashable, Sendable {
        package var running: Int
        package var runningPerCaller: Int
        package var waitingPerCaller: Int
        package var waiting: Int

        package init(running: Int, waitingPerCaller: Int, waiting: Int, runningPerCaller: Int? = nil) {
            self.running = max(1, running)
            self.runningPerCaller = min(self.running, max(1, runningPerCaller ?? self.running - 1))
            self.waitingPerCaller = max(0, waitingPerCaller)
            self.waiting = max(0, waiting)
        }
    }

    /// Why a read is not started.
    package enum Refusal: Hashable, Sendable {
        /// Its caller already has its most reads waiting.
        case callerFull(caller: String, waiting: Int)
        /// Every place in line is taken, and no caller holds more than its share of them.
        case instanceFull(running: Int, waiting: Int)
        /// It was waiting, and a read of a caller with fewer waiting took its place.
        case displaced(caller: String)
    }

    package enum Admission: Hashable, Sendable {
        /// Run now: the read holds a turn until ``release(_:)``.
        case run
        /// Wait for ``release(_:)`` to hand it a turn; `displacing` is a waiting read refused to make room (answer it
        /// ``Refusal/displaced(caller:)`` with its own caller, never the newcomer's: callers do not learn of each other).
        case wait(displacing: Displaced?)
        case refuse(Refusal)
    }

    /// A waiting read refused to make room, and whose it was.
    package struct Displaced: Hashable, Sendable {
        package var id: UInt64
        package var caller: String

        package init(id: UInt64, caller: String) {
            self.id = id
            self.caller = caller
        }
    }

    package enum Release: Hashable, Sendable {
        /// The turn goes to this waiting read (it now runs).
        case handOver(to: UInt64)
        /// The turn is free; `idle` when no read runs any more.
        case free(idle: Bool)
    }

    private struct Waiter: Hashable, Sendable {
        var id: UInt64
        var key: Key
    }

    package let limits: Limits
    /// Reads running now.
    package private(set) var running = 0
    /// In arrival order; at most `limits.waiting` (a handful), so scanning it is cheaper than indexing it.
    private var waiters: [Waiter] = []
    private var runningByKey: [Key: Int] = [:]
    /// When each caller and each key last got a turn (a count of turns), kept only while it has reads running or
    /// waiting: the state stays as small as the reads in flight, however many callers came and went.
    private var callerTurns: [String: UInt64] = [:]
    private var keyTurns: [Key: UInt64] = [:]
    private var turns: UInt64 = 0

    package init(_ limits: Limits) {
        self.limits = limits
    }

    /// Reads waiting now.
    package var waiting: Int { waiters.count }

    /// Reads of `caller` waiting now.
    package func waiting(of caller: String) -> Int {
        waiters.reduce(0) { $0 + ($1.key.caller == caller ? 1 : 0) }
    }

    /// A read `id` (unique, increasing) of `key` arrives.
    package mutating func admit(_ id: UInt64, _ key: Key) -> Admission {
        if running < limits.running && underShare(key.caller) && !waiters.contains(where: { underShare($0.key.caller) })
        {
            running += 1
            grantTurn(key)
            return .run
        }
        let own = waiting(of: key.caller)
        guard own < limits.waitingPerCaller else { return .refuse(.callerFull(caller: key.caller, waiting: own)) }
        var displaced: Displaced?
        if waiters.count >= limits.waiting {
            // The caller with the most waiting, the earliest to have come on a tie.
            var counts: [String: Int] = [:]
            for waiter in waiters where waiter.key.caller != key.caller { counts[waiter.key.caller, default: 0] += 1 }
            guard let most = counts.values.max(), most > own + 1,
                let index = waiters.lastIndex(where: { counts[$0.key.caller] == most })
            else { return .refuse(.instanceFull(running: running, waiting: waiters.count)) }
            let removed = waiters.remove(at: index)
            forgetIfIdle(removed.key)
            displaced = Displaced(id: removed.id, caller: removed.key.caller)
        }
        waiters.append(Waiter(id: id, key: key))
        return .wait(displacing: displaced)
    }

    /// The waiting read `id` gave up (its task was cancelled); false when it is not waiting (it already has a turn,
    /// or was refused).
    package mutating func cancel(_ id: UInt64) -> Bool {
        guard let index = waiters.firstIndex(where: { $0.id == id }) else { return false }
        let removed = waiters.remove(at: index)
        forgetIfIdle(removed.key)
        return true
    }

    /// A read of `key` that ran has finished: its turn goes to the next waiting read, or is freed.
    package mutating func release(_ key: Key) -> Release {
        if let count = runningByKey[key] {
            runningByKey[key] = count > 1 ? count - 1 : nil
        }
        forgetIfIdle(key)
        // Only callers under their share of the running reads may take the turn.
        let eligible = waiters.filter { underShare($0.key.caller) }
        guard !eligible.isEmpty else {
            running = max(0, running - 1)
            return .free(idle: running == 0)
        }
        // The caller served least recently (never, for a newcomer), then its channel served least recently; the
        // earliest waiter on ties, because `min(by:)` keeps the first of equals.
        let caller = eligible.min { callerTurns[$0.key.caller, default: 0] < callerTurns[$1.key.caller, default: 0] }!
            .key.caller
        let next = waiters.indices.filter { waiters[$0].key.caller == caller }
            .min { keyTurns[waiters[$0].key, default: 0] < keyTurns[waiters[$1].key, default: 0] }!
        let chosen = waiters.remove(at: next)
        grantTurn(chosen.key)
        return .handOver(to: chosen.id)
    }

    /// Whether `caller` has fewer reads running than its share.
    private func underShare(_ caller: String) -> Bool {
        runningByKey.reduce(0) { $0 + ($1.key.caller == caller ? $1.value : 0) } < limits.runningPerCaller
    }

    private mutating func grantTurn(_ key: Key) {
        turns += 1
        runningByKey[key, default: 0] += 1
        callerTurns[key.caller] = turns
        keyTurns[key] = turns
    }

    /// Drops the turn records of a key, and of its caller, that have nothing running or waiting any more.
    private mutating func forgetIfIdle(_ key: Key) {
        if runningByKey[key] == nil && !waiters.contains(where: { $0.key == key }) { keyTurns[key] = nil }
        if !runningByKey.keys.contains(where: { $0.caller == key.caller })
            && !waiters.contains(where: { $0.key.caller == key.caller })
        {
            callerTurns[key.caller] = nil
        }
    }
}
