import EventStore
import HLS
import Schedule

/// Replay: the playlist exactly as it was served at an instant, from the events in effect then and the same
/// renderer the server uses.
public enum Replay {
    public enum Failure: Error, Sendable, Equatable, CustomStringConvertible {
        case channelDidNotExist(channel: ChannelID, at: Timestamp)
        case relayNotReplayable(channel: ChannelID)
        case unknownRendition(channel: ChannelID, rendition: Identifier, at: Timestamp, known: [Identifier])
        case windowNotFull(channel: ChannelID, at: Timestamp)

        public var description: String {
            switch self {
            case .channelDidNotExist(let channel, let at): return "channel \(channel) did not exist at \(at)"
            case .relayNotReplayable(let channel):
                return
                    "channel \(channel) relays an upstream encoder; its upstream playlists are not recorded, so it cannot be replayed"
            case .unknownRendition(let channel, let rendition, let at, let known):
                return
                    "channel \(channel) had no rendition \(rendition) at \(at); it had \(known.map(\.rawValue).joined(separator: ", "))"
            case .windowNotFull(let channel, let at):
                return "channel \(channel) served no playlist at \(at): its window was not full yet"
            }
        }
    }

    /// - Parameters:
    ///   - rendition: nil for the first rendition.
    ///   - skip: the delta update served at `tick` to a request with `_HLS_skip` (channels with parts), instead of the full playlist.
    public static func playlist(
        _ channel: ChannelID, _ events: [RecordedScheduleEvent], at tick: Timestamp, rendition: Identifier?,
        multivariant: Bool,
        skip: PlaylistBuilder.DeltaUpdate? = nil
    ) throws -> String {
        try playlist(
            channel, state: fold(channel, events, asOf: tick, retention: .window), at: tick, rendition: rendition,
            multivariant: multivariant, skip: skip)
    }

    /// The same, read from the store: only the events the instant needs when the store keeps checkpoints (from the
    /// latest checkpoint in effect at `tick`, the events after it decided by `tick`), else the whole log.
    public static func playlist(
        _ channel: ChannelID, store: any EventStore, at tick: Timestamp, rendition: Identifier?, multivariant: Bool,
        skip: PlaylistBuilder.DeltaUpdate? = nil
    ) async throws -> String {
        try playlist(
            channel, state: try await state(channel, store: store, asOf: tick), at: tick, rendition: rendition,
            multivariant: multivariant, skip: skip)
    }

    /// The playlist rendered from `state`, the fold (`.window` retention) of the events in effect at `tick`.
    public static func playlist(
        _ channel: ChannelID, state: ChannelState, at tick: Timestamp, rendition: Identifier?, multivariant: Bool,
        skip: PlaylistBuilder.DeltaUpdate? = nil
    ) throws -> String {
        guard let config = state.config else { throw Failure.channelDidNotExist(channel: channel, at: tick) }
        guard config.source == .clock else { throw Failure.relayNotReplayable(channel: channel) }
        let rendered = try ChannelFollower.render(config: config, state: state, tick: tick)
        if multivariant { return rendered.multivariant }
        let name = rendition ?? config.renditions[0].name
        guard config.renditions.contains(where: { $0.name == name }) else {
            throw Failure.unknownRendition(
                channel: channel, rendition: name, at: tick, known: config.renditions.map(\.name))
        }
        guard let body = rendered.bodies[name] else { throw Failure.windowNotFull(channel: channel, at: tick) }
        if let skip {
            // A channel without parts serves no delta update: a request with _HLS_skip gets the full playlist.
            return String(buffer: rendered.deltaBodies[name]?[skip] ?? body)
        }
        return String(buffer: body)
    }

    /// The fold (`.window` retention) of the events of `channel` in effect at `tick`: `fold(_:_:asOf:retention:)` of
    /// the whole log, computed from the latest checkpoint usable at `tick` when the store keeps them (a checkpoint
    /// that does not match the log is not used) and the events after it decided by `tick`.
    public static func state(_ channel: ChannelID, store: any EventStore, asOf tick: Timestamp) async throws
        -> ChannelState
    {
        try await stateAndCheckpoint(channel, store: store, asOf: tick).state
    }

    /// `state(_:store:asOf:)` and the checkpoint it started from (nil: the whole log was folded), for the auditor to
    /// know whose checkpoint a replay trusted (`cueline verify` re-folds every one).
    public static func stateAndCheckpoint(_ channel: ChannelID, store: any EventStore, asOf tick: Timestamp)
        async throws -> (state: ChannelState, checkpoint: PostgresEventStore.StoredSnapshot?)
    {
        guard let postgres = store as? PostgresEventStore else {
            return (fold(channel, try await events(channel, from: store), asOf: tick, retention: .window), nil)
        }
        var state = ChannelState(channel: channel, retention: .window)
        var version: Int64 = 0
        // No checkpoint table (migration 0007 not applied) is no checkpoint.
        let checkpoint = try? await postgres.storedSnapshot(of: channel, forInstant: tick)
        if let checkpoint {
            state = checkpoint.snapshot.restore()
            version = checkpoint.snapshot.version
        }
        let inEffect = EventPages(after: version) { after, limit in
            try await postgres.readStream(channel, after: after, decidedAtOrBefore: tick, limit: limit)
        }
        for try await page in inEffect {
            for event in ChannelLoader.decodeReadable(page).readable { state.apply(event) }
        }
        return (state, checkpoint)
    }

    /// Writes checkpoints of `channel` every `interval` versions from its latest checkpoint to the end of its log;
    /// returns how many it wrote. Called by `cueline replay` before it replays: the first replay of a long log reads
    /// it once, later replays read only what follows the last checkpoint.
    @discardableResult
    public static func checkpoint(_ channel: ChannelID, store: PostgresEventStore, every interval: Int64 = 1000)
        async throws -> Int
    {
        precondition(interval > 0)
        var state = ChannelState(channel: channel, retention: .window)
        var version: Int64 = 0
        if let snapshot = try await store.latestSnapshot(of: channel) {
            state = snapshot.restore()
            version = snapshot.version
        }
        var next = (version / interval + 1) * interval
        var written = 0
        // Past an event this build cannot read, the fold is not what a build that reads it reaches: no checkpoint
        // from there on (a later build writes them).
        var firstUnreadable = Int64.max
        for try await page in store.pages(of: channel, after: version) {
            let hashes = Dictionary(page.map { ($0.version, $0.hash) }, uniquingKeysWith: { first, _ in first })
            let (readable, unreadable) = ChannelLoader.decodeReadable(page)
            firstUnreadable = min(firstUnreadable, unreadable.map(\.0.version).min() ?? .max)
            for event in readable {
                state.apply(event)
                guard event.version >= next, event.version < firstUnreadable else { continue }
                while next <= event.version { next += interval }
                // Events written before the hash chain cannot be checked against: no checkpoint there.
                guard let hash = hashes[event.version] ?? nil, let snapshot = ChannelSnapshot(state, chainHash: hash)
                else { continue }
                try await store.saveSnapshot(snapshot)
                written += 1
            }
        }
        return written
    }

    /// Every event of a channel, decoded, in version order.
    /// Events this build cannot read are left out, as the follower leaves them out of what it serves.
    public static func events(_ channel: ChannelID, from store: any EventStore) async throws -> [RecordedScheduleEvent]
    {
        var events: [RecordedScheduleEvent] = []
        for try await page in store.pages(of: channel) { events += ChannelLoader.decodeReadable(page).readable }
        return events
    }
}
