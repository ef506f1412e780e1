import EventStore
import HLS
import Projector
import Schedule
import Testing

@Suite("Pre-encoded playlists")
struct ServedMediaTests {
    @Test(
        "the served body is the rendered text's bytes, re-encoded when a command changes the window; misses answer as mediaPlaylist does"
    )
    func servedBodies() async throws {
        let store = InMemoryEventStore()
        let (handler, clock) = try await channelWithBreak(store)
        let follower = ChannelFollower(store: store, wakeups: { AsyncStream { _ in } }, clock: clock.read)
        try await follower.catchUp()
        clock.set(60.05)
        for rendition: Identifier in ["720p", "360p"] {
            let served = try follower.servedMedia("demo", rendition: rendition)
            let text = try follower.mediaPlaylist("demo", rendition: rendition)
            #expect(served.body.getString(at: served.body.readerIndex, length: served.body.readableBytes) == text.text)
            #expect(served.tick == text.tick)
            #expect(served.tickText == text.tick.iso8601)
            #expect(served.targetDuration == text.targetDuration)
        }
        let rendered = try follower.rendered("demo")
        #expect(
            rendered.multivariantBody.getString(at: 0, length: rendered.multivariantBody.readableBytes)
                == rendered.multivariant)
        // A cancellation changes the window: the body served follows it.
        let before = try follower.servedMedia("demo", rendition: "720p")
        #expect(
            before.body.getString(at: before.body.readerIndex, length: before.body.readableBytes)?.contains(
                #"ID="brk-1""#) == true)
        _ = try await handler.handle(.cancelBreak(id: "brk-1"), channel: "demo", context: context())
        try await follower.catchUp()
        clock.set(60.2)
        let after = try follower.servedMedia("demo", rendition: "720p")
        let afterText = try follower.mediaPlaylist("demo", rendition: "720p").text
        #expect(after.body.getString(at: after.body.readerIndex, length: after.body.readableBytes) == afterText)
        #expect(after.body != before.body)
        #expect(throws: ChannelFollower.LookupError.unknownRendition(channel: "demo", rendition: "4k")) {
            try follower.servedMedia("demo", rendition: "4k")
        }
        #expect(throws: ChannelFollower.LookupError.unknownChannel("nope")) {
            try follower.servedMedia("nope", rendition: "720p")
        }
    }

    @Test(
        "a window rendered ahead is not served before its boundary, is served at it with the bytes a fresh render gives, and a command in effect by then is not lost"
    )
    func renderAhead() async throws {
        let store = InMemoryEventStore()
        let (handler, clock) = try await channelWithBreak(store)
        let follower = ChannelFollower(store: store, wakeups: { AsyncStream { _ in } }, clock: clock.read)
        try await follower.catchUp()
        func fresh() async throws -> (text: String, tick: Timestamp) {
            let other = ChannelFollower(store: store, wakeups: { AsyncStream { _ in } }, clock: clock.read)
            try await other.catchUp()
            let served = try other.mediaPlaylist("demo", rendition: "720p")
            return (served.text, served.tick)
        }
        clock.set(64)
        let before = try follower.mediaPlaylist("demo", rendition: "720p")
        #expect(follower.renderAhead("demo", boundary: epoch.adding(milliseconds: 66_000)))
        // Already rendered ahead from the same schedule: not again.
        #expect(!follower.renderAhead("demo", boundary: epoch.adding(milliseconds: 66_000)))
        clock.set(65.999)
        let stillBefore = try follower.mediaPlaylist("demo", rendition: "720p")
        #expect(stillBefore.text == before.text && stillBefore.tick == before.tick)
        clock.set(66)
        let atBoundary = try follower.servedMedia("demo", rendition: "720p")
        #expect(atBoundary.tick == epoch.adding(milliseconds: 66_000))
        let expected = try await fresh()
        #expect(
            atBoundary.body.getString(at: atBoundary.body.readerIndex, length: atBoundary.body.readableBytes)
                == expected.text)
        #expect(expected.text != before.text)
        // Rendered ahead for 72 s, then a cancellation in effect at 71.95 s: the window served at 72 s drops the break.
        clock.set(69)
        #expect(follower.renderAhead("demo", boundary: epoch.adding(milliseconds: 72_000)))
        clock.set(71.9)
        _ = try await handler.handle(.cancelBreak(id: "brk-1"), channel: "demo", context: context())
        try await follower.catchUp()
        clock.set(72)
        let afterCommand = try follower.mediaPlaylist("demo", rendition: "720p")
        #expect(afterCommand.text == (try await fresh()).text)
        // Rendered from the schedule with the cancellation, not the one rendered ahead before it.
        #expect(try follower.rendered("demo").version == follower.state(of: "demo")?.version)
    }
}
