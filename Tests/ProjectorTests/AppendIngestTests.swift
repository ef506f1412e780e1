import EventStore
import Foundation
import HLS
import Projector
import Schedule
import Testing

/// Issue 12: a command costs one round trip. The handler decides on the follower's state without reading the stream
/// first, and the follower folds the appended events as the append returned them, without reading the log.
@Suite("Commands in one round trip: decided on the known state, appended events folded as returned")
struct AppendIngestTests {
    /// Counts the store's reads, to show which path a command took.
    final class CountingStore: EventStore, @unchecked Sendable {
        let inner = InMemoryEventStore()
        private let lock = NSLock()
        private var reads = 0
        var readCount: Int { lock.withLock { reads } }
        private func counted() { lock.withLock { reads += 1 } }

        func append(_ request: AppendRequest) async throws -> AppendResult { try inner.append(request) }
        func previousResult(of request: AppendRequest) async throws -> AppendResult? {
            try inner.previousResult(of: request)
        }
        func readStream(_ channel: ChannelID, after version: Int64, limit: Int) async throws -> [RecordedEvent] {
            counted()
            return inner.readStream(channel, after: version, limit: limit)
        }
        func read(after position: Int64, through head: Int64, limit: Int) async throws -> [RecordedEvent] {
            counted()
            return inner.read(after: position, through: head, limit: limit)
        }
        func version(of channel: ChannelID) async throws -> Int64 { inner.version(of: channel) }
        func headPosition() async throws -> Int64 { inner.headPosition() }
        func watermark() async throws -> Watermark { inner.watermark() }
    }

    /// A store that counts reads, a follower on it, and a handler deciding on the follower's state (as `cueline serve`).
    func commandPath() -> (CountingStore, TestClock, ChannelFollower, CommandHandler) {
        let store = CountingStore()
        let clock = TestClock()
        let follower = ChannelFollower(store: store, wakeups: { AsyncStream { _ in } }, clock: clock.read)
        let handler = CommandHandler(store: store, clock: clock.read, knownState: { follower.followedState(of: $0) })
        return (store, clock, follower, handler)
    }

