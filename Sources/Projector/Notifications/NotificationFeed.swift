import EventStore
import HLS
import Logging
import Schedule
import Synchronization

/// Every channel's notification facts, kept from the log: each poll reads the events after the last one read, up to
/// a watermark, and advances each channel's ``FactDeriver`` to the watermark's `knownUntil` (the instant up to which
/// the log is complete, by the database's clock). Facts stay until ``trim(floor:)`` drops those every subscription
/// has had (all but the last minute's on a channel no subscription wants).
///
/// Refused commands (``RefusalStore/knownRefusals(after:through:limit:)``) are read up to the same `knownUntil` and
/// released with their channel's facts, ordered by the instant each is known at; a refusal on a channel is notified
/// only when ordered after the channel's first event (a command refused on a channel that does not exist is not).
///
/// Every instance keeps one, whether it delivers or not: its `/metrics` shows the subscriptions' lag, and it is ready
/// when the lease comes to it.
public final class NotificationFeed: Sendable {
    let store: any EventStore
    let refusals: (any RefusalStore)?
    /// Where the log is known to be complete: the follower's (``ChannelFollower/foldedWatermark``) in the server.
    let watermark: @Sendable () async throws -> Watermark
    let logger: Logger
    let pageSize: Int

    struct State {
        var derivers: [ChannelID: FactDeriver] = [:]
        var facts: [ChannelID: [NotificationFact]] = [:]
        var position: Int64 = 0
        var knownUntil = Timestamp(milliseconds: 0)
        /// Refusals read and not yet released, per channel in key order, and the last one read.
        var refused: [ChannelID: [NotificationFact]] = [:]
        var refusalMark = RefusalMark.start
        /// Moves whenever facts are added.
        var generation = 0
    }

    private let state = Mutex(State())

    /// - Parameter watermark: the log's watermark; by default the store's (a query taking the log head's lock).
    public init(
        store: any EventStore, refusals: (any RefusalStore)? = nil,
        watermark: (@Sendable () async throws -> Watermark)? = nil, pageSize: Int = 1000, logger: Logger
    ) {
        self.store = store
        self.refusals = refusals
        self.watermark = watermark ?? { try await store.watermark() }
        self.pageSize = pageSize
        self.logger = logger
    }

    /// Reads the log up to its watermark and derives the facts that became final; drops those at or before
    /// `floor(channel)` as it goes (see ``trim(floor:)``), so that the first poll of a long log keeps no more than a
    /// page of events and the facts that are still wanted.
    ///
    /// - Returns: how many facts were added.
    @discardableResult
    public func poll(floor: (ChannelID) -> FactKey?) async throws -> Int {
        let watermark = try await self.watermark()
        // The refusals first: a channel's facts are released only with every refusal known up to the same instant.
        try await readRefusals(through: watermark.knownUntil, floor: floor)
        var after = state.withLock { $0.position }
        var added = 0
        while after < watermark.head {
            let page = try await store.read(after: after, through: watermark.head, limit: pageSize)
            guard let last = page.last else { break }
            take(page)
            // Each channel of the page as far as its events so far settle it (never past the watermark).
            added += advance(Set(page.map(\.channel)), to: watermark.knownUntil, settledOnly: true)
            trim(floor: floor, keepingAfter: watermark.knownUntil)
            after = last.position
            if page.count < pageSize { break }
        }
        let channels = state.withLock { Set($0.derivers.keys) }
        added += advance(channels, to: watermark.knownUntil, settledOnly: false)
        state.withLock { state in
            state.knownUntil = max(state.knownUntil, watermark.knownUntil)
            // Refused on a channel with no event ordered before the refusal (every such event is read by now).
            for channel in Array(state.refused.keys) where state.derivers[channel] == nil {
                state.refused[channel]?.removeAll { $0.key.atMilliseconds <= watermark.knownUntil.milliseconds }
                if state.refused[channel]?.isEmpty == true { state.refused[channel] = nil }
            }
        }
        return added
    }

    /// Reads the refusals known up to `instant` that were not read yet, a page at a time, and keeps them until their
    /// channel's facts are released up to them: those every subscription has had are dropped as they are read (as
    /// ``trim(floor:)`` drops facts), so a long history of refusals is read through, not held.
    private func readRefusals(through instant: Timestamp, floor: (ChannelID) -> FactKey?) async throws {
        guard let refusals else { return }
        let recent = FactKey(atMilliseconds: instant.milliseconds - 60_000, position: .max, rank: .max)
        var cuts: [ChannelID: FactKey] = [:]
        while true {
            let mark = state.withLock { $0.refusalMark }
            let page = try await refusals.knownRefusals(after: mark, through: instant, limit: pageSize)
            for known in page where cuts[known.refusal.channel] == nil {
                cuts[known.refusal.channel] = min(floor(known.refusal.channel) ?? recent, recent)
            }
            state.withLock { state in
                for known in page {
                    let fact = NotificationFact(refused: known)
                    state.refusalMark = max(state.refusalMark, known.mark)
                    guard let cut = cuts[fact.channel], fact.key > cut else { continue }
                    state.refused[fact.channel, default: []].append(fact)
                }
            }
            if page.count < pageSize { return }
        }
    }

