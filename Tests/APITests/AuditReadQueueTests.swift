import API
import Testing

/// The audit-read line as a value: who runs, who waits, who is refused, and in what order turns are handed over,
/// without a task or a lock.
@Suite("Audit-read line: fair per caller, then per channel")
struct AuditReadQueueTests {
    typealias Key = AuditReadQueue.Key

    static func key(_ caller: String, _ channel: String = "demo") -> Key {
        Key(caller: caller, channel: channel)
    }

    /// `#expect(value == expected)` for a value a mutating call returns (the macro cannot evaluate one itself).
    static func check<T: Equatable>(
        _ value: T, _ expected: T, _ comment: Comment? = nil, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(value == expected, comment, sourceLocation: sourceLocation)
    }

    /// Hands every turn over until the line is empty: the keys in the order they got them.
    static func drain(_ queue: inout AuditReadQueue, running: Key, ids: [UInt64: Key]) -> [Key] {
        var order: [Key] = []
        var finished = running
        while case .handOver(let id) = queue.release(finished) {
            finished = ids[id]!
            order.append(finished)
        }
        return order
    }

    @Test("two turns, one caller's share one: a caller's long reads never keep another's first read waiting")
    func runningPerCaller() {
        var queue = AuditReadQueue(.init(running: 2, waitingPerCaller: 2, waiting: 16))
        let flood = Self.key("token a", "big"), other = Self.key("token b", "quiet")
        Self.check(queue.admit(1, flood), .run)
        Self.check(queue.admit(2, flood), .wait(displacing: nil), "its own share is one running read")
        Self.check(queue.admit(3, flood), .wait(displacing: nil))
        Self.check(queue.admit(4, other), .run, "the second turn is free for another caller, at once")
        // The other caller's read ends: the turn is not the flood's (it has its one running), so it stays free.
        Self.check(queue.release(other), .free(idle: false))
        Self.check(queue.admit(5, other), .run)
        // The flood's read ends: its next waiting read takes that turn.
        Self.check(queue.release(flood), .handOver(to: 2))
        #expect(queue.running == 2)
    }

    @Test("one caller's backlog: its next read is refused, another caller's first read waits and has the next turn")
    func backlogOfOneCaller() {
        var queue = AuditReadQueue(.init(running: 1, waitingPerCaller: 2, waiting: 16))
        let flood = Self.key("token flood")
        Self.check(queue.admit(1, flood), .run)
        Self.check(queue.admit(2, flood), .wait(displacing: nil))
        Self.check(queue.admit(3, flood), .wait(displacing: nil))
        Self.check(queue.admit(4, flood), .refuse(.callerFull(caller: "token flood", waiting: 2)))
        Self.check(queue.admit(5, flood), .refuse(.callerFull(caller: "token flood", waiting: 2)))
        let other = Self.key("token other", "news")
        Self.check(queue.admit(6, other), .wait(displacing: nil), "never refused for the other caller's backlog")
        // The running read ends: the newcomer goes before the backlog that was there first.
        Self.check(queue.release(flood), .handOver(to: 6))
        Self.check(queue.release(other), .handOver(to: 2))
        Self.check(queue.release(flood), .handOver(to: 3))
        Self.check(queue.release(flood), .free(idle: true))
        #expect(queue.running == 0 && queue.waiting == 0)
    }

    @Test("callers with backlogs take turns, each once in a round")
    func roundRobin() {
        var queue = AuditReadQueue(.init(running: 1, waitingPerCaller: 3, waiting: 16))
        let a = Self.key("token a"), b = Self.key("token b"), c = Self.key("address 10.0.0.3")
        var ids: [UInt64: Key] = [:]
        Self.check(queue.admit(1, a), .run)
        ids[1] = a
        var id: UInt64 = 1
        for key in [a, a, a, b, b, c] {
            id += 1
            ids[id] = key
            Self.check(queue.admit(id, key), .wait(displacing: nil))
        }
        let order = Self.drain(&queue, running: a, ids: ids).map(\.caller)
        #expect(order == ["token b", "address 10.0.0.3", "token a", "token b", "token a", "token a"])
    }

