import EventStore
import Foundation
import HLS
import Schedule
import TestSupport
import Testing

/// The refusal and render-sample stores every contract test runs against.
enum AuditStoreKind: String, CustomStringConvertible, Sendable {
    case memory, postgres

    static var available: [AuditStoreKind] { TestDatabase.isConfigured ? [.memory, .postgres] : [.memory] }

    func refusals() -> any RefusalStore {
        switch self {
        case .memory: return InMemoryRefusalStore()
        case .postgres: return PostgresRefusalStore(pool: TestDatabase.makeStore().pool)
        }
    }

    func samples() -> any RenderSampleStore {
        switch self {
        case .memory: return InMemoryRenderSampleStore()
        case .postgres: return PostgresRenderSampleStore(pool: TestDatabase.makeStore().pool)
        }
    }

    var description: String { rawValue }
}

@Suite("RefusalStore contract (in-memory and PostgreSQL)")
struct RefusalStoreContractTests {
    @Test(
        "refused commands read back field for field, per channel, in decision order",
        arguments: AuditStoreKind.available)
    func recordAndRead(kind: AuditStoreKind) async throws {
        let store = kind.refusals()
        let channel = uniqueChannel()
        let now = wallClockMilliseconds()
        // The database dates a refusal by its own clock when the given time is not plausible (Migrations/0005): these
        // are close to now, so both stores keep them as given.
        let later = Refusal(
            channel: channel, commandID: "c2", command: "cancel-break", request: #"{"cancelBreak":{"id":"y"}}"#,
            actor: "mallory'; --",
            source: "http", reason: "break y does not exist", decidedAt: Timestamp(milliseconds: now + 80))
        let earlier = Refusal(
            channel: channel, commandID: "c1", command: "set-playout-limit", request: #"{"limit":{"id":"x"}}"#,
            actor: "eve",
            source: "cli", reason: "break x is not on air \"yet\"", decidedAt: Timestamp(milliseconds: now + 50))
        try await store.recordRefusal(later)
        try await store.recordRefusal(earlier)
        try await store.recordRefusal(
            Refusal(
                channel: uniqueChannel(), commandID: "c3", command: "cancel-break", request: "{}", actor: "a",
                source: "http",
                reason: "elsewhere", decidedAt: Timestamp(milliseconds: now + 60)))
        #expect(try await store.refusals(of: channel) == [earlier, later])
        #expect(try await store.refusals(of: uniqueChannel()).isEmpty)
    }

    @Test(
        "refusals are read by the instant they are known at, a page at a time, never twice, none past the bound",
        arguments: AuditStoreKind.available)
    func knownRefusals(kind: AuditStoreKind) async throws {
        let store = kind.refusals()
        let channel = uniqueChannel()
        let now = wallClockMilliseconds()
        // Read from just before the first, so that another test's refusals in the same database are few.
        let start = RefusalMark(knownMilliseconds: now - 1, id: .max)
        var recorded: [Refusal] = []
        // The break named on either path `Refusal.breakID` reads, or none.
        let requests = [
            #"{"cancelBreak":{"id":"b0"}}"#, #"{"placeBreak":{"_0":{"id":"b1","start":"x"}}}"#,
            #"{"cancelCurrentEvent":{}}"#,
        ]
        for (index, offset) in [40, 10, 30].enumerated() {
            let refusal = Refusal(
                channel: channel, commandID: "k\(index)", command: "cancel-break", request: requests[index],
                actor: "eve", source: "http", reason: "no such break",
                decidedAt: Timestamp(milliseconds: now + Int64(offset)))
            try await store.recordRefusal(refusal)
            recorded.append(refusal)
        }
        var mark = start
        var read: [KnownRefusal] = []
        while true {
            let page = try await store.knownRefusals(
                after: mark, through: Timestamp(milliseconds: now + 60_000), limit: 2)
            #expect(page.count <= 2)
            #expect(zip([mark] + page.map(\.mark), page.map(\.mark)).allSatisfy { $0 < $1 })
            read += page
            guard let last = page.last else { break }
            mark = last.mark
        }
        let mine = read.filter { $0.refusal.channel == channel }
        // Each once, as recorded (without the stored request: the break it named instead), known no earlier than its
        // decision.
        #expect(mine.count == recorded.count)
        let stripped = recorded.map { refusal -> Refusal in
            var read = refusal
            read.request = ""
            return read
        }
        #expect(Set(mine.map(\.refusal)) == Set(stripped))
        let named = Dictionary(uniqueKeysWithValues: mine.map { ($0.refusal.commandID, $0.breakID ?? "-") })
        #expect(named == ["k0": "b0", "k1": "b1", "k2": "-"])
        #expect(mine.allSatisfy { $0.knownAt >= $0.refusal.decidedAt })
        #expect(Set(read.map(\.id)).count == read.count)
        // Nothing known after the bound is read.
        let bounded = try await store.knownRefusals(
            after: start, through: Timestamp(milliseconds: now + 20), limit: 100)
        #expect(!bounded.contains { $0.refusal.channel == channel })
    }

