import EventStore
import HLS
import Projector
import Schedule
import Testing

/// Issue 11 defect 3 and the red team's poisoned channel: one event this build cannot read (written by a newer build,
/// or forged by the service role) made every later command on the channel 503 and replay fail.
@Suite("Events this build cannot read")
struct UnreadableEventTests {
    @Test(
        "an unreadable event is skipped alike by commands, the follower and replay, and moves the version on",
        arguments: [
            (
                "BreakPlaced", 99,
                #"{"id":"x","start":"2026-03-01T12:02:00.000Z","plannedDurationMilliseconds":1000,"asset":{}}"#
            ),
            ("FromTheFuture", 1, #"{"anything":true}"#),
            ("PlayoutLimitSet", 1, #"{"id":"brk-1","limitMilliseconds":"twelve","kind":"playoutLimit"}"#),
        ])
    func skipped(type: String, schemaVersion: Int, payload: String) async throws {
        let store = InMemoryEventStore()
        let (handler, clock) = try await channelWithBreak(store)
        _ = try store.append(
            AppendRequest(
                channel: "demo", expectedVersion: .exactly(2),
                events: [NewEvent(type: type, schemaVersion: schemaVersion, payload: payload)],
                command: CommandMetadata(
                    commandID: "odd", request: "odd", actor: "op", source: "test",
                    decidedAt: epoch.adding(milliseconds: 61_000))))
        let follower = ChannelFollower(store: store, wakeups: { AsyncStream { _ in } }, clock: clock.read)
        try await follower.catchUp()
        clock.set(62)
        #expect(follower.state(of: "demo")?.version == 3)
        let served = try follower.mediaPlaylist("demo", rendition: "720p")
        #expect(served.text.contains(#"ID="brk-1""#))

        // Commands still work, decided against version 3.
        let placed = try await handler.handle(
            .placeBreak(
                PlaceBreak(
                    id: "brk-2", start: .inMilliseconds(120_000), plannedDurationMilliseconds: 10_000,
                    asset: .uri("https://a.example/b.m3u8"))),
            channel: "demo", context: context())
        #expect(placed.result.version == 4)

        // Replay skips it too, so what was served is what replay gives.
        let events = try await Replay.events("demo", from: store)
        #expect(events.map(\.version) == [1, 2, 4])
        #expect(
            try Replay.playlist("demo", events, at: served.tick, rendition: "720p", multivariant: false) == served.text)
        let (_, unreadable) = ChannelLoader.decodeReadable(store.readStream("demo", after: 0, limit: 10))
        #expect(unreadable.map(\.0.version) == [3])
    }
}
