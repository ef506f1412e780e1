import EventStore
import Foundation
import HLS
@testable import Projector
import Schedule
import Synchronization
import Testing

/// Issue 12: `cueline_tick_lateness_seconds` measures when each window became servable (its bytes existed and the
/// serving time had reached its boundary), not when the ticker's loop reached the channel.
@Suite("Tick lateness is measured when a window became servable")
struct LatenessTests {
    /// The in-memory store with a watermark the test moves (the database's known instant).
    final class HeldWatermarkStore: EventStore, @unchecked Sendable {
        let inner = InMemoryEventStore()
        let knownUntil = Mutex(Timestamp(milliseconds: .min))
        /// While true the log is unreachable: the watermark read fails, as a database outage makes it.
        let unreachable = Mutex(false)
        /// While true the watermark read neither answers nor fails: the database's host gone, the socket still open.
        let hanging = Mutex(false)
        func append(_ request: AppendRequest) async throws -> AppendResult { try inner.append(request) }
        func previousResult(of request: AppendRequest) async throws -> AppendResult? {
            try inner.previousResult(of: request)
        }
        func read(after position: Int64, through head: Int64, limit: Int) async throws -> [RecordedEvent] {
            inner.read(after: position, through: head, limit: limit)
        }
        func readStream(_ channel: ChannelID, after version: Int64, limit: Int) async throws -> [RecordedEvent] {
            inner.readStream(channel, after: version, limit: limit)
        }
        func version(of channel: ChannelID) async throws -> Int64 { inner.version(of: channel) }
        func headPosition() async throws -> Int64 { inner.headPosition() }
        func watermark() async throws -> Watermark {
            if unreachable.withLock({ $0 }) { throw StoreError.unavailable("the test's database is down") }
            while hanging.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(5)) }
            return Watermark(head: inner.headPosition(), knownUntil: knownUntil.withLock { $0 })
        }
    }

    @Test("a window rendered ahead is servable at its boundary, however late the ticker looks at it")
    func aheadIsServableAtTheBoundary() async throws {
        let store = InMemoryEventStore()
        let clock = TestClock()
        let handler = CommandHandler(store: store, clock: clock.read)
        _ = try await handler.handle(.createChannel(config()), channel: "demo", context: context())
        let follower = ChannelFollower(store: store, wakeups: { AsyncStream { _ in } }, clock: clock.read)
        try await follower.catchUp()
        clock.set(61)
        _ = try follower.rendered("demo")
        clock.set(63)
        let boundary = epoch.adding(milliseconds: 66_000)
        #expect(follower.renderAhead("demo", boundary: boundary))
        // The ticker reaches the channel 80 ms after the boundary: the window was servable at the boundary.
        clock.set(66.080)
        let served = try follower.rendered("demo")
        #expect(served.tick == boundary && served.readyAt == epoch.adding(milliseconds: 63_000))
        #expect(follower.servableInstant(served, boundary: boundary) == boundary)
    }

    @Test("a window rendered late counts from its render; a late watermark counts from when it passed the boundary")
    func lateRenderAndLateWatermark() async throws {
        let store = HeldWatermarkStore()
        let clock = TestClock()
        let handler = CommandHandler(store: store, clock: clock.read)
        _ = try await handler.handle(.createChannel(config()), channel: "demo", context: context())
        // The last check comes 6.5 s after the last watermark: about the watermark, not about a log that went silent.
        let follower = ChannelFollower(
            store: store, wakeups: { AsyncStream { _ in } }, clock: clock.read, silenceLimit: .seconds(30))
        let boundary = epoch.adding(milliseconds: 60_000)
        // The log is known up to 59.990 s: the boundary is not reached yet, whatever the wall clock says.
        store.knownUntil.withLock { $0 = epoch.adding(milliseconds: 59_990) }
        clock.set(59.995)
        try await follower.catchUp()
        // The watermark passes the boundary when the follower reads it at 60.015 s.
        store.knownUntil.withLock { $0 = epoch.adding(milliseconds: 60_010) }
        clock.set(60.015)
        try await follower.catchUp()
        // Nothing was rendered ahead: the first request renders the window at 60.030 s.
        clock.set(60.030)
        let served = try follower.rendered("demo")
        #expect(
            served.tick == epoch.adding(milliseconds: 60_010) && served.readyAt == epoch.adding(milliseconds: 60_030))
        #expect(follower.servableInstant(served, boundary: boundary) == epoch.adding(milliseconds: 60_030))
        // The same window as if it had been rendered before the boundary: servable when the watermark passed it.
        var early = served
        early.readyAt = epoch.adding(milliseconds: 57_000)
        #expect(follower.servableInstant(early, boundary: boundary) == epoch.adding(milliseconds: 60_015))
        // A boundary the watermark has not reached is not servable yet: counted up to now.
        clock.set(66.5)
        #expect(
            follower.servableInstant(early, boundary: epoch.adding(milliseconds: 66_000))
                == epoch.adding(milliseconds: 66_500))
    }

    @Test(
        "a watermark read that never answers: playlists follow the wall clock after the silence limit, and never go back"
    )
    func silentLog() async throws {
        let store = HeldWatermarkStore()
        let clock = TestClock()
        let handler = CommandHandler(store: store, clock: clock.read)
        _ = try await handler.handle(.createChannel(config()), channel: "demo", context: context())
        let follower = ChannelFollower(
            store: store, wakeups: { AsyncStream { _ in } }, clock: clock.read, silenceLimit: .seconds(5))
        store.knownUntil.withLock { $0 = epoch.adding(milliseconds: 60_010) }
        clock.set(60.015)
        try await follower.catchUp()
        #expect(try follower.rendered("demo").tick == epoch.adding(milliseconds: 60_010))
        // The database's host goes away: the next watermark read waits, neither answering nor failing.
        store.hanging.withLock { $0 = true }
        let reader = Task { try await follower.catchUp() }
        clock.set(65.0)
        #expect(follower.servingTime() == epoch.adding(milliseconds: 60_010), "held at the known instant within 5 s")
        #expect(try follower.rendered("demo").tick == epoch.adding(milliseconds: 60_010))
        clock.set(65.125)
        #expect(
            follower.servingTime() == epoch.adding(milliseconds: 65_125),
            "the wall clock once the log is silent for 5 s")
        clock.set(66.0)
        let byWallClock = try follower.rendered("demo")
        #expect(byWallClock.tick == epoch.adding(milliseconds: 66_000))
        #expect(
            follower.servableInstant(byWallClock, boundary: epoch.adding(milliseconds: 66_000))
                == epoch.adding(milliseconds: 66_000))
        // The connection is dropped (keepalives) and the next read answers, known up to an instant before what was
        // served meanwhile: the serving time is the log's again, and the playlist does not go back.
        reader.cancel()
        _ = await reader.result
        store.hanging.withLock { $0 = false }
        store.knownUntil.withLock { $0 = epoch.adding(milliseconds: 65_500) }
        clock.set(66.25)
        try await follower.catchUp()
        #expect(follower.servingTime() == epoch.adding(milliseconds: 65_500))
        #expect(try follower.rendered("demo").tick >= epoch.adding(milliseconds: 66_000), "a playlist never goes back")
    }
}
