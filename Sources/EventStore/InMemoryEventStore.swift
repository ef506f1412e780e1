import HLS
import Schedule
import Synchronization

/// The event log in memory, with the same semantics as the PostgreSQL store. For tests and offline tools.
///
/// Every method runs under one `Mutex` and returns at once, so the store can be called without `await` too. Nothing
/// waits for appends here: followers of this store poll it (or are told to catch up, as in the tests).
public final class InMemoryEventStore: EventStore {
    private struct State {
        var events: [RecordedEvent] = []
        var versions: [ChannelID: Int64] = [:]
        var commands: [String: (hash: String, result: AppendResult)] = [:]  // by scopeKey
        var lastHash: [ChannelID: String] = [:]
    }

    private let state: Mutex<State>

    public init(events: [RecordedEvent] = []) {
        var initial = State()
        for event in events {
            initial.events.append(event)
            initial.versions[event.channel] = event.version
        }
        state = Mutex(initial)
    }

    public func append(_ request: AppendRequest) throws -> AppendResult {
        try state.withLock { state throws -> AppendResult in try Self.append(request, to: &state) }
    }

    private static func append(_ request: AppendRequest, to state: inout State) throws -> AppendResult {
        let hash = request.requestHash
        if let existing = state.commands[scopeKey(request)] {
            guard existing.hash == hash else {
                throw StoreError.commandIDReused(commandID: request.command.commandID)
            }
            var result = existing.result
            result.replayed = true
            return result
        }
        let current = state.versions[request.channel] ?? 0
        guard request.expectedVersion.admits(current) else {
            throw StoreError.versionConflict(
                channel: request.channel, expected: request.expectedVersion, actual: current)
        }
        var recorded: [RecordedEvent] = []
        var version = current
        var position = Int64(state.events.count)
        var previous = state.lastHash[request.channel] ?? HashChain.genesis(channel: request.channel)
        for event in request.events {
            version += 1
            position += 1
            var stored = RecordedEvent(
                position: position, channel: request.channel, version: version, type: event.type,
                schemaVersion: event.schemaVersion, payload: event.payload, decidedAt: request.command.decidedAt,
                actor: request.command.actor, source: request.command.source,
                commandID: request.command.commandID, reason: request.command.reason)
            stored.hash = HashChain.hash(previous: previous, event: stored)
            previous = stored.hash!
            recorded.append(stored)
        }
        state.lastHash[request.channel] = previous
        state.events.append(contentsOf: recorded)
        state.versions[request.channel] = version
        let result = AppendResult(channel: request.channel, events: recorded, version: version, replayed: false)
        state.commands[scopeKey(request)] = (hash, result)
        return result
    }

    public func previousResult(of request: AppendRequest) throws -> AppendResult? {
        try state.withLock { state throws -> AppendResult? in
            guard let existing = state.commands[Self.scopeKey(request)] else { return nil }
            guard existing.hash == request.requestHash else {
                throw StoreError.commandIDReused(commandID: request.command.commandID)
            }
            var result = existing.result
            result.replayed = true
            return result
        }
    }

    public func read(after position: Int64, through head: Int64, limit: Int) -> [RecordedEvent] {
        state.withLock { state in
            let start = Int(max(0, position))
            let end = Int(min(Int64(state.events.count), max(0, head)))
            guard start < end else { return [] }
            return Array(state.events[start..<min(end, start + max(0, limit))])
        }
    }

    public func readStream(_ channel: ChannelID, after version: Int64, limit: Int) -> [RecordedEvent] {
        state.withLock { state in
            Array(state.events.lazy.filter { $0.channel == channel && $0.version > version }.prefix(max(0, limit)))
        }
    }

    public func version(of channel: ChannelID) -> Int64 {
        state.withLock { $0.versions[channel] ?? 0 }
    }

    /// Every channel with at least one event, sorted (as `PostgresEventStore.channelIDs()`).
    public func channelIDs() -> [ChannelID] {
        state.withLock { $0.versions.filter { $0.value > 0 }.keys.sorted() }
    }

    public func headPosition() -> Int64 {
        state.withLock { Int64($0.events.count) }
    }

    /// Appends here take effect synchronously, so the whole log is known for any instant.
    public func watermark() -> Watermark {
        Watermark(head: headPosition(), knownUntil: Timestamp(milliseconds: .max))
    }

    /// Idempotency records are scoped to the channel and the actor, as in the database.
    private static func scopeKey(_ request: AppendRequest) -> String {
        request.channel.rawValue + "\u{0}" + request.command.actor + "\u{0}" + request.command.commandID
    }
}
