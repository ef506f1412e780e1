import EventStore
import Foundation
import HLS
@testable import Projector
import Schedule
import Synchronization
import Testing
import TestSupport

/// LL-HLS blocking playlist reload in the follower: a held request is released by the tick that publishes its part,
/// answered as timed out at its deadline, and answered when the ticker stops; never left hanging.
@Suite("Blocking reload in the follower")
struct BlockingReloadTests {
    static func lowLatency(_ id: String = "demo") -> ChannelConfig { config(id).lowLatencyForTests }

    /// A follower of one LL channel at 60.6 s (242 parts ended), with the log known up to `knownUntil`, its ticker running.
    static func running(knownUntil seconds: Double) async throws -> (
        ChannelFollower, TestClock, LatenessTests.HeldWatermarkStore, Task<Void, any Error>
    ) {
        let store = LatenessTests.HeldWatermarkStore()
        let clock = TestClock()
        _ = try await CommandHandler(store: store, clock: clock.read).handle(
            .createChannel(lowLatency()), channel: "demo", context: context())
        store.knownUntil.withLock { $0 = epoch.adding(milliseconds: Int64(seconds * 1000)) }
        let follower = ChannelFollower(store: store, wakeups: { AsyncStream { _ in } }, clock: clock.read)
        try await follower.catchUp()
        clock.set(60.6)
        let ticker = Task { try await follower.tickAtSegmentBoundaries() }
        return (follower, clock, store, ticker)
    }

    @Test("a request for the next part is released by the tick that publishes it")
    func released() async throws {
        let (follower, clock, _, ticker) = try await Self.running(knownUntil: 3600)
        defer { ticker.cancel() }
        #expect(try follower.servedMedia("demo", rendition: "720p").completedTicks == 242)
        let waiting = Task { await follower.awaitWindow("demo", completedTicks: 243, timeoutMilliseconds: 60_000) }
        #expect(try await eventually { follower.blockedRequests == 1 })
        clock.set(60.76)
        #expect(await waiting.value == true)
        #expect(follower.blockedRequests == 0)
        #expect(try follower.servedMedia("demo", rendition: "720p").completedTicks >= 243)
    }

    /// An event loop's batch, as `HeldWakeups` is: counts the requests resumed into it, and how many it held at each wake.
    final class CountingBatch: WakeupBatch {
        let state = Mutex<(resumed: Int, answeredTrue: Int, wakes: [Int])>((0, 0, []))
        func wake() { state.withLock { $0.wakes.append($0.resumed) } }
    }

    @Test(
        "a boundary's channels are released one after another: their loop is woken at the first release, then in steps, not once per channel"
    )
    func stagedWakeups() async throws {
        let store = LatenessTests.HeldWatermarkStore()
        let clock = TestClock()
        let names = (0..<130).map { "ll-\($0)" }
        for name in names {
            _ = try await CommandHandler(store: store, clock: clock.read).handle(
                .createChannel(Self.lowLatency(name)), channel: ChannelID(name)!, context: context())
        }
        store.knownUntil.withLock { $0 = epoch.adding(milliseconds: 3_600_000) }
        let follower = ChannelFollower(store: store, wakeups: { AsyncStream { _ in } }, clock: clock.read)
        try await follower.catchUp()
        clock.set(60.6)
        // Served at 60.6 s (part 242: the channel's creation in effect for good), and every window of the boundary at
        // 60.75 s (part 243) rendered ahead, as the ticker does half a part before it.
        for name in names {
            #expect(try follower.servedMedia(ChannelID(name)!, rendition: "720p").completedTicks == 242)
        }
        #expect(names.allSatisfy { follower.renderAhead(ChannelID($0)!, boundary: epoch.adding(milliseconds: 60_750)) })
        let batch = CountingBatch()
        for name in names {
            let id = follower.whenWindow(
                ChannelID(name)!, completedTicks: 243, timeoutMilliseconds: 60_000, batch: batch
            ) { ready in
                batch.state.withLock { state in
                    state.resumed += 1
                    if ready { state.answeredTrue += 1 }
                }
            }
            #expect(id != nil)
        }
        #expect(follower.blockedRequests == 130)
        // The ticker starts past the boundary (so that all 130 fall due in one of its passes, whatever its pace).
        clock.set(60.76)
        let ticker = Task { try await follower.tickAtSegmentBoundaries() }
        defer { ticker.cancel() }
        #expect(try await eventually { batch.state.withLock { $0.resumed } == 130 })
        let (answered, wakes) = batch.state.withLock { ($0.answeredTrue, $0.wakes) }
        #expect(answered == 130)
        // At the first channel's release, after 64 more, after 128 more, and the last at the end of the boundary.
        #expect(wakes == [1, 65, 129, 130])
    }

    @Test("a part that does not appear (the log's watermark held) is answered as timed out at the deadline")
    func timesOut() async throws {
        let (follower, clock, _, ticker) = try await Self.running(knownUntil: 60.6)
        defer { ticker.cancel() }
        let waiting = Task { await follower.awaitWindow("demo", completedTicks: 244, timeoutMilliseconds: 3000) }
        // Registered before the clock moves (its deadline is counted from the clock then).
        #expect(try await eventually { follower.blockedRequests == 1 })
        // The wall clock passes the part's boundary and the deadline, the known log does not: no window to release it.
        clock.set(63.7)
        #expect(await waiting.value == false)
        #expect(follower.blockedRequests == 0)
    }

