import EventStore
import Foundation
import HLS
import Projector
import Schedule
import Logging
import Synchronization
import Testing

/// The facts notifications carry, derived from a log made by the command handler (6 s segments from the epoch).
@Suite("Notification facts")
struct NotificationFactTests {
    /// brk-1 at 90 s for 30 s (runs to its end), brk-2 at 150 s for 30 s limited to 12 s at 160 s, brk-3 at 240 s
    /// cancelled at 100 s.
    static func log() async throws -> [RecordedScheduleEvent] {
        let store = InMemoryEventStore()
        let (handler, clock) = try await channelWithBreak(store)
        for (id, start) in [("brk-2", 150_000), ("brk-3", 240_000)] {
            _ = try await handler.handle(
                .placeBreak(
                    PlaceBreak(
                        id: BreakID(id)!, start: .at(epoch.adding(milliseconds: Int64(start))),
                        plannedDurationMilliseconds: 30_000, asset: .uri("https://a.example/ad.m3u8"))),
                channel: "demo", context: context())
        }
        clock.set(100)
        _ = try await handler.handle(.cancelBreak(id: "brk-3"), channel: "demo", context: context())
        clock.set(160)
        _ = try await handler.handle(
            .setPlayoutLimit(id: "brk-2", limitMilliseconds: 12_000), channel: "demo", context: context())
        return try await store.events(of: "demo").map(ChannelLoader.decode)
    }

    static func derive(_ events: [RecordedScheduleEvent], steps: [Int64]) -> [NotificationFact] {
        var deriver = FactDeriver(channel: "demo")
        for event in events { deriver.add(event) }
        return steps.flatMap { deriver.advance(to: epoch.adding(milliseconds: $0)) }
    }

