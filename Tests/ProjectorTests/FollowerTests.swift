import EventStore
import HLS
import Projector
import Schedule
import Synchronization
import Testing

/// A clock the test moves by hand.
final class TestClock: Sendable {
    /// Starts a little before 12:01:00, so a channel created at once is in effect at `set(60)`.
    private let now = Mutex(Timestamp(iso8601: "2026-03-01T12:00:59.900Z")!)
    var read: @Sendable () -> Timestamp { { [self] in self.now.withLock { $0 } } }
    func set(_ seconds: Double) {
        now.withLock { $0 = Timestamp(iso8601: "2026-03-01T12:00:00Z")!.adding(milliseconds: Int64(seconds * 1000)) }
    }
}

let epoch = Timestamp(iso8601: "2026-03-01T12:00:00Z")!

func config(_ id: String = "demo", source: ChannelConfig.Source = .clock) -> ChannelConfig {
    ChannelConfig(
        id: ChannelID(id)!, segmentDurationMilliseconds: 6000, windowSegments: 5, epoch: epoch,
        renditions: ["720p", "360p"].map {
            RenditionConfig(name: $0, bandwidth: 1_000_000, uriTemplate: source == .clock ? "\($0)/seg{n}.ts" : "")
        },
        source: source, publicBaseURL: "http://127.0.0.1:8080")
}

func context(_ id: String = UUID().uuidString) -> CommandContext {
    CommandContext(commandID: id, actor: "op", source: "test")
}

import Foundation

/// A channel "demo" created at the epoch, with brk-1 placed at 60 s to start at 90 s for 30 s.
func channelWithBreak(_ store: any EventStore, refusals: (any RefusalStore)? = nil) async throws -> (
    CommandHandler, TestClock
) {
    let clock = TestClock()
    let handler = CommandHandler(store: store, refusals: refusals, clock: clock.read)
    _ = try await handler.handle(.createChannel(config()), channel: "demo", context: context())
    clock.set(60)
    _ = try await handler.handle(
        .placeBreak(
            PlaceBreak(
                id: "brk-1", start: .at(epoch.adding(milliseconds: 90_000)), plannedDurationMilliseconds: 30_000,
                asset: .uri("https://a.example/ad.m3u8"))),
        channel: "demo", context: context())
    return (handler, clock)
}

