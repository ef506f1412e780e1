import EventStore
import HLS
import TestSupport
import Foundation
import Testing

@Suite("EventStore contract (in-memory and PostgreSQL)")
struct EventStoreContractTests {
    @Test(
        "appended events read back field for field, with gap-free versions and growing positions",
        arguments: StoreKind.available)
    func appendAndRead(kind: StoreKind) async throws {
        let store = kind.make()
        let channel = uniqueChannel()
        let tricky =
            #"{"text":"Robert'); DROP TABLE cueline_events;--","quote":"\"","emoji":"⚽️","nested":{"a":[1,2.5]}}"#
        let decided = wallClockMilliseconds() + 15_123
        let result = try await store.append(
            makeRequest(
                channel: channel, expected: .noStream,
                events: [
                    NewEvent(type: "Noted", payload: tricky), NewEvent(type: "Noted", schemaVersion: 2, payload: "{}"),
                ],
                actor: "op'; --", reason: "goal \"scored\"", at: decided))
        #expect(result.version == 2)
        #expect(result.replayed == false)
        #expect(result.events.map(\.version) == [1, 2])
        #expect(result.events[1].position > result.events[0].position)

        let read = try await store.readStream(channel, after: 0, limit: 10)
        #expect(read == result.events)
        #expect(read[0].payload == tricky)
        #expect(read[0].actor == "op'; --")
        #expect(read[0].reason == "goal \"scored\"")
        #expect(read[0].decidedAt == Timestamp(milliseconds: decided))
        #expect(read[1].schemaVersion == 2)
        #expect(read[1].type == "Noted")
        #expect(try await store.version(of: channel) == 2)
        #expect(try await store.version(of: uniqueChannel()) == 0)
        #expect(try await store.readStream(channel, after: 1, limit: 10).map(\.version) == [2])
    }

