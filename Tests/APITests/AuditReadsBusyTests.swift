import API
import Schedule
import Foundation
import HTTPTypes
import Synchronization
import Testing

/// Holds every read of a channel's log (`readStream`, what replay, as-run and event pages read) until opened, and
/// tells the test when a read has come in.
final class ReadGate: Sendable {
    private struct State {
        var open = false
        var entered = 0
        var held: [CheckedContinuation<Void, Never>] = []
        var watchers: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state = Mutex(State())

    /// How many reads came in so far.
    var entered: Int { state.withLock { $0.entered } }

    /// Counts a read in, and waits until the gate is open.
    func pass() async {
        await withCheckedContinuation { continuation in
            let (ready, passes) = state.withLock { state -> ([CheckedContinuation<Void, Never>], Bool) in
                state.entered += 1
                let entered = state.entered
                let ready = state.watchers.filter { $0.count <= entered }.map(\.continuation)
                state.watchers.removeAll { $0.count <= entered }
                if !state.open { state.held.append(continuation) }
                return (ready, state.open)
            }
            ready.forEach { $0.resume() }
            if passes { continuation.resume() }
        }
    }

    /// Returns once `count` reads came in.
    func waitForEntered(_ count: Int) async {
        await withCheckedContinuation { continuation in
            let now = state.withLock { state -> Bool in
                if state.entered >= count { return true }
                state.watchers.append((count, continuation))
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// Lets every held read, and every later one, through.
    func open() {
        let held = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.open = true
            defer { state.held = [] }
            return state.held
        }
        held.forEach { $0.resume() }
    }
}

@Suite("Audit reads beyond their limit: 503 with Retry-After, in process")
struct AuditReadsBusyTests {
    /// One replay held in its read of the log with `AuditReads(running: 1, waitingPerCaller: queued)`: `queued + 1`
    /// more audit reads of the same token sent at once leave exactly one refused at once (the others wait their turn);
    /// while they wait, replay, as-run and an event page of that token are each refused without reading the log.
    /// Opened, the held read and the waiting ones answer 200, and a new one runs.
    @Test(
        "503 with Retry-After: 2 naming the caller's limit beyond running + its waiting; the held and waiting reads then answer 200",
        arguments: [0, 1])
    func busy(queued: Int) async throws {
        let fixture = try await AuditRouteTests.withBreak()
        let served = try fixture.follower.mediaPlaylist("demo", rendition: "720p")
        let replay = "/channels/demo/replay?at=\(served.tick.iso8601)&rendition=720p"
        let gate = ReadGate()
        fixture.store.beforeReadStream.withLock { $0 = { await gate.pass() } }
        let message =
            "token wall already has \(queued) audit reads (replay, as-run, event, refusal and schedule pages) waiting on this instance, the most one caller may; wait for their answers, then retry"
        // Only a bound, never the synchronisation: a broken limit would otherwise leave the test waiting for a refusal.
        let timeout = Task {
            try await Task.sleep(for: .seconds(20))
            gate.open()
        }
        defer { timeout.cancel() }

        try await fixture.test(auditReads: AuditReads(running: 1, waitingPerCaller: queued)) { [fixture] client in
            let wall = fixture.auth("wall")
            try await withThrowingTaskGroup(of: (String, TestResponse).self) { group in
                group.addTask { ("held", try await client.get(replay, wall)) }
                await gate.waitForEntered(1)
                let extras = (0...queued).map { $0 % 2 == 0 ? "/channels/demo/events" : "/channels/demo/as-run" }
                for (index, uri) in extras.enumerated() {
                    group.addTask { ("extra \(index)", try await client.get(uri, wall)) }
                }

                // The held read and the waiting ones cannot finish while the gate is shut: the first answer is the refusal.
                let (name, refused) = try #require(try await group.next())
                #expect(name != "held")
                #expect(refused.status == .serviceUnavailable, "\(name): \(refused.status) \(refused.text)")
                #expect(refused.headers[.retryAfter] == "2")
                #expect(refused.error?.message == message)

                // The caller's place in line is full: each kind of audit read is refused at once, without reading the log.
                for uri in [
                    replay, "/channels/demo/as-run", "/channels/demo/events", "/channels/demo/as-run?format=csv",
                ] {
                    let answer = try await client.get(uri, wall)
                    #expect(
                        answer.status == .serviceUnavailable && answer.headers[.retryAfter] == "2",
                        "\(uri): \(answer.status)")
                    #expect(answer.error?.message == message, "\(uri)")
                }
                #expect(gate.entered == 1, "only the held replay read the log")

                gate.open()
                var answered: [String: TestResponse] = [:]
                for try await (name, answer) in group { answered[name] = answer }
                #expect(
                    answered.count == queued + 1, "the held read and the \(queued) waiting: \(answered.keys.sorted())")
                #expect(answered["held"]?.status == .ok && answered["held"]?.text == served.text)
                for (name, answer) in answered where name != "held" {
                    #expect(
                        answer.status == .ok && answer.json["channel"] as? String == "demo",
                        "\(name): \(answer.status) \(answer.text)")
                }
            }
            let again = try await client.get(replay, wall)
            #expect(again.status == .ok && again.text == served.text)
        }
    }

