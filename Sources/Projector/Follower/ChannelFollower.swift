import EventStore
import Foundation
import HLS
import Logging
import Metrics
import NIOCore
import Schedule
import ServiceLifecycle
import Synchronization

/// Keeps every channel's schedule up to date from the log and serves its rendered playlists.
///
/// The log is the truth: the follower catches up by position (never skipping one), wakes on NOTIFY hints,
/// and polls on a timer because hints are lost while disconnected. Playlists are rendered from one schedule
/// snapshot for all renditions at once and swapped in whole; the tick time never goes backwards, even if the
/// wall clock does.
public final class ChannelFollower: Service, Sendable {
    struct Shared {
        var channels: [ChannelID: Entry] = [:]
        /// Every event at or below this position has been folded (positions the log never filled are holes:
        /// `EventStore.read(after:through:limit:)`). Moved by reads of the log only; a command's own events, folded
        /// as its append returned them, are recognized by their channel's version.
        var position: Int64 = 0
        /// Counts the folds that applied something, for those waiting on any change (event streams).
        var generation: Int64 = 0
        /// Every event decided at or before this instant has been read (see `Watermark`): ticks up to it can be
        /// served knowing that replay will give back the same bytes.
        var knownUntil = Timestamp(milliseconds: .min)
        /// When the known instant moved, and to what (the last 256 moves): when the serving time reached an instant.
        var passages: [(knownUntil: Timestamp, at: Timestamp)] = []
        /// The last watermark waited too long for the log head (see `StoreError.logHeadBusy`).
        var logHeadBusy = false
        /// When the log last answered a catch-up's read (the follower's clock), and whether the silence since was reported.
        var lastHeard = Timestamp(milliseconds: .min)
        var silenceReported = false
        var caughtUpOnce = false
        var lastError: String?
    }

    let blocked = Mutex(Blocked())
    /// Asks `run()`'s reader for a watermark now: the ticker does when a boundary has passed on the wall clock but not
    /// yet in the known log, so that the window is served a round trip after its boundary rather than at the next poll.
    let watermarkWake = Mutex<AsyncStream<Void>.Continuation?>(nil)

    let store: any EventStore
    /// Where digests of served playlists are recorded for `cueline verify` (nil: not recorded).
    let samples: (any RenderSampleStore)?
    /// Called once, when `run()` starts, with ``hasFolded(hint:)``: the hints to skip.
    let wakeups: @Sendable (_ folded: @escaping @Sendable (String) -> Bool) -> AsyncStream<Void>
    public let clock: @Sendable () -> Timestamp
    let pollInterval: Duration
    /// How long, in milliseconds, the log may leave a catch-up's read unanswered before playlists follow the wall clock
    /// (`servingTime()`).
    let silenceLimit: Int64
    let logger: Logger
    let metrics = FollowerMetrics()
    /// Writes replay checkpoints as the log is folded (nil: the store keeps none, e.g. in memory).
    let checkpoints: CheckpointWriter?
    let shared = Mutex(Shared())
    let changes: AsyncStream<Int64>.Continuation
    /// Positions as they are applied, for those waiting on a change (tests, blocking reloads).
    public let appliedPositions: AsyncStream<Int64>

    /// - Parameters:
    ///   - wakeups: a stream that yields when the log may have grown (NOTIFY: `PostgresListener.wakeups`, a service
    ///     of its own); called once, when `run()` starts.
    ///   - pollInterval: how often the watermark is refreshed without a hint; playlists reach a new segment
    ///     boundary at most this much after it (plus a round trip), since a tick is served only once known.
    ///   - silenceLimit: how long the log may leave a catch-up's read unanswered, neither answering nor failing,
    ///     before playlists follow the wall clock as when it is unreachable: a database that accepts the connection's
    ///     bytes and never answers (a host gone is found sooner, by the connections' keepalives: ~6 s, then an error).
    ///     11 s: longer than any wait of a working database that does not already end in an error or in
    ///     `logHeadBusy` (a pool checkout gives up after 10 s, the watermark's lock wait after 5 s), so it never
    ///     serves ahead of the log while commands can still commit.
    public convenience init(
        store: any EventStore, samples: (any RenderSampleStore)? = nil,
        wakeups: @escaping @Sendable () -> AsyncStream<Void>, clock: @escaping @Sendable () -> Timestamp,
        pollInterval: Duration = .milliseconds(20), silenceLimit: Duration = .seconds(11),
        logger: Logger = Logger(label: "cueline.follower")
    ) {
        self.init(
            store: store, samples: samples, hints: { _ in wakeups() }, clock: clock, pollInterval: pollInterval,
            silenceLimit: silenceLimit, logger: logger)
    }