    @Test("one caller's channels take turns: its first read of a channel does not wait behind its backlog on another")
    func channelsOfOneCaller() {
        var queue = AuditReadQueue(.init(running: 1, waitingPerCaller: 4, waiting: 16))
        let big = Self.key("address 192.0.2.1", "big"), quiet = Self.key("address 192.0.2.1", "quiet")
        Self.check(queue.admit(1, big), .run)
        var ids: [UInt64: Key] = [1: big]
        for (id, key) in [(2, big), (3, big), (4, big), (5, quiet)] as [(UInt64, Key)] {
            ids[id] = key
            Self.check(queue.admit(id, key), .wait(displacing: nil))
        }
        #expect(Self.drain(&queue, running: big, ids: ids).map(\.channel) == ["quiet", "big", "big", "big"])
    }

    @Test("with every place taken, a newcomer takes the place of the newest read of the caller with the most waiting")
    func displacement() {
        var queue = AuditReadQueue(.init(running: 1, waitingPerCaller: 2, waiting: 4))
        let a = Self.key("token a"), b = Self.key("token b"), c = Self.key("token c"), d = Self.key("token d")
        Self.check(queue.admit(1, a), .run)
        Self.check(queue.admit(2, a), .wait(displacing: nil))
        Self.check(queue.admit(3, a), .wait(displacing: nil))
        Self.check(queue.admit(4, b), .wait(displacing: nil))
        Self.check(queue.admit(5, b), .wait(displacing: nil))
        #expect(queue.waiting == 4)
        // a and b have 2 waiting each: the newest of those (b's second) gives its place.
        Self.check(queue.admit(6, c), .wait(displacing: .init(id: 5, caller: "token b")))
        #expect(queue.waiting(of: "token b") == 1)
        // a has 2, c 1: a's newest gives its place to d.
        Self.check(queue.admit(7, d), .wait(displacing: .init(id: 3, caller: "token a")))
        // Now everyone has 1 waiting: no one is over its share, so the next newcomer is the one refused.
        Self.check(queue.admit(8, Self.key("token e")), .refuse(.instanceFull(running: 1, waiting: 4)))
        // A caller with 1 waiting does not displace another with 1 either.
        Self.check(queue.admit(9, a), .refuse(.instanceFull(running: 1, waiting: 4)))
    }

    @Test("a cancelled waiter leaves the line; with nothing waiting, a release frees the turn")
    func cancellation() {
        var queue = AuditReadQueue(.init(running: 2, waitingPerCaller: 2, waiting: 16, runningPerCaller: 2))
        let a = Self.key("token a"), b = Self.key("token b")
        Self.check(queue.admit(1, a), .run)
        Self.check(queue.admit(2, a), .run)
        Self.check(queue.admit(3, b), .wait(displacing: nil))
        Self.check(queue.cancel(3), true)
        Self.check(queue.cancel(3), false, "not waiting any more")
        Self.check(queue.cancel(1), false, "running, not waiting")
        Self.check(queue.release(a), .free(idle: false))
        Self.check(queue.release(a), .free(idle: true))
        Self.check(queue.admit(4, b), .run, "a free turn is taken at once")
    }

    @Test(
        "a caller that comes back after its reads finished is a newcomer again: turns alternate with a waiting caller")
    func returningCaller() {
        var queue = AuditReadQueue(.init(running: 1, waitingPerCaller: 2, waiting: 16))
        let a = Self.key("token a"), b = Self.key("token b")
        Self.check(queue.admit(1, a), .run)
        Self.check(queue.admit(2, b), .wait(displacing: nil))
        Self.check(queue.release(a), .handOver(to: 2))
        // a sends its next read while b's runs, b then its next while a's runs: one each.
        Self.check(queue.admit(3, a), .wait(displacing: nil))
        Self.check(queue.admit(4, b), .wait(displacing: nil))
        Self.check(queue.release(b), .handOver(to: 3))
        Self.check(queue.release(a), .handOver(to: 4))
        Self.check(queue.release(b), .free(idle: true))
    }
}