    /// Issue 34, defect 5: one token's loops of audit reads gave every read of another token 503. Token wall holds
    /// the one turn (a replay held in its read of the log), has 2 reads of channel side waiting and 3 more refused;
    /// token desk's first read (channel news) waits, is not refused, and is the next to read the log once the turn is
    /// free, before wall's waiting reads.
    @Test("one token's backlog: another token's first read is neither refused nor served after that backlog")
    func fairPerCaller() async throws {
        let fixture = try await AuditRouteTests.withBreak()
        for id in ["news", "side"] {
            _ = try await fixture.handler.handle(
                .createChannel(APIFixture.config(id)), channel: ChannelID(id)!, context: APIFixture.context())
        }
        try await fixture.follower.catchUp()
        let served = try fixture.follower.mediaPlaylist("demo", rendition: "720p")
        let replay = "/channels/demo/replay?at=\(served.tick.iso8601)&rendition=720p"
        let gate = ReadGate()
        fixture.store.streamReads.withLock { $0 = [] }  // the commands' own reads above
        fixture.store.beforeReadStream.withLock { $0 = { await gate.pass() } }
        let timeout = Task {
            try await Task.sleep(for: .seconds(20))
            gate.open()
        }
        defer { timeout.cancel() }
        let reads = AuditReads(running: 1, waitingPerCaller: 2, waiting: 16)

        try await fixture.test(auditReads: reads) { [fixture] client in
            let wall = fixture.auth("wall")
            try await withThrowingTaskGroup(of: (String, TestResponse).self) { group in
                group.addTask { ("held", try await client.get(replay, wall)) }
                await gate.waitForEntered(1)
                for index in 0..<2 {
                    group.addTask { ("wall \(index)", try await client.get("/channels/side/events", wall)) }
                }
                try await Self.waitUntil { reads.waitingNow == 2 }
                for uri in ["/channels/side/events", "/channels/news/as-run", replay] {
                    let refused = try await client.get(uri, wall)
                    #expect(
                        refused.status == .serviceUnavailable && refused.headers[.retryAfter] == "2",
                        "\(uri): \(refused.status)")
                    #expect(
                        refused.error?.message.hasPrefix("token wall already has 2 audit reads") == true,
                        "\(refused.text)")
                }
                group.addTask { ("desk", try await client.get("/channels/news/events", fixture.auth("desk"))) }
                try await Self.waitUntil { reads.waitingNow == 3 }
                #expect(fixture.store.streamReads.withLock { $0 } == ["demo"], "only the held replay read the log")

                gate.open()
                var answered: [String: TestResponse] = [:]
                for try await (name, answer) in group { answered[name] = answer }
                #expect(answered.keys.sorted() == ["desk", "held", "wall 0", "wall 1"])
                for (name, answer) in answered {
                    #expect(answer.status == .ok, "\(name): \(answer.status) \(answer.text)")
                }
                let order = fixture.store.streamReads.withLock { $0 }
                let desk = try #require(order.firstIndex(of: "news"), "\(order)")
                let backlog = try #require(order.firstIndex(of: "side"), "\(order)")
                #expect(desk < backlog, "desk's first read before wall's backlog: \(order)")
            }
        }
    }

    /// Polls `condition` every millisecond, for at most 10 s.
    static func waitUntil(_ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while !condition() {
            guard ContinuousClock.now < deadline else {
                Issue.record("timed out waiting")
                return
            }
            try await Task.sleep(for: .milliseconds(1))
        }
    }
}