@Suite("Follower and command handler")
struct FollowerTests {
    @Test("the follower catches up and serves playlists; a command shows without waiting for a tick")
    func catchUpAndServe() async throws {
        let store = InMemoryEventStore()
        let clock = TestClock()
        let handler = CommandHandler(store: store, clock: clock.read)
        let follower = ChannelFollower(store: store, wakeups: { AsyncStream { _ in } }, clock: clock.read)
        _ = try await handler.handle(.createChannel(config()), channel: "demo", context: context())
        try await follower.catchUp()
        clock.set(60)
        #expect(try follower.mediaPlaylist("demo", rendition: "720p").text.hasPrefix("#EXTM3U"))
        let before = try follower.mediaPlaylist("demo", rendition: "720p").text
        _ = try await handler.handle(
            .placeBreak(
                PlaceBreak(
                    id: "brk-1", start: .inMilliseconds(30_000), plannedDurationMilliseconds: 30_000,
                    asset: .uri("https://a.example/ad.m3u8"))),
            channel: "demo", context: context())
        try await follower.catchUp()
        // Commands take effect EffectiveTime.effectDelayMilliseconds after they arrive, on every instance alike.
        #expect(try !follower.mediaPlaylist("demo", rendition: "720p").text.contains("brk-1"))
        clock.set(60.05)
        let after = try follower.mediaPlaylist("demo", rendition: "720p").text
        #expect(!before.contains("brk-1"))
        #expect(after.contains(#"ID="brk-1""#))
        #expect(
            Lint.checkUpdate(
                previous: try PlaylistParser.parseMedia(before), current: try PlaylistParser.parseMedia(after)
            ).isEmpty)
        #expect(follower.isReady)
    }

    @Test("a wall clock that steps back never makes the playlist go backwards")
    func clockStepsBack() async throws {
        let store = InMemoryEventStore()
        let clock = TestClock()
        _ = try await CommandHandler(store: store, clock: clock.read).handle(
            .createChannel(config()), channel: "demo", context: context())
        let follower = ChannelFollower(store: store, wakeups: { AsyncStream { _ in } }, clock: clock.read)
        try await follower.catchUp()
        clock.set(120)
        let later = try PlaylistParser.parseMedia(follower.mediaPlaylist("demo", rendition: "720p").text)
        clock.set(60)
        let stepped = try PlaylistParser.parseMedia(follower.mediaPlaylist("demo", rendition: "720p").text)
        #expect(stepped.playlist.mediaSequence == later.playlist.mediaSequence)
    }

    @Test("unknown channel and rendition are lookup errors")
    func lookups() async throws {
        let store = InMemoryEventStore()
        let clock = TestClock()
        let follower = ChannelFollower(store: store, wakeups: { AsyncStream { _ in } }, clock: clock.read)
        _ = try await CommandHandler(store: store, clock: clock.read).handle(
            .createChannel(config()), channel: "demo", context: context())
        try await follower.catchUp()
        clock.set(61)
        #expect(throws: ChannelFollower.LookupError.unknownChannel("nope")) {
            try follower.mediaPlaylist("nope", rendition: "720p")
        }
        #expect(throws: ChannelFollower.LookupError.unknownRendition(channel: "demo", rendition: "1080p")) {
            try follower.mediaPlaylist("demo", rendition: "1080p")
        }
    }

    @Test("relay channels serve the decorated upstream once it arrives")
    func relay() async throws {
        let store = InMemoryEventStore()
        let clock = TestClock()
        let follower = ChannelFollower(store: store, wakeups: { AsyncStream { _ in } }, clock: clock.read)
        _ = try await CommandHandler(store: store, clock: clock.read).handle(
            .createChannel(config(source: .relay(upstream: "http://encoder.example/{rendition}.m3u8"))),
            channel: "demo", context: context())
        try await follower.catchUp()
        clock.set(61)
        #expect(throws: ChannelFollower.LookupError.upstreamMissing(channel: "demo", rendition: "720p")) {
            try follower.mediaPlaylist("demo", rendition: "720p")
        }
        let upstream = MediaPlaylist(
            version: 3, targetDuration: 6, mediaSequence: 7,
            segments: (7..<11).map {
                Segment(
                    duration: DecimalNumber(milliseconds: 6000), uri: "s\($0).ts",
                    tags: $0 == 7 ? [.programDateTime(epoch.adding(milliseconds: 42_000))] : [])
            })
        follower.updateUpstream("demo", rendition: "720p", playlist: upstream)
        let text = try follower.mediaPlaylist("demo", rendition: "720p").text
        #expect(text.contains("http://encoder.example/s7.ts"))
        #expect(text.components(separatedBy: "#EXT-X-PROGRAM-DATE-TIME").count == 5)
    }

    @Test("a retried command returns the original result, even after the schedule moved on")
    func retry() async throws {
        let store = InMemoryEventStore()
        let (handler, clock) = try await channelWithBreak(store)
        clock.set(103)
        let first = try await handler.handle(.cancelCurrentEvent, channel: "demo", context: context("end-1"))
        clock.set(104)
        let retry = try await handler.handle(.cancelCurrentEvent, channel: "demo", context: context("end-1"))
        #expect(retry.result.replayed)
        #expect(retry.result.events == first.result.events)
        #expect(store.version(of: "demo") == 3)
    }

    @Test("two operators ending the same break at once: one succeeds, the other is refused, one augmenting tag")
    func race() async throws {
        let store = InMemoryEventStore()
        let (handler, clock) = try await channelWithBreak(store)
        clock.set(103)
        @Sendable func endCurrent() async -> String {
            do {
                _ = try await handler.handle(.cancelCurrentEvent, channel: "demo", context: context())
                return "applied"
            } catch {
                return "\(error)"
            }
        }
        async let first = endCurrent()
        async let second = endCurrent()
        let outcomes = await [first, second]
        #expect(outcomes.filter { $0 == "applied" }.count == 1, "\(outcomes)")
        #expect(
            outcomes.contains { $0.contains("already has a playout limit") },
            "got: \(outcomes.joined(separator: " | "))")
        let follower = ChannelFollower(store: store, wakeups: { AsyncStream { _ in } }, clock: clock.read)
        try await follower.catchUp()
        clock.set(104)
        #expect(
            try follower.mediaPlaylist("demo", rendition: "720p").text.components(separatedBy: "X-PLAYOUT-LIMIT").count
                == 2)
    }

    @Test("a refused command is recorded for the audit trail, not applied")
    func refusalRecorded() async throws {
        let store = InMemoryEventStore()
        let refused = InMemoryRefusalStore()
        let (handler, _) = try await channelWithBreak(store, refusals: refused)
        do {
            _ = try await handler.handle(
                .cancelBreak(id: "nope"), channel: "demo",
                context: CommandContext(commandID: "r1", actor: "eve", source: "http"))
            Issue.record("cancelling an unknown break succeeded")
        } catch {}
        let refusals = refused.refusals(of: "demo")
        #expect(refusals.map(\.actor) == ["eve"])
        #expect(refusals.first?.reason.contains("break nope does not exist") == true)
        #expect(store.version(of: "demo") == 2)
    }

    @Test("a handler starting from the follower's state reads only newer events and decides the same")
    func knownState() async throws {
        let store = InMemoryEventStore()
        let (plain, clock) = try await channelWithBreak(store)
        let follower = ChannelFollower(store: store, wakeups: { AsyncStream { _ in } }, clock: clock.read)
        try await follower.catchUp()
        let cached = CommandHandler(store: store, clock: clock.read, knownState: { follower.followedState(of: $0) })
        // Another writer appends after the follower read: the handler must still see it.
        _ = try await plain.handle(
            .placeBreak(
                PlaceBreak(
                    id: "brk-2", start: .at(epoch.adding(milliseconds: 300_000)), plannedDurationMilliseconds: 10_000,
                    asset: .uri("https://a.example/b.m3u8"))),
            channel: "demo", context: context())
        do {
            _ = try await cached.handle(
                .placeBreak(
                    PlaceBreak(
                        id: "brk-2", start: .at(epoch.adding(milliseconds: 400_000)),
                        plannedDurationMilliseconds: 10_000, asset: .uri("https://a.example/b.m3u8"))),
                channel: "demo", context: context())
            Issue.record("a reused id was accepted: the handler did not read past the follower's state")
        } catch {
            #expect("\(error)".contains("already used"))
        }
        let outcome = try await cached.handle(.cancelBreak(id: "brk-2"), channel: "demo", context: context())
        #expect(outcome.result.version == 4)
    }

    @Test("catch-ups running at once (the wake loop and a command route) fold each event in once")
    func concurrentCatchUps() async throws {
        let store = InMemoryEventStore()
        let (handler, clock) = try await channelWithBreak(store)
        for n in 2...20 {
            _ = try await handler.handle(
                .placeBreak(
                    PlaceBreak(
                        id: BreakID("brk-\(n)")!, start: .at(epoch.adding(milliseconds: Int64(n) * 100_000)),
                        plannedDurationMilliseconds: 10_000, asset: .uri("https://a.example/b.m3u8"))),
                channel: "demo", context: context())
        }
        let serial = ChannelFollower(store: store, wakeups: { AsyncStream { _ in } }, clock: clock.read)
        try await serial.catchUp()
        let racing = ChannelFollower(store: store, wakeups: { AsyncStream { _ in } }, clock: clock.read)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<16 { group.addTask { try await racing.catchUp() } }
            try await group.waitForAll()
        }
        let state = try #require(racing.state(of: "demo"))
        #expect(state.breaks.map(\.id.rawValue) == (1...20).map { "brk-\($0)" })
        #expect(state == serial.state(of: "demo"))
        #expect(racing.position == serial.position)
    }
}