    @Test("a stale expected version is a conflict and writes nothing", arguments: StoreKind.available)
    func expectedVersionConflict(kind: StoreKind) async throws {
        let store = kind.make()
        let channel = uniqueChannel()
        _ = try await store.append(makeRequest(channel: channel, expected: .noStream))
        let head = try await store.headPosition()

        await #expect(throws: StoreError.versionConflict(channel: channel, expected: .noStream, actual: 1)) {
            try await store.append(makeRequest(channel: channel, expected: .noStream))
        }
        await #expect(throws: StoreError.versionConflict(channel: channel, expected: .exactly(0), actual: 1)) {
            try await store.append(makeRequest(channel: channel, expected: .exactly(0)))
        }
        #expect(try await store.version(of: channel) == 1)
        if kind == .memory { #expect(try await store.headPosition() == head) }

        let next = try await store.append(makeRequest(channel: channel, expected: .exactly(1)))
        #expect(next.version == 2)
        let any = try await store.append(makeRequest(channel: channel, expected: .any))
        #expect(any.version == 3)
    }

    @Test("a retried command returns the original result and is not applied twice", arguments: StoreKind.available)
    func idempotentRetry(kind: StoreKind) async throws {
        let store = kind.make()
        let channel = uniqueChannel()
        let request = makeRequest(channel: channel, expected: .noStream, commandID: "cmd-" + UUID().uuidString)
        let first = try await store.append(request)
        let retry = try await store.append(request)
        #expect(retry.replayed)
        #expect(retry.events == first.events)
        #expect(retry.version == first.version)
        #expect(try await store.version(of: channel) == 1)
        #expect(try await store.readStream(channel, after: 0, limit: 10).count == 1)
        #expect(try await store.previousResult(of: request)?.events == first.events)
        #expect(try await store.previousResult(of: makeRequest(channel: channel, expected: .any)) == nil)

        // A retry succeeds even after others appended: it answers what happened the first time.
        _ = try await store.append(makeRequest(channel: channel, expected: .exactly(1)))
        let late = try await store.append(request)
        #expect(late.replayed)
        #expect(late.version == 1)
        #expect(try await store.version(of: channel) == 2)
    }

    @Test("the same command id with a different request is refused", arguments: StoreKind.available)
    func commandIDReused(kind: StoreKind) async throws {
        let store = kind.make()
        let channel = uniqueChannel()
        let id = "cmd-" + UUID().uuidString
        _ = try await store.append(makeRequest(channel: channel, expected: .any, commandID: id, request: "place 30s"))
        await #expect(throws: StoreError.commandIDReused(commandID: id)) {
            try await store.append(makeRequest(channel: channel, expected: .any, commandID: id, request: "place 60s"))
        }
        #expect(try await store.version(of: channel) == 1)
    }

    @Test("idempotency keys are scoped to the channel and the actor", arguments: StoreKind.available)
    func commandIDScope(kind: StoreKind) async throws {
        // Issue 11, defect 13: with global keys one channel's token could make another channel's command a 409.
        let store = kind.make()
        let (channel, other) = (uniqueChannel(), uniqueChannel())
        let id = "shared-key"
        let mine = try await store.append(
            makeRequest(channel: channel, expected: .any, commandID: id, request: "place 30s"))
        let theirs = try await store.append(
            makeRequest(channel: other, expected: .any, commandID: id, request: "place 60s"))
        let another = try await store.append(
            makeRequest(channel: channel, expected: .any, commandID: id, request: "place 90s", actor: "bob"))
        #expect(!mine.replayed && !theirs.replayed && !another.replayed)
        #expect(try await store.version(of: channel) == 2)
        #expect(try await store.version(of: other) == 1)
        let retry = try await store.append(
            makeRequest(channel: channel, expected: .any, commandID: id, request: "place 30s"))
        #expect(retry.replayed && retry.events == mine.events)
    }

    @Test("the same command sent concurrently is applied once", arguments: StoreKind.available)
    func concurrentRetries(kind: StoreKind) async throws {
        let store = kind.make()
        let channel = uniqueChannel()
        let request = makeRequest(channel: channel, expected: .noStream, commandID: "cmd-" + UUID().uuidString)
        let results = try await withThrowingTaskGroup(of: AppendResult.self) { group in
            for _ in 0..<8 { group.addTask { try await store.append(request) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.filter { !$0.replayed }.count == 1)
        #expect(Set(results.map(\.events)).count == 1)
        #expect(try await store.version(of: channel) == 1)
    }

    @Test("a command with no events is still remembered for retries", arguments: StoreKind.available)
    func emptyCommand(kind: StoreKind) async throws {
        let store = kind.make()
        let channel = uniqueChannel()
        let request = makeRequest(channel: channel, expected: .any, events: [], request: "noop")
        let first = try await store.append(request)
        #expect(first.events.isEmpty)
        #expect(first.version == 0)
        #expect(try await store.append(request).replayed)
    }

    @Test(
        "every event is chained to the previous one of its channel, and an edit breaks the chain there",
        arguments: StoreKind.available)
    func hashChain(kind: StoreKind) async throws {
        let store = kind.make()
        let channel = uniqueChannel()
        _ = try await store.append(
            makeRequest(
                channel: channel, expected: .noStream,
                events: [NewEvent(type: "A", payload: "{}"), NewEvent(type: "B", payload: #"{"x":1}"#)]))
        _ = try await store.append(makeRequest(channel: channel, expected: .exactly(2), reason: "why"))
        let events = try await store.readStream(channel, after: 0, limit: 10)
        #expect(events.allSatisfy { $0.hash != nil })
        let clean = HashChain.verify(events)
        #expect(clean.checked == 3 && clean.firstBreak == nil)
        var tampered = events
        tampered[1].payload = #"{"x":2}"#
        #expect(HashChain.verify(tampered).firstBreak?.event.version == 2)
        var reordered = events
        reordered.swapAt(1, 2)
        #expect(HashChain.verify(reordered).firstBreak != nil)
    }
}