    @Test("requests held when the ticker stops are answered, and none is held afterwards")
    func closedOnShutdown() async throws {
        let (follower, _, _, ticker) = try await Self.running(knownUntil: 60.6)
        let waiting = Task { await follower.awaitWindow("demo", completedTicks: 300, timeoutMilliseconds: 60_000) }
        #expect(try await eventually { follower.blockedRequests == 1 })
        ticker.cancel()
        #expect(await waiting.value == false)
        #expect(await follower.awaitWindow("demo", completedTicks: 300, timeoutMilliseconds: 60_000) == false)
    }

    @Test("a client that goes away frees its place at once")
    func cancelled() async throws {
        let (follower, _, _, ticker) = try await Self.running(knownUntil: 60.6)
        defer { ticker.cancel() }
        let waiting = Task { await follower.awaitWindow("demo", completedTicks: 300, timeoutMilliseconds: 60_000) }
        #expect(try await eventually { follower.blockedRequests == 1 })
        waiting.cancel()
        #expect(await waiting.value == false)
        #expect(follower.blockedRequests == 0)
    }

    /// The answer of a held request once it is released; false (and the request cancelled) when it is still held
    /// after 5 s, so a release that never comes fails the test instead of hanging it.
    static func answered(_ request: Task<Bool, Never>, _ follower: ChannelFollower) async -> Bool {
        if (try? await eventually { follower.blockedRequests == 0 }) != true {
            request.cancel(); _ = await request.value; return false
        }
        return await request.value
    }

    @Test(
        "across a database outage: a held request is released by the wall clock while the log is unreachable, by the watermark after it returns; the served part never goes back"
    )
    func outageAndRecovery() async throws {
        let store = LatenessTests.HeldWatermarkStore()
        let clock = TestClock()
        _ = try await CommandHandler(store: store, clock: clock.read).handle(
            .createChannel(Self.lowLatency()), channel: "demo", context: context())
        store.knownUntil.withLock { $0 = epoch.adding(milliseconds: 60_600) }
        // The whole follower (its polls of the watermark every 20 ms, its ticker), as `serve` runs it.
        let follower = ChannelFollower(
            store: store, wakeups: { AsyncStream { _ in } }, clock: clock.read, pollInterval: .milliseconds(20))
        clock.set(60.6)
        let running = Task { try await follower.run() }
        defer { running.cancel() }
        #expect(try await eventually { follower.isReady })
        #expect(try await eventually { (try? follower.servedMedia("demo", rendition: "720p").completedTicks) == 242 })

        // Part 243 ends at 60.75 s: the wall clock passes it, the known log does not; the request stays held.
        let first = Task { await follower.awaitWindow("demo", completedTicks: 243, timeoutMilliseconds: 60_000) }
        #expect(try await eventually { follower.blockedRequests == 1 })
        clock.set(60.76)
        try await Task.sleep(for: .milliseconds(100))
        #expect(follower.blockedRequests == 1, "released before the log was known past the part's end")

        // The database goes away: serving goes on by the wall clock, and the held request gets its part.
        store.unreachable.withLock { $0 = true }
        #expect(try await eventually { !follower.isReady })
        #expect(await Self.answered(first, follower) == true)
        #expect(try follower.servedMedia("demo", rendition: "720p").completedTicks == 243)

        // It comes back with its clock behind what was served: nothing goes back, and the next part waits for the log.
        let second = Task { await follower.awaitWindow("demo", completedTicks: 245, timeoutMilliseconds: 60_000) }
        #expect(try await eventually { follower.blockedRequests == 1 })
        store.knownUntil.withLock { $0 = epoch.adding(milliseconds: 60_700) }
        store.unreachable.withLock { $0 = false }
        clock.set(61.3)
        #expect(try await eventually { follower.isReady })
        try await Task.sleep(for: .milliseconds(100))
        #expect(follower.blockedRequests == 1, "released before the log was known past the part's end")
        #expect(try follower.servedMedia("demo", rendition: "720p").completedTicks == 243)
        // The log becomes known past 61.25 s (part 245's end): the request is released with it.
        store.knownUntil.withLock { $0 = epoch.adding(milliseconds: 61_300) }
        #expect(await Self.answered(second, follower) == true)
        #expect(try follower.servedMedia("demo", rendition: "720p").completedTicks == 245)
        #expect(follower.blockedRequests == 0)
    }
}

@Suite("Render samples spread over ticks")
struct SampleOffsetTests {
    @Test(
        "each channel's every-30th sample falls on a tick of its own: 100 channels on one boundary are spread over the 30, the same on every run"
    )
    func spread() throws {
        let offsets = try (0..<100).map { TickerState.sampleOffset(try #require(ChannelID("ll-\($0)"))) }
        #expect(offsets.allSatisfy { (0..<30).contains($0) })
        // At most a few channels share a tick (all 100 did before): no boundary hashes and records them all.
        let perTick = Dictionary(grouping: offsets, by: { $0 }).mapValues(\.count)
        #expect(perTick.count >= 25 && perTick.values.max()! <= 10, "\(perTick.sorted { $0.key < $1.key })")
        // Deterministic (FNV-1a of the id), not seeded per process: known values.
        #expect(offsets[0] == 12)
        #expect(TickerState.sampleOffset("demo") == 24)
    }
}
