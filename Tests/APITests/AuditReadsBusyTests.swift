import API
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
    /// One replay held in its read of the log with `AuditReads(running: 1, queued:)`: `queued + 1` more audit reads
    /// sent at once leave exactly one refused at once (the others wait their turn); while they wait, replay, as-run
    /// and an event page are each refused without reading the log. Opened, the held read and the waiting ones
    /// answer 200, and a new one runs.
    @Test("503 with Retry-After: 2 naming the limit beyond running + queued; the held and waiting reads then answer 200", arguments: [0, 1])
    func busy(queued: Int) async throws {
        let fixture = try await AuditRouteTests.withBreak()
        let served = try fixture.follower.mediaPlaylist("demo", rendition: "720p")
        let replay = "/channels/demo/replay?at=\(served.tick.iso8601)&rendition=720p"
        let gate = ReadGate()
        fixture.store.beforeReadStream.withLock { $0 = { await gate.pass() } }
        let message =
            "this instance is already running 1 audit reads (replay, as-run, event and refusal pages) with \(queued) waiting, its limit; retry after a few seconds"
        // Only a bound, never the synchronisation: a broken limit would otherwise leave the test waiting for a refusal.
        let timeout = Task {
            try await Task.sleep(for: .seconds(20))
            gate.open()
        }
        defer { timeout.cancel() }

        try await fixture.test(auditReads: AuditReads(running: 1, queued: queued)) { [fixture] client in
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

                // The queue is full: each kind of audit read is refused at once, without reading the log.
                for uri in [replay, "/channels/demo/as-run", "/channels/demo/events", "/channels/demo/as-run?format=csv"] {
                    let answer = try await client.get(uri, wall)
                    #expect(answer.status == .serviceUnavailable && answer.headers[.retryAfter] == "2", "\(uri): \(answer.status)")
                    #expect(answer.error?.message == message, "\(uri)")
                }
                #expect(gate.entered == 1, "only the held replay read the log")

                gate.open()
                var answered: [String: TestResponse] = [:]
                for try await (name, answer) in group { answered[name] = answer }
                #expect(answered.count == queued + 1, "the held read and the \(queued) waiting: \(answered.keys.sorted())")
                #expect(answered["held"]?.status == .ok && answered["held"]?.text == served.text)
                for (name, answer) in answered where name != "held" {
                    #expect(answer.status == .ok && answer.json["channel"] as? String == "demo", "\(name): \(answer.status) \(answer.text)")
                }
            }
            let again = try await client.get(replay, wall)
            #expect(again.status == .ok && again.text == served.text)
        }
    }
}