    @Test("commanded and timeline facts, in key order, with the instants the playlists show them")
    func sequence() async throws {
        let facts = Self.derive(try await Self.log(), steps: [300_000])
        let seen = facts.map {
            "\($0.breakID?.rawValue ?? "-") \($0.kind.rawValue) \($0.at.milliseconds(since: epoch) / 1000)"
        }
        #expect(
            seen == [
                "brk-1 placed 60", "brk-2 placed 60", "brk-3 placed 60", "brk-1 on-air 90", "brk-3 cancelled 100",
                "brk-3 removed 100", "brk-1 aired 120", "brk-2 on-air 150", "brk-2 limited 160",
                "brk-2 ended-early 162",
            ])
        #expect(zip(facts, facts.dropFirst()).allSatisfy { $0.key < $1.key })
        // On air once the first segment holding the start has ended (96 s); ended early at 162 s, a boundary.
        let onAir = try #require(facts.first { $0.kind == .onAir && $0.breakID == "brk-1" })
        #expect(onAir.key.atMilliseconds == epoch.adding(milliseconds: 96_000).milliseconds)
        let early = try #require(facts.first { $0.kind == .endedEarly })
        #expect(early.key.atMilliseconds == epoch.adding(milliseconds: 162_000).milliseconds)
        #expect(early.playoutLimitMilliseconds == 12_000 && early.how == "playout-limit")
        #expect(Set(facts.map(\.deliveryID)).count == facts.count)
    }

    @Test(
        "advancing in any steps derives the same facts: instances and replays agree",
        arguments: [
            [Int64](stride(from: 0, through: 300_000, by: 1_000)), [95_999, 96_000, 161_999, 300_000],
            [
                59_000, 120_000, 120_001, 300_000,
            ],
        ])
    func steps(_ steps: [Int64]) async throws {
        let events = try await Self.log()
        #expect(Self.derive(events, steps: steps) == Self.derive(events, steps: [300_000]))
    }

    @Test("a log derived a page at a time, each step as far as its events settle, gives the same facts")
    func settledSteps() async throws {
        let events = try await Self.log()
        let end = epoch.adding(milliseconds: 300_000)
        var deriver = FactDeriver(channel: "demo")
        var facts: [NotificationFact] = []
        for event in events {
            deriver.add(event)
            facts += deriver.advance(to: min(end, deriver.settled))
        }
        facts += deriver.advance(to: end)
        #expect(facts == Self.derive(events, steps: [300_000]))
    }

    @Test("nothing is derived past the instant advanced to; an event decided later is held until then")
    func holdsTheFuture() async throws {
        let events = try await Self.log()
        let facts = Self.derive(events, steps: [99_999])
        #expect(facts.allSatisfy { $0.key.atMilliseconds <= epoch.adding(milliseconds: 99_999).milliseconds })
        #expect(!facts.contains { $0.kind == .cancelled })
        #expect(facts.map(\.kind) == [.placed, .placed, .placed, .onAir])
    }

    @Test("the body is stable JSON and the signature is the hooks' scheme")
    func bodyAndSignature() async throws {
        let facts = Self.derive(try await Self.log(), steps: [300_000])
        let early = try #require(facts.first { $0.kind == .endedEarly })
        let body = String(decoding: early.body(subscription: "traffic"), as: UTF8.self)
        #expect(body == String(decoding: early.body(subscription: "traffic"), as: UTF8.self))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])
        #expect(object["type"] as? String == "ended-early")
        #expect(object["category"] as? String == "timeline")
        #expect(object["break_id"] as? String == "brk-2")
        #expect(object["at"] as? String == "2026-03-01T12:02:42.000Z")
        #expect(object["delivery"] as? String == early.deliveryID)
        #expect((object["playout_limit"] as? NSNumber)?.doubleValue == 12)
        // HMAC-SHA256("key", "1.x"), computed independently (Python's hmac module).
        #expect(
            NotificationPost.signature(secret: "key", timestamp: 1, body: Array("x".utf8))
                == "sha256=fc4913c41a7bf793267e2a384f3261c9436ec2cd097bd745e7b0d99113f510ec")
    }

    /// The log of ``log()`` with refused commands among it: a second placement of brk-1 at 70 s, cancelling an unknown
    /// break at 100 s (the same instant as brk-3's cancellation), a limit on the cancelled brk-3 at 200 s, and a
    /// command on a channel that does not exist at 80 s (never notified).
    static func feedWithRefusals() async throws -> (InMemoryEventStore, InMemoryRefusalStore) {
        let store = InMemoryEventStore()
        let refusals = InMemoryRefusalStore()
        let (handler, clock) = try await channelWithBreak(store, refusals: refusals)
        let place = { (id: String, start: Int64) in
            PlaceBreak(
                id: BreakID(id)!, start: .at(epoch.adding(milliseconds: start)), plannedDurationMilliseconds: 30_000,
                asset: .uri("https://a.example/ad.m3u8"))
        }
        for (id, start) in [("brk-2", Int64(150_000)), ("brk-3", 240_000)] {
            _ = try await handler.handle(.placeBreak(place(id, start)), channel: "demo", context: context())
        }
        clock.set(70)
        _ = try? await handler.handle(.placeBreak(place("brk-1", 95_000)), channel: "demo", context: context())
        clock.set(80)
        _ = try? await handler.handle(.cancelBreak(id: "brk-1"), channel: "nowhere", context: context())
        clock.set(100)
        _ = try await handler.handle(.cancelBreak(id: "brk-3"), channel: "demo", context: context())
        _ = try? await handler.handle(.cancelBreak(id: "brk-9"), channel: "demo", context: context())
        clock.set(160)
        _ = try await handler.handle(
            .setPlayoutLimit(id: "brk-2", limitMilliseconds: 12_000), channel: "demo", context: context())
        clock.set(200)
        _ = try? await handler.handle(
            .setPlayoutLimit(id: "brk-3", limitMilliseconds: 5_000), channel: "demo", context: context())
        return (store, refusals)
    }

    /// The facts a feed releases when polled at each of `steps` (a watermark's `knownUntil` there).
    static func feed(_ store: InMemoryEventStore, _ refusals: InMemoryRefusalStore, steps: [Int64]) async throws
        -> [NotificationFact]
    {
        let until = Mutex(Int64(0))
        let feed = NotificationFeed(
            store: store, refusals: refusals,
            watermark: {
                Watermark(head: store.headPosition(), knownUntil: epoch.adding(milliseconds: until.withLock { $0 }))
            }, pageSize: 2, logger: Logger(label: "test"))
        for step in steps {
            until.withLock { $0 = step }
            try await feed.poll(floor: { _ in FactKey(atMilliseconds: .min, position: .min, rank: .min) })
        }
        var facts: [NotificationFact] = []
        var cursor = FactKey(atMilliseconds: .min, position: .min, rank: .min)
        while let next = feed.next(on: "demo", after: cursor, where: { _ in true }) {
            facts.append(next)
            cursor = next.key
        }
        #expect(feed.channels == ["demo"])
        return facts
    }

    @Test("refused commands are released with their channel's facts, in order, whatever the steps polled")
    func refusedInOrder() async throws {
        let (store, refusals) = try await Self.feedWithRefusals()
        let facts = try await Self.feed(store, refusals, steps: [300_000])
        let seen = facts.map {
            "\($0.breakID?.rawValue ?? "-") \($0.kind.rawValue) \($0.at.milliseconds(since: epoch) / 1000)"
        }
        #expect(
            seen == [
                "brk-1 placed 60", "brk-2 placed 60", "brk-3 placed 60", "brk-1 refused 70", "brk-1 on-air 90",
                "brk-9 refused 100", "brk-3 cancelled 100", "brk-3 removed 100", "brk-1 aired 120", "brk-2 on-air 150",
                "brk-2 limited 160", "brk-2 ended-early 162", "brk-3 refused 200",
            ])
        #expect(zip(facts, facts.dropFirst()).allSatisfy { $0.key < $1.key })
        #expect(Set(facts.map(\.deliveryID)).count == facts.count)
        for steps in [
            [Int64](stride(from: 0, through: 300_000, by: 5_000)), [69_999, 70_000, 99_999, 100_000, 300_000],
            [70_000, 70_001, 200_000, 300_000],
        ] {
            #expect(try await Self.feed(store, refusals, steps: steps) == facts)
        }
        // A refusal's body: no log position or version; the refusal's id, the command, its id and the reason.
        let refused = try #require(facts.first { $0.kind == .refused })
        #expect(refused.deliveryID == "demo/refusal-1/refused")
        let body = try #require(
            try JSONSerialization.jsonObject(with: Data(refused.body(subscription: "traffic"))) as? [String: Any])
        #expect(body["category"] as? String == "commanded")
        #expect(body["command"] as? String == "place-break")
        #expect(body["refusal"] as? Int == 1)
        #expect(body["command_id"] as? String != nil)
        #expect((body["reason"] as? String)?.contains("brk-1") == true)
        #expect(body["position"] == nil && body["version"] == nil)
    }
}
