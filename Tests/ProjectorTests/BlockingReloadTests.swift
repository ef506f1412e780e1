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
    static func lowLatency() -> ChannelConfig {
        var config = config()
        config.segmentDurationMilliseconds = 1000
        config.windowSegments = 10
        config.partDurationMilliseconds = 250
        for index in config.renditions.indices {
            config.renditions[index].partURITemplate = "https://cdn.example/\(config.renditions[index].name)/seg{n}.{p}.m4s"
        }
        return config
    }

    /// A follower of one LL channel at 60.6 s (242 parts ended), with the log known up to `knownUntil`, its ticker running.
    static func running(knownUntil seconds: Double) async throws -> (ChannelFollower, TestClock, LatenessTests.HeldWatermarkStore, Task<Void, any Error>) {
        let store = LatenessTests.HeldWatermarkStore()
        let clock = TestClock()
        _ = try await CommandHandler(store: store, clock: clock.read).handle(.createChannel(lowLatency()), channel: "demo", context: context())
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
}