    @Test("appended events are folded without a read, and the follower equals one that read the log")
    func ingestEqualsCatchUp() async throws {
        let (store, clock, follower, handler) = commandPath()
        let created = try await handler.handle(.createChannel(config()), channel: "demo", context: context())
        #expect(follower.ingest(appended: created.result.events))
        clock.set(60)
        let readsBefore = store.readCount
        for index in 0..<5 {
            let outcome = try await handler.handle(
                .placeBreak(
                    PlaceBreak(
                        id: BreakID("brk-\(index)")!, start: .inMilliseconds(60_000 + Int64(index) * 40_000),
                        plannedDurationMilliseconds: 30_000, asset: .uri("https://a.example/ad.m3u8"))),
                channel: "demo", context: context())
            // Folded as decided (the command's own events, not decoded again): the same state as the log's, below.
            #expect(follower.ingest(outcome))
        }
        // Decided on the follower's state and folded as returned: the stream and the log were not read.
        #expect(store.readCount == readsBefore)
        let reader = ChannelFollower(store: store, wakeups: { AsyncStream { _ in } }, clock: clock.read)
        try await reader.catchUp()
        #expect(follower.followedState(of: "demo") == reader.followedState(of: "demo"))
        // The read cursor moves with reads of the log only; the read then meets the ingested events and skips them.
        #expect(follower.position == 0)
        try await follower.catchUp()
        #expect(
            follower.position == reader.position
                && follower.followedState(of: "demo") == reader.followedState(of: "demo"))
        clock.set(75)
        #expect(
            try follower.mediaPlaylist("demo", rendition: "720p").text
                == reader.mediaPlaylist("demo", rendition: "720p").text)
    }

    @Test("a NOTIFY hint of events the follower folded already (its own command's) is known; others are not")
    func foldedHints() async throws {
        let (_, _, follower, handler) = commandPath()
        // Another channel first, so that positions and versions differ.
        let other = try await handler.handle(.createChannel(config("other")), channel: "other", context: context())
        #expect(follower.ingest(appended: other.result.events))
        let created = try await handler.handle(.createChannel(config()), channel: "demo", context: context())
        let position = try #require(created.result.events.last?.position)
        #expect(position == 2 && created.result.version == 1)
        #expect(!follower.hasFolded(hint: "demo \(position)"))
        #expect(follower.ingest(appended: created.result.events))
        #expect(follower.hasFolded(hint: "demo \(position)"))
        #expect(follower.hasFolded(hint: "demo \(position - 1)"))
        // A later position of the same channel (another instance's append), another channel, or a payload that is
        // not a hint: a catch-up is woken.
        #expect(!follower.hasFolded(hint: "demo \(position + 1)"))
        #expect(!follower.hasFolded(hint: "other \(position)"))
        #expect(follower.hasFolded(hint: "other 1"))
        #expect(!follower.hasFolded(hint: "unknown 1"))
        for odd in [
            "", "demo", "demo x", "demo  \(position)", " \(position)", "Demo \(position)", "unknown 0", "unknown -1",
        ] {
            #expect(!follower.hasFolded(hint: odd), "\(odd)")
        }
    }

    @Test("a retry answered from the log is folded as the log holds it, not as this attempt decided it again later")
    func retryFoldsTheLogsDecision() async throws {
        let store = InMemoryEventStore()
        let clock = TestClock()
        let follower = ChannelFollower(store: store, wakeups: { AsyncStream { _ in } }, clock: clock.read)
        let handler = CommandHandler(store: store, clock: clock.read, knownState: { follower.followedState(of: $0) })
        #expect(
            follower.ingest(try await handler.handle(.createChannel(config()), channel: "demo", context: context())))
        // A break 60 s from now; its answer is lost (not folded here), and the client retries 10 s later.
        let place = ScheduleCommand.placeBreak(
            PlaceBreak(
                id: "retried", start: .inMilliseconds(60_000), plannedDurationMilliseconds: 30_000,
                asset: .uri("https://a.example/ad.m3u8")))
        let retryContext = context("retry-1")
        clock.set(60)
        let first = try await handler.handle(place, channel: "demo", context: retryContext)
        clock.set(70)
        let retry = try await handler.handle(place, channel: "demo", context: retryContext)
        #expect(retry.result.replayed && retry.encoded.isEmpty)
        // The log's events, the first attempt's decision (its start 60 s after 60 s, not after 70 s).
        #expect(retry.events == first.events)
        #expect(follower.ingest(retry))
        let reader = ChannelFollower(store: store, wakeups: { AsyncStream { _ in } }, clock: clock.read)
        try await reader.catchUp()
        #expect(follower.followedState(of: "demo") == reader.followedState(of: "demo"))
        // Decided again at 70 s, the break could not start before 130 s.
        let start = try #require(follower.followedState(of: "demo")?.breaks.first?.start)
        #expect(start < epoch.adding(milliseconds: 130_000))
    }

    @Test(
        "events of another writer of the same channel first: nothing is folded out of order, and reading the log folds them all; another channel's unread events do not matter"
    )
    func gapFallsBackToReading() async throws {
        let store = InMemoryEventStore()
        let clock = TestClock()
        let follower = ChannelFollower(store: store, wakeups: { AsyncStream { _ in } }, clock: clock.read)
        let other = CommandHandler(store: store, clock: clock.read)
        let mine = CommandHandler(store: store, clock: clock.read, knownState: { follower.followedState(of: $0) })
        _ = try await other.handle(.createChannel(config("a")), channel: "a", context: context())
        // Channel a's event (position 1) is unread; b's first version is b's next: folded.
        let created = try await mine.handle(.createChannel(config("b")), channel: "b", context: context())
        #expect(follower.ingest(appended: created.result.events))
        #expect(
            follower.position == 0 && follower.followedState(of: "b")?.version == 1 && follower.state(of: "a") == nil)
        // Another writer moves b to version 2; this instance's command is version 3, after one it has not read: refused.
        clock.set(60)
        _ = try await other.handle(
            .placeBreak(
                PlaceBreak(
                    id: "x", start: .inMilliseconds(60_000), plannedDurationMilliseconds: 30_000,
                    asset: .uri("https://a.example/ad.m3u8"))),
            channel: "b", context: context())
        let placed = try await mine.handle(
            .placeBreak(
                PlaceBreak(
                    id: "y", start: .inMilliseconds(120_000), plannedDurationMilliseconds: 30_000,
                    asset: .uri("https://a.example/ad.m3u8"))),
            channel: "b", context: context())
        #expect(placed.result.version == 3)
        #expect(!follower.ingest(appended: placed.result.events))
        #expect(follower.followedState(of: "b")?.version == 1)
        try await follower.catchUp()
        #expect(
            follower.position == 4 && follower.state(of: "a") != nil && follower.followedState(of: "b")?.version == 3)
        #expect(follower.followedState(of: "b")?.breaks.map(\.id) == ["x", "y"])
        // Already folded: accepted and nothing changes.
        #expect(follower.ingest(appended: placed.result.events))
        #expect(follower.position == 4 && follower.followedState(of: "b")?.version == 3)
    }

    @Test("a command refused on a stale known state is decided again on the stream, not refused")
    func staleStateIsNotFinal() async throws {
        let store = InMemoryEventStore()
        let clock = TestClock()
        // Instance B's follower never reads the placement instance A makes.
        let followerB = ChannelFollower(store: store, wakeups: { AsyncStream { _ in } }, clock: clock.read)
        let handlerA = CommandHandler(store: store, clock: clock.read)
        let handlerB = CommandHandler(store: store, clock: clock.read, knownState: { followerB.followedState(of: $0) })
        _ = try await handlerA.handle(.createChannel(config()), channel: "demo", context: context())
        try await followerB.catchUp()
        clock.set(60)
        _ = try await handlerA.handle(
            .placeBreak(
                PlaceBreak(
                    id: "late-news", start: .inMilliseconds(0), plannedDurationMilliseconds: 30_000,
                    asset: .uri("https://a.example/ad.m3u8"))),
            channel: "demo", context: context())
        clock.set(80)
        // B does not know late-news; the limit must still apply (decided again on the stream as read).
        let limited = try await handlerB.handle(
            .setPlayoutLimit(id: "late-news", limitMilliseconds: 20_000), channel: "demo", context: context())
        #expect(limited.result.version == 3 && !limited.result.replayed)
        // If-Match with the real version is honoured although B's state is older.
        let placed = try await handlerB.handle(
            .placeBreak(
                PlaceBreak(
                    id: "second", start: .inMilliseconds(100_000), plannedDurationMilliseconds: 30_000,
                    asset: .uri("https://a.example/ad.m3u8"))),
            channel: "demo", context: context(), expectedVersion: 3)
        #expect(placed.result.version == 4)
        // A real refusal is still a refusal (decided on the stream).
        await #expect(throws: CommandError.self) {
            _ = try await handlerB.handle(
                .setPlayoutLimit(id: "no-such-break", limitMilliseconds: 10_000), channel: "demo", context: context())
        }
    }

    @Test(
        "placements sent at once to one channel are decided one after another: all applied, none loses a version race")
    func oneChannelsCommandsTakeTurns() async throws {
        let store = CountingStore()
        let clock = TestClock()
        let follower = ChannelFollower(store: store, wakeups: { AsyncStream { _ in } }, clock: clock.read)
        let handler = CommandHandler(
            store: store, clock: clock.read, knownState: { follower.followedState(of: $0) },
            applied: { await follower.applied($0) })
        _ = try await handler.handle(.createChannel(config()), channel: "demo", context: context())
        clock.set(60)
        let readsBefore = store.readCount
        let versions = try await withThrowingTaskGroup(of: Int64.self) { group in
            for index in 0..<30 {
                group.addTask {
                    try await handler.handle(
                        .placeBreak(
                            PlaceBreak(
                                id: BreakID("brk-\(index)")!, start: .inMilliseconds(120_000 + Int64(index) * 40_000),
                                plannedDurationMilliseconds: 30_000, asset: .uri("https://a.example/ad.m3u8"))),
                        channel: "demo", context: context()
                    ).result.version
                }
            }
            return try await group.reduce(into: [Int64]()) { $0.append($1) }
        }
        #expect(versions.sorted() == Array(2...31))
        // Each decided on the state the previous one left (folded by `applied` within its turn): no version race was
        // lost, so the stream was never read to decide again.
        #expect(store.readCount == readsBefore)
        #expect(follower.followedState(of: "demo")?.version == 31)
    }
}
