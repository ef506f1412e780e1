import EventStore
import HLS
import Schedule
import Postgres
import TestSupport
import Foundation
import Testing

private struct DeliberateRollback: Error {}

private actor Tally {
    var committed: [ChannelID: Int] = [:]
    var rolledBackCommands: Set<String> = []
    var conflicts = 0
    var writersDone = false

    func commit(_ channel: ChannelID, _ count: Int) { committed[channel, default: 0] += count }
    func rolledBack(_ id: String) { rolledBackCommands.insert(id) }
    func conflict() { conflicts += 1 }
    func finish() { writersDone = true }
}

@Suite("Concurrent appends")
struct ConcurrentAppendTests {
    /// 16 writers on 4 channels for 3 seconds, with transactions that take positions and then roll back mixed in;
    /// a reader polls by position up to the watermark throughout and must see every committed event once, in
    /// order, never one past a head it was given (positions are not gap-free: rolled-back appends leave holes, and
    /// appends of different channels commit in any order).
    @Test(
        "16 appenders on 4 channels: versions gap-free, a reader up to the watermark sees every event exactly once",
        arguments: StoreKind.available)
    func sixteenAppendersFourChannels(kind: StoreKind) async throws {
        // A database of its own: the rolled-back appends hold the log head across awaits, which on a loaded machine
        // would stall every other test's appends to the shared database.
        let store: any EventStore
        if kind == .postgres {
            let url = try await TestDatabase.makeFreshDatabase()
            _ = try await Migrator.load(directory: TestDatabase.migrationsDirectory).migrate(url: url)
            store = PostgresEventStore(pool: PostgresPool(url: url, maximumConnections: 24))
        } else {
            store = kind.make()
        }
        let channels = (0..<4).map { _ in uniqueChannel("race") }
        let tally = Tally()
        let startHead = try await store.headPosition()
        let deadline = ContinuousClock.now + .seconds(3)

        let reader = Task { () throws -> [RecordedEvent] in
            var last = startHead
            var seen: [RecordedEvent] = []
            while true {
                let done = await tally.writersDone
                let head = try await store.watermark().head
                let batch = try await store.read(after: last, through: head, limit: 200)
                for event in batch {
                    // Never see one twice, never go backwards, never past the head.
                    #expect(
                        event.position > last && event.position <= head,
                        "reader at \(last) (head \(head)) got position \(event.position)")
                    last = event.position
                    seen.append(event)
                }
                if batch.count < 200 {
                    // Everything up to the head is read; what no event holds below it stays empty.
                    last = max(last, head)
                    if done { return seen }
                    try await Task.sleep(for: .milliseconds(2))
                }
            }
        }

        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<16 {
                group.addTask {
                    let channel = channels[writer % 4]
                    var attempt = 0
                    // At least 12 attempts each, however slow a loaded machine makes them, so the writers do race.
                    while ContinuousClock.now < deadline || attempt < 12 {
                        attempt += 1
                        let version = try await store.version(of: channel)
                        // Let the other writers run between reading the version and appending against it: the
                        // in-memory store answers without suspending, so on two cores its writers raced only by
                        // chance (a run without one conflict failed below).
                        await Task.yield()
                        let events = (0..<(1 + attempt % 3)).map {
                            NewEvent(type: "Noted", payload: #"{"writer":\#(writer),"attempt":\#(attempt),"i":\#($0)}"#)
                        }
                        let request = makeRequest(channel: channel, expected: .exactly(version), events: events)
                        if let postgres = store as? PostgresEventStore, attempt % 4 == 1 {
                            // Take positions and versions inside a real append, then roll it back (every writer
                            // starts with one, so rollbacks happen however loaded the machine is).
                            _ = try? await postgres.pool.withConnection { connection in
                                try await connection.withTransaction { connection in
                                    _ = try await PostgresEventStore.append(request, on: connection)
                                    try await Task.sleep(for: .milliseconds(1))
                                    throw DeliberateRollback()
                                }
                            }
                            await tally.rolledBack(request.command.commandID)
                            continue
                        }
                        do {
                            let result = try await store.append(request)
                            await tally.commit(channel, result.events.count)
                        } catch StoreError.versionConflict {
                            await tally.conflict()
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        await tally.finish()
        let seen = try await reader.value

        let committed = await tally.committed
        let rolledBack = await tally.rolledBackCommands
        #expect(await tally.conflicts > 0, "16 writers on 4 channels should have raced at least once")
        for channel in channels {
            let stream = try await store.readStream(channel, after: 0, limit: 100_000)
            #expect(stream.count == committed[channel] ?? 0)
            #expect(stream.map(\.version) == Array(1...Int64(max(1, stream.count))).prefix(stream.count).map { $0 })
            let seenHere = seen.filter { $0.channel == channel }
            #expect(seenHere == stream, "the position reader saw exactly the committed events of \(channel)")
            #expect(
                zip(stream, stream.dropFirst()).allSatisfy { $0.position < $1.position },
                "a channel's positions grow with its versions")
        }
        #expect(seen.filter { rolledBack.contains($0.commandID) }.isEmpty, "rolled-back events must never be read")
        if kind == .postgres { #expect(!rolledBack.isEmpty) }
        #expect(Set(seen.map(\.position)).count == seen.count)
    }
}
