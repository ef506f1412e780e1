import EventStore
import HLS
import Projector
import Schedule
import TestSupport
import Testing

/// The follower keeps no history: a settled state plus the few events decided after the last tick. What it serves
/// must still be exactly `fold(asOf: tick)` of the whole log, which replay uses.
@Suite("Follower without history")
struct FollowerSettleTests {
    @Test(
        "events decided out of version order: every tick served equals replay of the whole log, with windows rendered ahead and served again within a window",
        arguments: [1, 2, 3, 4, 5, 6, 7, 8])
    func outOfOrderDecisions(seed: UInt64) async throws {
        var random = SplitMix64(seed: seed)
        let store = InMemoryEventStore()
        let clock = TestClock()
        let follower = ChannelFollower(store: store, wakeups: { AsyncStream { _ in } }, clock: clock.read)
        var version: Int64 = 0
        func append(_ event: ScheduleEvent, decidedAt: Timestamp) async throws {
            let encoded = EventCodec.encode(event)
            _ = try store.append(
                AppendRequest(
                    channel: "demo", expectedVersion: .exactly(version),
                    events: [
                        NewEvent(type: encoded.type, schemaVersion: encoded.schemaVersion, payload: encoded.payload)
                    ],
                    command: CommandMetadata(
                        commandID: "c\(version)", request: "\(version)", actor: "op", source: "test",
                        decidedAt: decidedAt)))
            version += 1
        }
        try await append(.channelCreated(config()), decidedAt: epoch)
        var tick = 60.0
        var placed: [BreakID] = []
        for step in 0..<60 {
            // A command decided up to 3 s after the current tick (a long effect delay after a late decision), so
            // events later in version order are sometimes decided earlier than the ones before them.
            let decided = epoch.adding(milliseconds: Int64((tick + Double(random.next() % 3000) / 1000) * 1000))
            switch random.next() % 3 {
            case 0, 1:
                let id = BreakID("b\(step)")!
                // Soon enough to be in the window or its horizon, so that an event left out changes the bytes.
                let start = epoch.adding(milliseconds: Int64((tick + 3 + Double(random.next() % 8000) / 1000) * 1000))
                try await append(
                    .breakPlaced(
                        BreakSpec(
                            id: id, start: start, plannedDurationMilliseconds: 4_000,
                            asset: .uri("https://a.example/\(id).m3u8"), options: InterstitialOptions())),
                    decidedAt: decided)
                placed.append(id)
            default:
                guard let id = placed.randomElement(using: &random) else { continue }
                try await append(.breakCancelled(id: id), decidedAt: decided)
            }
            try await follower.catchUp()
            // The next boundary's window rendered ahead now, as the ticker does, and the channel served a few times
            // as the tick moves on with no new event: a window kept from an earlier instant (ahead or cached) must
            // not be served once an event decided since then is in effect, whatever its version.
            if random.next() % 2 == 0 {
                follower.renderAhead(
                    "demo",
                    boundary: Timeline(config()).nextBoundary(after: epoch.adding(milliseconds: Int64(tick * 1000))))
            }
            for _ in 0..<4 {
                tick += Double(random.next() % 1000) / 1000
                clock.set(tick)
                let served = try follower.mediaPlaylist("demo", rendition: "720p")
                let replayed = try Replay.playlist(
                    "demo", try await Replay.events("demo", from: store), at: served.tick, rendition: "720p",
                    multivariant: false)
                #expect(served.text == replayed, "step \(step), tick \(served.tick)")
                // And what a follower started now serves: every instance serves the same bytes at the same instant
                // (a kept window that misses an event in effect now would only match replay at its own older tick).
                let fresh = ChannelFollower(store: store, wakeups: { AsyncStream { _ in } }, clock: clock.read)
                try await fresh.catchUp()
                #expect(
                    served.text == (try fresh.mediaPlaylist("demo", rendition: "720p")).text,
                    "step \(step), tick \(tick)")
            }
        }
    }
}