    @Test("a refusal recorded while the log head is held answers within a second, kept but never notified")
    func refusalWhileHeadHeld() async throws {
        guard TestDatabase.isConfigured else { return }
        let holder = TestDatabase.makeStore()
        let store = PostgresRefusalStore(pool: TestDatabase.makeStore().pool)
        let channel = uniqueChannel()
        let refusal = Refusal(
            channel: channel, commandID: "h1", command: "cancel-break", request: "{}", actor: "eve", source: "http",
            reason: "no", decidedAt: Timestamp(milliseconds: wallClockMilliseconds()))
        let took = try await holder.pool.withConnection { connection in
            // What a watermark takes, held by an operator's open transaction.
            _ = try await connection.query("BEGIN")
            _ = try await connection.query("LOCK TABLE cueline_log_head IN SHARE MODE")
            let started = ContinuousClock.now
            try await store.recordRefusal(refusal)
            let took = ContinuousClock.now - started
            _ = try await connection.query("ROLLBACK")
            return took
        }
        #expect(took >= .milliseconds(900) && took < .milliseconds(2500), "\(took)")
        #expect(try await store.refusals(of: channel) == [refusal])
        let known = try await store.knownRefusals(
            after: RefusalMark(knownMilliseconds: refusal.decidedAt.milliseconds - 60_000, id: 0),
            through: Timestamp(milliseconds: .max), limit: 100_000)
        #expect(!known.contains { $0.refusal.channel == channel })
    }

    @Test("a refusal recorded after a watermark is known after it, even dated 20 s before")
    func knownAfterWatermark() async throws {
        guard TestDatabase.isConfigured else { return }
        let events = TestDatabase.makeStore()
        let store = PostgresRefusalStore(pool: events.pool)
        let channel = uniqueChannel()
        let watermark = try await events.watermark()
        try await store.recordRefusal(
            Refusal(
                channel: channel, commandID: "w1", command: "cancel-break", request: "{}", actor: "eve",
                source: "http", reason: "no", decidedAt: Timestamp(milliseconds: wallClockMilliseconds() - 20_000)))
        let read = try await store.knownRefusals(
            after: RefusalMark(knownMilliseconds: watermark.knownUntil.milliseconds - 30_000, id: 0),
            through: Timestamp(milliseconds: .max), limit: 10_000
        ).filter { $0.refusal.channel == channel }
        let refusal = try #require(read.first)
        #expect(read.count == 1)
        #expect(refusal.knownAt > watermark.knownUntil)
        // The decision keeps the time given (within 30 s of the database's clock), the known instant does not.
        #expect(refusal.refusal.decidedAt < watermark.knownUntil)
    }
}

@Suite("RenderSampleStore contract (in-memory and PostgreSQL)")
struct RenderSampleStoreContractTests {
    @Test(
        "samples are kept once per channel, tick and rendition, oldest first, at most the limit",
        arguments: AuditStoreKind.available)
    func recordAndRead(kind: AuditStoreKind) async throws {
        let store = kind.samples()
        let channel = uniqueChannel()
        let now = wallClockMilliseconds()
        func sample(_ offset: Int64, _ rendition: Identifier, _ digit: String = "ab") -> RenderSample {
            RenderSample(
                channel: channel, tick: Timestamp(milliseconds: now - 10_000 + offset), rendition: rendition,
                rendererVersion: 1,
                sha256: String(repeating: digit, count: 32))
        }
        try await store.recordRenderSamples([sample(2000, "720p"), sample(2000, "720p")])
        try await store.recordRenderSamples([sample(1000, "720p"), sample(1000, "360p")])
        // Same channel, tick and rendition: the first digest recorded stays.
        try await store.recordRenderSamples([sample(2000, "720p", "cd")])
        try await store.recordRenderSamples([])
        #expect(
            try await store.renderSamples(of: channel, limit: 10) == [
                sample(1000, "360p"), sample(1000, "720p"), sample(2000, "720p"),
            ])
        #expect(try await store.renderSamples(of: channel, limit: 2) == [sample(1000, "360p"), sample(1000, "720p")])
        #expect(try await store.renderSamples(of: uniqueChannel(), limit: 10).isEmpty)
    }
}
