import EventStore
import HLS
import Projector
import Schedule
import Testing

/// The follower keeps no history: a settled state plus the few events decided after the last tick. What it serves
/// must still be exactly `fold(asOf: tick)` of the whole log, which replay uses.
@Suite("Follower without history")
struct FollowerSettleTests {
    @Test("events decided out of version order: every tick served equals replay of the whole log", arguments: [1, 2, 3, 4, 5])
    func outOfOrderDecisions(seed: UInt64) async throws {
        var random = SplitMix(seed: seed)
        let store = InMemoryEventStore()
        let clock = TestClock()
        let follower = ChannelFollower(store: store, wakeups: { AsyncStream { _ in } }, clock: clock.read)
        var version: Int64 = 0
        func append(_ event: ScheduleEvent, decidedAt: Timestamp) async throws {
            let encoded = EventCodec.encode(event)
            _ = try await store.append(AppendRequest(
                channel: "demo", expectedVersion: .exactly(version),
                events: [NewEvent(type: encoded.type, schemaVersion: encoded.schemaVersion, payload: encoded.payload)],
                command: CommandMetadata(commandID: "c\(version)", request: "\(version)", actor: "op", source: "test", decidedAt: decidedAt)))
            version += 1
        }
        try await append(.channelCreated(config()), decidedAt: epoch)
        var tick = 60.0
        var placed: [String] = []
        for step in 0..<60 {
            // A command decided up to 3 s after the current tick (a long effect delay after a late decision), so
            // events later in version order are sometimes decided earlier than the ones before them.
            let decided = epoch.adding(milliseconds: Int64((tick + Double(random.next() % 3000) / 1000) * 1000))
            switch random.next() % 3 {
            case 0, 1:
                let id = "b\(step)"
                let start = epoch.adding(milliseconds: Int64((tick + 20 + Double(step) * 40) * 1000))
                try await append(.breakPlaced(BreakSpec(id: id, start: start, plannedDurationMilliseconds: 30_000, asset: .uri("https://a.example/\(id).m3u8"), options: InterstitialOptions())), decidedAt: decided)
                placed.append(id)
            default:
                guard let id = placed.randomElement(using: &random) else { continue }
                try await append(.breakCancelled(id: id), decidedAt: decided)
            }
            try await follower.catchUp()
            tick += Double(random.next() % 1500) / 1000
            clock.set(tick)
            let served = try follower.mediaPlaylist("demo", rendition: "720p")
            let replayed = try Replay.playlist("demo", try await Replay.events("demo", from: store), at: served.tick, rendition: "720p", multivariant: false)
            #expect(served.text == replayed, "step \(step), tick \(served.tick)")
        }
    }
}

/// A small deterministic generator, so a failing seed can be run again.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
