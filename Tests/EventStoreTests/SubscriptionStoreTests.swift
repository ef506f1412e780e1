import EventStore
import Foundation
import HLS
import Postgres
import Schedule
import TestSupport
import Testing

/// Subscriptions, cursors and the delivery lease in PostgreSQL (Migrations/0015), on a database of their own: the
/// lease is one row per database.
@Suite("Subscription store", .enabled(if: TestDatabase.isConfigured))
struct SubscriptionStoreTests {
    static func makeStore() async throws -> PostgresSubscriptionStore {
        let url = try await TestDatabase.makeFreshDatabase()
        _ = try await Migrator.load(directory: TestDatabase.migrationsDirectory).migrate(url: url)
        return PostgresSubscriptionStore(pool: PostgresPool(url: url, maximumConnections: 4))
    }

    @Test("create, list (secrets kept for signing), delete; mistakes name the field")
    func lifecycle() async throws {
        let store = try await Self.makeStore()
        let created = try await store.create(
            name: "traffic", url: "https://traffic.example/hook", channels: ["north"], events: [.onAir, .aired],
            createdBy: "test")
        #expect(created.secret.hasPrefix("whsec_") && created.secret.count == 70)
        #expect(try await store.list() == [created])
        await #expect(throws: SubscriptionError.nameTaken("traffic")) {
            _ = try await store.create(
                name: "traffic", url: "http://x.example/", channels: [], events: [], createdBy: "t")
        }
        await #expect(
            throws: SubscriptionError.invalid(
                field: "url", reason: "\"ftp://x\" must be an absolute http(s) URL (≤ 2048 bytes)")
        ) {
            _ = try await store.create(name: "other", url: "ftp://x", channels: [], events: [], createdBy: "t")
        }
        try await store.delete(name: "traffic")
        #expect(try await store.list().isEmpty)
        await #expect(throws: SubscriptionError.unknown("traffic")) { try await store.delete(name: "traffic") }
    }

    @Test("one holder at a time; a cursor moves only under the lease, with its token, forward")
    func lease() async throws {
        let store = try await Self.makeStore()
        _ = try await store.create(name: "s", url: "http://r.example/", channels: [], events: [], createdBy: "t")
        let key = FactKey(atMilliseconds: 1000, position: 5, rank: 0)
        let first = try #require(try await store.acquireLease(holder: "a", ttlMilliseconds: 60_000))
        #expect(try await store.acquireLease(holder: "b", ttlMilliseconds: 60_000) == nil)
        #expect(try await store.acquireLease(holder: "a", ttlMilliseconds: 60_000) == first)
        #expect(
            try await store.advance(subscription: "s", channel: "north", to: key, holder: "b", token: first) == false)
        #expect(try await store.advance(subscription: "s", channel: "north", to: key, holder: "a", token: first))
        #expect(
            try await store.advance(subscription: "s", channel: "north", to: key, holder: "a", token: first) == false)
        #expect(try await store.cursors() == ["s": ["north": key]])
        // Released (or expired): taken over with a new token, and the old holder's token no longer moves a cursor.
        try await store.releaseLease(holder: "a", token: first)
        let second = try #require(try await store.acquireLease(holder: "b", ttlMilliseconds: 60_000))
        #expect(second > first)
        let later = FactKey(atMilliseconds: 2000, position: 6, rank: 0)
        #expect(
            try await store.advance(subscription: "s", channel: "north", to: later, holder: "a", token: first) == false)
        #expect(try await store.advance(subscription: "s", channel: "north", to: later, holder: "b", token: second))
        #expect(
            try await store.advance(subscription: "gone", channel: "north", to: later, holder: "b", token: second)
                == false)
        // Deleting the subscription deletes its cursors.
        try await store.delete(name: "s")
        #expect(try await store.cursors().isEmpty)
    }
}