    /// Advances the derivers of `channels` to `instant` (or, with `settledOnly`, to no later than what their events
    /// so far settle) and keeps the facts.
    private func advance(_ channels: Set<ChannelID>, to instant: Timestamp, settledOnly: Bool) -> Int {
        state.withLock { state in
            var added = 0
            for channel in channels {
                guard var deriver = state.derivers.removeValue(forKey: channel) else { continue }
                var facts = deriver.advance(to: settledOnly ? min(instant, deriver.settled) : instant)
                state.derivers[channel] = deriver
                if let waiting = state.refused[channel] {
                    let due = waiting.prefix { $0.key.atMilliseconds <= deriver.knownUntil.milliseconds }
                    if !due.isEmpty {
                        state.refused[channel] = waiting.count == due.count ? nil : Array(waiting[due.count...])
                        let first = deriver.firstKey ?? .max
                        facts = Self.merge(facts, due.filter { first < $0.key.atMilliseconds })
                    }
                }
                if !facts.isEmpty {
                    state.facts[channel, default: []] += facts
                    added += facts.count
                }
            }
            if added > 0 { state.generation += 1 }
            return added
        }
    }

    /// Two runs of facts in key order, as one.
    static func merge(_ left: [NotificationFact], _ right: some Collection<NotificationFact>) -> [NotificationFact] {
        guard !right.isEmpty else { return left }
        var merged: [NotificationFact] = []
        merged.reserveCapacity(left.count + right.count)
        var (leftIndex, rightIndex) = (left.startIndex, right.startIndex)
        while leftIndex < left.endIndex || rightIndex < right.endIndex {
            if rightIndex == right.endIndex
                || (leftIndex < left.endIndex && left[leftIndex].key < right[rightIndex].key)
            {
                merged.append(left[leftIndex])
                leftIndex += 1
            } else {
                merged.append(right[rightIndex])
                rightIndex = right.index(after: rightIndex)
            }
        }
        return merged
    }

    /// Gives each event to its channel's deriver (one this build cannot read only orders those after it).
    func take(_ page: [RecordedEvent]) {
        let decoded = page.map { event -> (RecordedEvent, RecordedScheduleEvent?) in
            do {
                return (event, try ChannelLoader.decode(event))
            } catch {
                logger.warning(
                    "an event this build cannot read gives no notification",
                    metadata: ["channel": "\(event.channel)", "position": "\(event.position)"])
                return (event, nil)
            }
        }
        state.withLock { state in
            for (event, readable) in decoded {
                var deriver = state.derivers.removeValue(forKey: event.channel) ?? FactDeriver(channel: event.channel)
                if let readable {
                    deriver.add(readable)
                } else {
                    deriver.skip(version: event.version, decidedAt: event.decidedAt)
                }
                state.derivers[event.channel] = deriver
                state.position = max(state.position, event.position)
            }
        }
    }

    /// The instant the facts are final up to (the database's clock at the last poll).
    public var knownUntil: Timestamp { state.withLock { $0.knownUntil } }

    /// Moves whenever facts are added: a worker that found nothing to send looks again only after it moved.
    public var generation: Int { state.withLock { $0.generation } }

    /// The channels that have facts kept.
    public var channels: [ChannelID] { state.withLock { Array($0.facts.keys) }.sorted() }

    /// The first fact of `channel` after `cursor` that `wanted` accepts.
    public func next(on channel: ChannelID, after cursor: FactKey, where wanted: (NotificationFact) -> Bool)
        -> NotificationFact?
    {
        state.withLock { state in
            guard let facts = state.facts[channel] else { return nil }
            var index = Self.firstIndex(in: facts, after: cursor)
            while index < facts.count {
                if wanted(facts[index]) { return facts[index] }
                index += 1
            }
            return nil
        }
    }

    /// How many facts of `channel` after `cursor` `wanted` accepts, and the key of the first.
    public func backlog(on channel: ChannelID, after cursor: FactKey, where wanted: (NotificationFact) -> Bool)
        -> (count: Int, oldest: FactKey?)
    {
        state.withLock { state in
            guard let facts = state.facts[channel] else { return (0, nil) }
            var (count, oldest): (Int, FactKey?) = (0, nil)
            for fact in facts[Self.firstIndex(in: facts, after: cursor)...] where wanted(fact) {
                count += 1
                if oldest == nil { oldest = fact.key }
            }
            return (count, oldest)
        }
    }

    /// Drops each channel's facts at or before `floor(channel)` (nil: no subscription wants the channel), keeping
    /// those of the last minute whatever the floor, for a subscription created meanwhile.
    public func trim(floor: (ChannelID) -> FactKey?) {
        trim(floor: floor, keepingAfter: knownUntil)
    }

    private func trim(floor: (ChannelID) -> FactKey?, keepingAfter instant: Timestamp) {
        state.withLock { state in
            let recent = FactKey(atMilliseconds: instant.milliseconds - 60_000, position: .max, rank: .max)
            for (channel, facts) in state.facts {
                let cut = min(floor(channel) ?? recent, recent)
                let index = Self.firstIndex(in: facts, after: cut)
                if index > 0 { state.facts[channel] = Array(facts[index...]) }
            }
        }
    }

    /// The index of the first fact after `key` (facts are in key order).
    static func firstIndex(in facts: [NotificationFact], after key: FactKey) -> Int {
        var (low, high) = (0, facts.count)
        while low < high {
            let middle = (low + high) / 2
            if facts[middle].key <= key { low = middle + 1 } else { high = middle }
        }
        return low
    }
}