    /// The same with hints that may be skipped: `hints` is given ``hasFolded(hint:)`` (the server passes it to
    /// `PostgresListener.wakeups(skipping:)`, so a command's own append wakes no catch-up).
    public init(
        store: any EventStore, samples: (any RenderSampleStore)? = nil,
        hints wakeups: @escaping @Sendable (_ folded: @escaping @Sendable (String) -> Bool) -> AsyncStream<Void>,
        clock: @escaping @Sendable () -> Timestamp,
        pollInterval: Duration = .milliseconds(20), silenceLimit: Duration = .seconds(11),
        logger: Logger = Logger(label: "cueline.follower")
    ) {
        self.store = store
        self.samples = samples
        self.wakeups = wakeups
        self.clock = clock
        self.pollInterval = pollInterval
        self.silenceLimit =
            silenceLimit.components.seconds * 1000 + silenceLimit.components.attoseconds / 1_000_000_000_000_000
        self.logger = logger
        checkpoints = (store as? PostgresEventStore).map { CheckpointWriter(store: $0, logger: logger) }
        (appliedPositions, changes) = AsyncStream<Int64>.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    /// Reads which replay checkpoints are stored already, before the first catch-up, so that reading a long log does
    /// not queue the checkpoints it has (a no-op for a store that keeps none).
    public func primeCheckpoints() async {
        await checkpoints?.prime()
    }

    /// Whether the follower has read the whole log at least once and its last catch-up worked.
    public var isReady: Bool {
        shared.withLock { $0.caughtUpOnce && $0.lastError == nil }
    }

    public var position: Int64 {
        shared.withLock { $0.position }
    }

    /// Moves whenever an event is folded in, by a read of the log or a command's own append.
    public var generation: Int64 {
        shared.withLock { $0.generation }
    }

    public func run() async throws {
        let (wake, wakeContinuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let hints = wakeups { [self] hint in hasFolded(hint: hint) }
        watermarkWake.withLock { $0 = wakeContinuation }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for await _ in hints { wakeContinuation.yield() }
            }
            group.addTask { [pollInterval] in
                while !Task.isCancelled {
                    try await Task.sleep(for: pollInterval)
                    wakeContinuation.yield()
                }
            }
            group.addTask { try await self.tickAtSegmentBoundaries() }
            if let checkpoints { group.addTask { await checkpoints.run() } }
            group.addTask {
                var iterator = wake.makeAsyncIterator()
                repeat {
                    // While the database is unreachable this asks again at every poll (20 ms): playlists follow the
                    // wall clock meanwhile, and a backoff would keep them on it after the database is back, serving
                    // ticks a command committed then belongs to (issue 36: hold at the watermark first).
                    await self.catchUpLogging()
                } while await iterator.next() != nil && !Task.isCancelled
            }
            try await gracefulShutdown()
            group.cancelAll()
        }
    }

    /// Catches up; false when the log could not be read.
    @discardableResult
    func catchUpLogging() async -> Bool {
        // After the first tick of a long log folded in (`Entry.settle`): here, off the ticker's and the commands' paths.
        defer { MemoryTrim.giveBackIfRequested() }
        do {
            try await catchUp()
            return true
        } catch is CancellationError {
            // Shutting down: the read was not sent.
            return true
        } catch {
            let first = shared.withLock { shared -> Bool in
                defer { shared.lastError = "\(error)" }
                return shared.lastError == nil
            }
            metrics.databaseErrors.increment()
            if first {
                logger.error(
                    "cannot read the event log; serving the last known schedule", metadata: ["error": "\(error)"])
            }
            return false
        }
    }

