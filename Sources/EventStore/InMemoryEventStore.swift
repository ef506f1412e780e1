import HLS

/// The event log in memory, with the same semantics as the PostgreSQL store. For tests and offline tools.
public actor InMemoryEventStore: EventStore {
    private var events: [RecordedEvent] = []
    private var versions: [String: Int64] = [:]
    private var commands: [String: (hash: String, result: AppendResult)] = [:]  // by scopeKey
    private var waiters: [CheckedContinuation<Void, Never>] = []
    private var lastHash: [String: String] = [:]
    private var refused: [Refusal] = []
    private var samples: [RenderSample] = []

    public init(events: [RecordedEvent] = []) {
        for event in events {
            self.events.append(event)
            versions[event.channel] = event.version
        }
    }

    public func append(_ request: AppendRequest) throws -> AppendResult {
        let hash = request.requestHash
        if let existing = commands[Self.scopeKey(request)] {
            guard existing.hash == hash else {
                throw StoreError.commandIDReused(commandID: request.command.commandID)
            }
            var result = existing.result
            result.replayed = true
            return result
        }
        let current = versions[request.channel] ?? 0
        guard request.expectedVersion.admits(current) else {
            throw StoreError.versionConflict(
                channel: request.channel, expected: request.expectedVersion, actual: current)
        }
        var recorded: [RecordedEvent] = []
        var version = current
        var position = Int64(events.count)
        var previous = lastHash[request.channel] ?? HashChain.genesis(channel: request.channel)
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
        lastHash[request.channel] = previous
        events.append(contentsOf: recorded)
        versions[request.channel] = version
        let result = AppendResult(channel: request.channel, events: recorded, version: version, replayed: false)
        commands[Self.scopeKey(request)] = (hash, result)
        if !recorded.isEmpty {
            waiters.forEach { $0.resume() }
            waiters.removeAll()
        }
        return result
    }

    public func previousResult(of request: AppendRequest) throws -> AppendResult? {
        guard let existing = commands[Self.scopeKey(request)] else { return nil }
        guard existing.hash == request.requestHash else { throw StoreError.commandIDReused(commandID: request.command.commandID) }
        var result = existing.result
        result.replayed = true
        return result
    }

    public func read(after position: Int64, limit: Int) -> [RecordedEvent] {
        let start = Int(max(0, position))
        guard start < events.count else { return [] }
        return Array(events[start..<min(events.count, start + limit)])
    }

    public func readStream(_ channel: String, after version: Int64, limit: Int) -> [RecordedEvent] {
        Array(events.lazy.filter { $0.channel == channel && $0.version > version }.prefix(limit))
    }

    public func version(of channel: String) -> Int64 {
        versions[channel] ?? 0
    }

    public func recordRefusal(_ refusal: Refusal) {
        refused.append(refusal)
    }

    public func refusals(of channel: String) -> [Refusal] {
        refused.filter { $0.channel == channel }.sorted { $0.decidedAt < $1.decidedAt }
    }

    public func recordRenderSamples(_ new: [RenderSample]) {
        for sample in new where !samples.contains(where: { $0.channel == sample.channel && $0.tick == sample.tick && $0.rendition == sample.rendition }) {
            samples.append(sample)
        }
    }

    public func renderSamples(of channel: String, limit: Int) -> [RenderSample] {
        Array(samples.filter { $0.channel == channel }.sorted { $0.tick < $1.tick }.prefix(limit))
    }

    public func channelIDs() -> [String] {
        versions.filter { $0.value > 0 }.keys.sorted()
    }

    public func headPosition() -> Int64 {
        Int64(events.count)
    }

    /// Appends here take effect synchronously, so the whole log is known for any instant.
    public func watermark() -> Watermark {
        Watermark(head: Int64(events.count), knownUntil: Timestamp(milliseconds: .max))
    }

    /// Idempotency records are scoped to the channel and the actor, as in the database.
    private static func scopeKey(_ request: AppendRequest) -> String {
        request.channel + "\u{0}" + request.command.actor + "\u{0}" + request.command.commandID
    }

    /// Returns after the next append that adds events (the in-memory stand-in for NOTIFY).
    public func waitForAppend() async {
        await withCheckedContinuation { waiters.append($0) }
    }
}