    /// Reads everything up to the log's watermark and folds it in, then moves the known instant forward.
    /// Safe to call concurrently with reads and with itself.
    public func catchUp() async throws {
        let watermark: Watermark
        do {
            watermark = try await store.watermark()
        } catch let StoreError.logHeadBusy(message) {
            // Reachable, but a transaction holds the log head past the watermark's 5 s wait (a commit slower than that is counted as late instead): playlists go on by the
            // wall clock rather than freeze (what that transaction commits late is counted as late).
            let first = shared.withLock { shared -> Bool in
                defer { shared.logHeadBusy = true }
                return !shared.logHeadBusy
            }
            metrics.logHeadBusy.increment()
            if first {
                logger.warning(
                    "the log head is held by a transaction that does not commit; serving by the wall clock",
                    metadata: ["error": "\(message)"])
            }
            return
        }
        var position = shared.withLock { shared in
            shared.lastHeard = clock()
            return shared.position
        }
        while position < watermark.head {
            let batch = try await store.read(after: position, through: watermark.head, limit: 1000)
            shared.withLock { $0.lastHeard = clock() }
            fold(batch, appended: false)
            guard batch.count == 1000, let last = batch.last?.position else {
                // Everything up to the head is read: a position below it that holds no event is a hole for good
                // (an append rolled back), so the cursor moves to the head itself.
                shared.withLock { $0.position = max($0.position, watermark.head) }
                position = watermark.head
                break
            }
            position = last
        }
        // Any successful read, whoever triggered it, means the log is reachable again. The watermark holds once
        // everything up to its head is folded in (by this call or a concurrent one).
        let recovered = shared.withLock { shared -> Bool in
            if shared.position >= watermark.head, watermark.knownUntil > shared.knownUntil {
                shared.knownUntil = watermark.knownUntil
                if shared.passages.count >= 256 { shared.passages.removeFirst(128) }
                shared.passages.append((watermark.knownUntil, clock()))
            }
            shared.logHeadBusy = false
            shared.lastHeard = clock()
            defer { shared.caughtUpOnce = true; shared.lastError = nil; shared.silenceReported = false }
            return shared.lastError != nil || shared.silenceReported
        }
        if recovered { logger.notice("reading the event log again", metadata: ["position": "\(position)"]) }
        metrics.positionLag.record(max(0, watermark.head - position))
    }

    /// Whether the events a NOTIFY hint announces (`channel position`, `PostgresEventStore.hint`) are folded in
    /// already: a command's own append, ingested before its answer. Such a hint need not wake a catch-up, whose
    /// watermark read waits for every append in flight (and holds new ones back) and then reads the command's events
    /// back: two round trips per command (issue 12). The read cursor moves on at the next poll. A hint that arrives
    /// before its command's events are ingested (the listener can be quicker than the command's answer) still wakes
    /// a catch-up, as before; `cueline_hints_skipped_total` counts the others.
    public func hasFolded(hint payload: String) -> Bool {
        guard let space = payload.firstIndex(of: " "), let position = Int64(payload[payload.index(after: space)...]),
            position > 0
        else { return false }
        guard let channel = ChannelID(stored: payload[..<space]) else { return false }
        guard shared.withLock({ ($0.channels[channel]?.state.position ?? 0) >= position }) else { return false }
        metrics.hintsSkipped.increment()
        return true
    }

    /// Folds events the caller appended itself (a command's answer), without reading the log: only when they are
    /// the next versions of their channel, so no event of the channel is ever skipped (appends of other channels do
    /// not matter: each channel's schedule is its own). Returns false when events of another writer of the same
    /// channel come first (then the log must be read: `catchUp`). The read cursor does not move: the log read later
    /// meets these events again and skips them by version.
    @discardableResult
    public func ingest(appended events: [RecordedEvent]) -> Bool {
        guard !events.isEmpty else { return true }
        return fold(events, appended: true)
    }

    /// Shows a command's own write before it is answered, whatever the state of LISTEN/NOTIFY (it reconnects after a
    /// database restart): the appended events are folded as the append returned them, without reading the log, unless
    /// other writers' events come first (then the log is read; if that read fails, the poll picks them up).
    public func applied(_ outcome: CommandOutcome) async {
        if !ingest(outcome) { try? await catchUp() }
    }

    /// ``ingest(appended:)`` for a command's outcome: when the log holds exactly what this attempt encoded (type,
    /// schema version and payload text), its events are folded as decided, without decoding those payloads again (the
    /// codec's round trip is exact: `EventCodecRoundTripTests`, and the schedule tests decode every event they
    /// decide). Anything else (a retry answered from the log, an outcome recovered after a lost connection, which
    /// may hold another attempt's decision) is decoded from the log's payloads, as replay reads them.
    @discardableResult
    public func ingest(_ outcome: CommandOutcome) -> Bool {
        let events = outcome.result.events
        guard !events.isEmpty else { return true }
        let asEncoded =
            !outcome.result.replayed && outcome.encoded.count == events.count && outcome.events.count == events.count
            && zip(outcome.encoded, events).allSatisfy {
                $0.type == $1.type && $0.schemaVersion == $1.schemaVersion && $0.payload == $1.payload
            }
        return fold(events, appended: true, decided: asEncoded ? outcome.events : nil)
    }

    /// Decodes and folds a batch read from the log (or appended by this instance), in position order. Each event is
    /// applied when it is its channel's next version and skipped when that version is already folded (catch-ups and
    /// ingests may run concurrently: whoever applies an event first wins).
    /// `appended`: a command's own events; fold nothing unless the first is its channel's next version, and leave
    /// the read cursor where it is.
    /// `decided`: the batch's events as the command decided them (then nothing is decoded).
    @discardableResult
    func fold(_ batch: [RecordedEvent], appended: Bool, decided: [ScheduleEvent]? = nil) -> Bool {
        guard let last = batch.last?.position else { return true }
        var decoded: [(ChannelID, RecordedScheduleEvent, hash: String?)] = []
        var unreadable: [RecordedEvent] = []
        // Versions folded already (they only grow) are skipped below whatever they hold, so they are not decoded: the
        // log read after a command's own ingest meets its events again.
        let folded = shared.withLock { shared in batch.map { shared.channels[$0.channel]?.state.version ?? 0 } }
        for (index, event) in batch.enumerated() where event.version > folded[index] {
            if let decided {
                decoded.append(
                    (
                        event.channel,
                        RecordedScheduleEvent(
                            event: decided[index], version: event.version, position: event.position,
                            attribution: Attribution(at: event.decidedAt, actor: event.actor, source: event.source)),
                        event.hash
                    ))
                continue
            }
            do {
                decoded.append((event.channel, try ChannelLoader.decode(event), event.hash))
            } catch {
                // A future event type or a payload this build cannot read: skip it rather than stop serving the
                // channel (replay skips it too); it is logged, counted, and reported by `cueline verify`.
                unreadable.append(event)
                metrics.unreadableEvents.increment()
                logger.error(
                    "cannot decode event; skipped",
                    metadata: ["position": "\(event.position)", "channel": "\(event.channel)", "error": "\(error)"])
            }
        }
        let outcome = shared.withLock {
            shared -> (applied: Bool, diverged: [(ChannelID, RecordedScheduleEvent, Timestamp)])? in
            func folded(_ channel: ChannelID) -> Int64 { shared.channels[channel]?.state.version ?? 0 }
            func entry(_ channel: ChannelID) {
                guard shared.channels[channel] == nil else { return }
                // The hot form: aired and cancelled breaks leave once no window can hold them (as-run reads the log).
                shared.channels[channel] = Entry(
                    state: ChannelState(channel: channel, retention: .window),
                    settled: ChannelState(channel: channel, retention: .window))
            }
            func skip(_ event: RecordedEvent) {
                guard event.version == folded(event.channel) + 1 else { return }
                entry(event.channel)
                shared.channels[event.channel]!.state.version = event.version
                shared.channels[event.channel]!.skippedUnreadable = true
            }
            if appended, let first = batch.first, first.version > folded(first.channel) + 1 { return nil }
            var fresh = 0
            var diverged: [(ChannelID, RecordedScheduleEvent, Timestamp)] = []
            var skipped = unreadable.makeIterator()
            var nextSkipped = skipped.next()
            for (channel, recorded, hash) in decoded {
                // Skipped events still move the channel's version, so commands and If-Match see the stream as it is.
                while let event = nextSkipped, event.position < recorded.position {
                    skip(event)
                    nextSkipped = skipped.next()
                }
                guard recorded.version == folded(channel) + 1 else {
                    if recorded.version > folded(channel) + 1 {
                        // Not reachable by a read up to a watermark (a channel's positions grow with its versions).
                        logger.error(
                            "event skipped: its channel's earlier versions were not read",
                            metadata: [
                                "channel": "\(channel)", "position": "\(recorded.position)",
                                "version": "\(recorded.version)", "folded": "\(folded(channel))",
                            ])
                    }
                    continue
                }
                fresh += 1
                entry(channel)
                // In place: a copy of the entry would copy its schedule on every event.
                if let servedTick = shared.channels[channel]!.fold(recorded) {
                    diverged.append((channel, recorded, servedTick))
                }
                // Events written before the hash chain cannot be checked against: no checkpoint there.
                if let checkpoints, CheckpointWriter.isDue(recorded.version), let hash,
                    !shared.channels[channel]!.skippedUnreadable,
                    let snapshot = ChannelSnapshot(shared.channels[channel]!.state, chainHash: hash)
                {
                    checkpoints.offer(snapshot)
                }
            }
            while let event = nextSkipped {
                skip(event)
                nextSkipped = skipped.next()
            }
            if !appended { shared.position = max(shared.position, last) }
            if fresh > 0 { shared.generation += 1 }
            return (fresh > 0, diverged)
        }
        guard let outcome else { return false }
        guard outcome.applied else { return true }
        changes.yield(last)
        for (channel, recorded, served) in outcome.diverged {
            metrics.lateEvents.increment()
            logger.warning(
                "event reached this instance after it had served its effect instant (the log was unreachable); replay differs from what was served meanwhile",
                metadata: [
                    "channel": "\(channel)", "position": "\(recorded.position)",
                    "decided_at": "\(recorded.attribution.at)", "served_tick": "\(served)",
                ])
        }
        logger.debug("applied events", metadata: ["position": "\(last)", "count": "\(batch.count)"])
        return true
    }
}
