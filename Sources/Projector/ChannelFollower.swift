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
    public struct Rendered: Sendable {
        /// Ticks completed at the tick rendered (identifies the window): segments, or parts for a channel with parts
        /// (`Timeline.completedTicks`); for relay channels, the upstream generation.
        public var completedTicks: Int64
        /// The channel version the schedule was folded to.
        public var version: Int64
        public var tick: Timestamp
        public var targetDuration: Int
        /// Media playlists by rendition name, as response bodies encoded once per render (a request copies a reference,
        /// not bytes); no entry before the channel's first segment has ended. Only the bytes are kept (not a String too).
        public var bodies: [Identifier: ByteBuffer]
        /// Channels with parts: each rendition's delta updates (`_HLS_skip=YES` and `v2`), encoded with the full one.
        public var deltaBodies: [Identifier: DeltaBodies] = [:]
        /// Channels with parts: parts per segment (`completedTicks` counts parts) and their duration; nil without parts.
        public var partsPerSegment: Int64?
        public var partMilliseconds: Int64?
        /// When the last completed tick ended (`Timeline.tickStart(completedTicks)`, clock channels).
        public var tickBoundary = Timestamp(milliseconds: 0)
        /// Relay channels whose upstream has parts: where each rendition's upstream stood (what blocking reloads wait for).
        public var relayParts: [Identifier: RelayDecorator.PartsPosition] = [:]
        /// Relay channels: each rendition's target duration is its upstream's (cache lifetimes, blocking time-outs).
        public var relayTargetDurations: [Identifier: Int] = [:]
        public var multivariantBody: ByteBuffer
        /// The media playlists as text (made from the bytes when asked).
        public var playlists: [Identifier: String] { bodies.mapValues { String(buffer: $0) } }
        public var multivariant: String { String(buffer: multivariantBody) }
        /// `tick` as the `Cueline-Tick` header spells it (ISO 8601), formatted once per render.
        public var tickText: String
        /// Which events the schedule was folded from (see ``Effect``); set by the follower when it keeps the window.
        public var effect = Effect(settled: -1, pending: -1)
        /// When these bytes existed (the follower's clock after rendering them): with the instant the serving time
        /// reached the window's boundary, when the window became servable (`cueline_tick_lateness_seconds`). Not part
        /// of the bytes.
        public var readyAt = Timestamp(milliseconds: .min)

        /// The events a window was rendered from: the settled prefix of the log (its last version) and how many of
        /// the events after it, decided by the window's tick, were applied on top. The version alone does not say:
        /// decision times need not follow version order (a command's effect delay, instances' clocks), so the same
        /// last version can be in effect with and without an earlier-versioned event decided later. Ticks and the
        /// settled prefix only move forward, so two windows of one channel with equal effects folded the same events.
        public struct Effect: Hashable, Sendable {
            public var settled: Int64
            public var pending: Int
        }

        public init(
            completedTicks: Int64, version: Int64, tick: Timestamp, targetDuration: Int,
            playlists: [Identifier: String], multivariant: String
        ) {
            self.completedTicks = completedTicks
            self.version = version
            self.tick = tick
            self.targetDuration = targetDuration
            self.bodies = playlists.mapValues { ByteBuffer(string: $0) }
            self.multivariantBody = ByteBuffer(string: multivariant)
            self.tickText = tick.iso8601
        }
    }

    /// The two delta updates of a media playlist.
    public struct DeltaBodies: Sendable {
        public var segments: ByteBuffer
        public var segmentsAndDateRanges: ByteBuffer

        public subscript(update: PlaylistBuilder.DeltaUpdate) -> ByteBuffer {
            switch update {
            case .segments: segments
            case .segmentsAndDateRanges: segmentsAndDateRanges
            }
        }
    }

    /// One rendition's media playlist as served: the encoded body and what its headers need.
    public struct ServedMedia: Sendable {
        public var body: ByteBuffer
        public var targetDuration: Int
        public var tick: Timestamp
        public var tickText: String
        /// Which window this is (`Rendered.completedTicks`) and, for a channel with parts, parts per segment: what a
        /// blocking reload compares `_HLS_msn` / `_HLS_part` with.
        public var completedTicks: Int64 = 0
        public var partsPerSegment: Int64?
        public var partMilliseconds: Int64?
        /// When the last of those ticks ended (clock channels).
        public var tickBoundary = Timestamp(milliseconds: 0)
        /// A relay channel's rendition whose upstream has parts: where it stands (blocking reloads wait on it instead).
        public var relayParts: RelayDecorator.PartsPosition?

        /// What a blocking reload's target is compared with: the upstream's position for a relay rendition with parts,
        /// else the window (`completedTicks`).
        public var blockingPosition: Int64 { relayParts?.ordinal ?? completedTicks }
    }

    public enum LookupError: Error, Sendable, Equatable {
        case unknownChannel(ChannelID)
        case unknownRendition(channel: ChannelID, rendition: Identifier)
        case notStarted(channel: ChannelID, firstSegmentEnds: Timestamp)
        case unknownBreak(channel: ChannelID, id: BreakID)
        case renderFailed(String)
        case upstreamMissing(channel: ChannelID, rendition: Identifier)
    }

    fileprivate struct Entry {
        /// Every event folded: the schedule as the log has it now (commands decide against it), in the hot form
        /// (`ChannelState.Retention.window`: retired breaks have left it, so memory does not grow with the log).
        var state: ChannelState
        /// The events in effect at every tick from now on: the longest prefix (in version order) of the log whose
        /// events were all decided at or before `lastTick`, folded.
        var settled: ChannelState
        /// The events after that prefix, in version order: decided after the last tick served (usually none, or
        /// a command's events during its effect delay). Nothing older is kept: memory does not grow with the log.
        var pending: [RecordedScheduleEvent] = []
        var rendered: Rendered?
        /// The window of the next boundary, rendered ahead for exactly that instant (`tick` = the boundary) and not
        /// served before it: `prepare` publishes it once a tick at or past the boundary is served, if the schedule in
        /// effect then is the one it was rendered from (else a late command changed it and it is rendered again).
        var ahead: Rendered?
        var lastTick = Timestamp(milliseconds: .min)
        /// Relay channels: the latest upstream playlist of each rendition, and a counter of their changes.
        var upstreams: [Identifier: MediaPlaylist] = [:]
        var upstreamGeneration: Int64 = 0
    }

    private struct Shared {
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

    /// Requests held until a window exists (LL-HLS blocking playlist reload), by channel: released all at once by the
    /// tick that publishes the window they wait for (one wake-up per part boundary per channel), or at their deadline.
    private struct Blocked {
        struct Waiter {
            var id: UInt64
            var target: Int64
            var deadline: Timestamp
            /// Called once, with whether the window exists (false: deadline, cancellation, shutdown).
            var resume: @Sendable (Bool) -> Void
            /// Where `resume` gathers its work, woken after it is resumed (at a boundary, in steps: `StagedWakeups`).
            var batch: (any WakeupBatch)?
        }

        /// What is waited for: a channel's windows (clock channels, `Rendered.completedTicks`), or one rendition of a
        /// relay channel with parts (its upstream's `RelayDecorator.PartsPosition.ordinal`: renditions move apart).
        struct Key: Hashable {
            var channel: ChannelID
            var rendition: Identifier?
        }

        /// The latest window published, by key.
        var published: [Key: Int64] = [:]
        var waiters: [Key: [Waiter]] = [:]
        var count = 0
        var nextID: UInt64 = 0
        var lastExpiry = Timestamp(milliseconds: .min)
        /// At or before the earliest deadline of those held (requests released since may have had it).
        var earliestDeadline = Timestamp(milliseconds: .max)
        /// The ticker stopped (shutdown): nothing would release a request any more, so none is held.
        var closed = false
    }

    private let blocked = Mutex(Blocked())
    /// Asks `run()`'s reader for a watermark now: the ticker does when a boundary has passed on the wall clock but not
    /// yet in the known log, so that the window is served a round trip after its boundary rather than at the next poll.
    private let watermarkWake = Mutex<AsyncStream<Void>.Continuation?>(nil)

    let store: any EventStore
    /// Where digests of served playlists are recorded for `cueline verify` (nil: not recorded).
    let samples: (any RenderSampleStore)?
    let wakeups: @Sendable () -> AsyncStream<Void>
    public let clock: @Sendable () -> Timestamp
    let pollInterval: Duration
    /// How long, in milliseconds, the log may leave a catch-up's read unanswered before playlists follow the wall clock
    /// (`servingTime()`).
    let silenceLimit: Int64
    let logger: Logger
    /// Writes replay checkpoints as the log is folded (nil: the store keeps none, e.g. in memory).
    let checkpoints: CheckpointWriter?
    private let shared = Mutex(Shared())
    private let changes: AsyncStream<Int64>.Continuation
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
    public init(
        store: any EventStore, samples: (any RenderSampleStore)? = nil,
        wakeups: @escaping @Sendable () -> AsyncStream<Void>, clock: @escaping @Sendable () -> Timestamp,
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
        // Registered up front so that dashboards see a zero, not a missing series.
        _ = Counter(label: "cueline_database_errors_total")
        _ = Counter(label: "cueline_ticks_rendered_total")
        _ = Counter(label: "cueline_late_events_total")
        _ = Counter(label: "cueline_hints_skipped_total")
        _ = Counter(label: "cueline_log_silences_total")
        _ = Counter(label: "cueline_render_samples_dropped_total")
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
        let hints = wakeups()
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
                    await self.catchUpLogging()
                } while await iterator.next() != nil && !Task.isCancelled
            }
            try await gracefulShutdown()
            group.cancelAll()
        }
    }

    private func catchUpLogging() async {
        do {
            try await catchUp()
        } catch is CancellationError {
            // Shutting down: the read was not sent.
            return
        } catch {
            let first = shared.withLock { shared -> Bool in
                defer { shared.lastError = "\(error)" }
                return shared.lastError == nil
            }
            Counter(label: "cueline_database_errors_total").increment()
            if first {
                logger.error(
                    "cannot read the event log; serving the last known schedule", metadata: ["error": "\(error)"])
            }
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
            Counter(label: "cueline_log_head_busy_total").increment()
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
        // After the first tick of a long log folded in (`Entry.settle`), off the ticker's path.
        MemoryTrim.giveBackIfRequested()
        Gauge(label: "cueline_log_position_lag").record(max(0, watermark.head - position))
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
        Counter(label: "cueline_hints_skipped_total").increment()
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
    private func fold(_ batch: [RecordedEvent], appended: Bool, decided: [ScheduleEvent]? = nil) -> Bool {
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
                Counter(label: "cueline_unreadable_events_total").increment()
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
            Counter(label: "cueline_late_events_total").increment()
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

    /// The instant playlists are served for: now, but never past what the log is known up to, so that no event
    /// committed later can belong to a tick already served. While the log is unreachable no command can commit
    /// either, and playlists keep advancing with the wall clock (an event committed just before the outage and
    /// not yet read is then counted in `cueline_late_events_total`).
    ///
    /// A read that neither answers nor fails (a database that accepts the connection's bytes and does not answer; a
    /// host that is gone is found by the connections' keepalives, then fails) counts as unreachable once the log has
    /// been silent for `silenceLimit`.
    public func servingTime() -> Timestamp {
        let now = clock()
        let (time, newSilence) = shared.withLock { shared -> (Timestamp, Bool) in
            let time = Self.servingTime(now: now, shared, silenceLimit: silenceLimit)
            guard Self.isSilent(now: now, shared, silenceLimit: silenceLimit), shared.lastError == nil,
                !shared.silenceReported
            else { return (time, false) }
            shared.silenceReported = true
            return (time, true)
        }
        if newSilence {
            Counter(label: "cueline_log_silences_total").increment()
            logger.error(
                "the event log has not answered for \(silenceLimit / 1000) s; serving by the wall clock (the database accepts the connection and does not answer)",
                metadata: [
                    "known_until": "\(shared.withLock { $0.knownUntil })"
                ])
        }
        return time
    }

    /// Whether playlists follow the wall clock rather than the known log: before the log was first read, while it
    /// is unreachable, while its head is held, or while it has been silent for `silenceLimit`.
    private static func byWallClock(now: Timestamp, _ shared: Shared, silenceLimit: Int64) -> Bool {
        !shared.caughtUpOnce || shared.lastError != nil || shared.logHeadBusy
            || isSilent(now: now, shared, silenceLimit: silenceLimit)
    }

    private static func isSilent(now: Timestamp, _ shared: Shared, silenceLimit: Int64) -> Bool {
        shared.caughtUpOnce && now.milliseconds - silenceLimit > shared.lastHeard.milliseconds
    }

    private static func servingTime(now: Timestamp, _ shared: Shared, silenceLimit: Int64) -> Timestamp {
        byWallClock(now: now, shared, silenceLimit: silenceLimit) ? now : min(now, shared.knownUntil)
    }

    /// When a window for the boundary `boundary` became servable: once its bytes existed and the serving time had
    /// reached the boundary (now, if it has not yet).
    package func servableInstant(_ window: Rendered, boundary: Timestamp) -> Timestamp {
        servableInstant(readyAt: window.readyAt, boundary: boundary)
    }

    private func servableInstant(readyAt: Timestamp, boundary: Timestamp) -> Timestamp {
        max(boundary, readyAt, servingTimeReached(boundary) ?? clock())
    }

    /// What the ticker keeps of a window it published: to release the requests held on it, then to sample it and time it.
    private struct Published {
        var completedTicks: Int64
        var hasParts: Bool
        var version: Int64
        var tick: Timestamp
        var readyAt: Timestamp
        var bodies: [Identifier: ByteBuffer]

        init(_ window: borrowing Rendered) {
            completedTicks = window.completedTicks
            hasParts = window.partsPerSegment != nil
            version = window.version
            tick = window.tick
            readyAt = window.readyAt
            bodies = window.bodies
        }
    }

    /// When the serving time first reached `instant` (on the follower's clock): the instant itself when serving is not
    /// held back by the watermark, else when the known instant first passed it; nil when it has not yet.
    private func servingTimeReached(_ instant: Timestamp) -> Timestamp? {
        let now = clock()
        return shared.withLock { shared -> Timestamp? in
            guard !Self.byWallClock(now: now, shared, silenceLimit: silenceLimit) else { return instant }
            guard shared.knownUntil >= instant else { return nil }
            // Known before the moves still kept (or the store's watermark is not a clock): reached at the instant.
            guard let first = shared.passages.first, first.knownUntil < instant else { return instant }
            let passage = shared.passages.first { $0.knownUntil >= instant }
            return max(instant, passage?.at ?? instant)
        }
    }

    /// Renders every clock channel as soon as a segment boundary passes, so requests find the new window
    /// ready, and records how late after the boundary that happened. Channels wait in a queue ordered by their
    /// next boundary, so a wake touches only the channels that are due, however many there are.
    package func tickAtSegmentBoundaries() async throws {
        defer { closeBlocked() }
        // Samples go to the database beside the ticker, never in its way: a write that waits (a database host gone,
        // until keepalives drop the connection; a slow disk) must not hold the next boundary's windows or the requests
        // blocked on them. At most 64 batches wait; beyond that a batch is dropped and counted (`cueline verify` then
        // has fewer samples of those ticks to check, as during an outage).
        let (pending, recorder) = AsyncStream<[RenderSample]>.makeStream(bufferingPolicy: .bufferingOldest(64))
        try await withThrowingTaskGroup(of: Void.self) { group in
            if let sampleStore = samples {
                group.addTask { [logger] in
                    for await batch in pending {
                        do {
                            try await sampleStore.recordRenderSamples(batch)
                        } catch {
                            logger.warning("could not record render samples", metadata: ["error": "\(error)"])
                        }
                    }
                }
            }
            defer { recorder.finish() }
            try await tick(recordingSamplesIn: recorder)
        }
    }

    private func tick(recordingSamplesIn recorder: AsyncStream<[RenderSample]>.Continuation) async throws {
        let dropped = Counter(label: "cueline_render_samples_dropped_total")
        let rendered = Counter(label: "cueline_ticks_rendered_total")
        let lateness = Timer(label: "cueline_tick_lateness_seconds", preferredDisplayUnit: .seconds)
        var queue = BoundaryQueue()
        // When to render each channel's next window ahead (half a segment before its boundary, at most 3 s), and
        // the boundary it is for.
        var aheadQueue = BoundaryQueue()
        var aheadBoundary: [ChannelID: Timestamp] = [:]
        let cores = max(1, ProcessInfo.processInfo.activeProcessorCount)
        var queued: Set<ChannelID> = []
        var knownChannels = -1
        var lastScan = clock()
        var lastRendered: [ChannelID: Int64] = [:]
        var lastSampledVersion: [ChannelID: Int64] = [:]
        // The boundary whose watermark the loop is waiting for, and since when.
        var waitingFor: (due: Timestamp, since: ContinuousClock.Instant)?
        // The boundary a watermark was asked for ahead of.
        var askedFor: Timestamp?
        while !Task.isCancelled {
            var samples: [RenderSample] = []
            let now = servingTime()
            // New channels join the queue (a count check is cheap; a full look every 5 s catches the rest).
            let count = shared.withLock { $0.channels.count }
            if count != knownChannels || now.milliseconds(since: lastScan) >= 5000 {
                knownChannels = count
                lastScan = now
                let clockChannels = shared.withLock { shared in
                    shared.channels.compactMap { id, entry in
                        entry.state.config?.source == .clock && !queued.contains(id) ? id : nil
                    }
                }
                for id in clockChannels.sorted() {
                    queued.insert(id)
                    queue.push(now, id)
                }
            }
            // The windows of the channels due now are published (swapped in under the lock: rendered ahead), and the
            // requests held on each released as soon as it is: an event loop answers its share of them back to back,
            // taking those of the next channels as they come (woken at the first release, then once per
            // `StagedWakeups.step` requests, not once per channel). The windows replaced are let go of, and the samples
            // and lateness recorded, only after that. A window not rendered ahead (a command decided late, the first
            // boundary) is rendered here, then its requests released.
            var wakeups = StagedWakeups()
            var retired: [Rendered] = []
            var toRender: Set<ChannelID> = []
            var due: [(id: ChannelID, boundary: Timestamp, completed: Int64)] = []
            while let (at, id) = queue.first, at <= now {
                queue.pop()
                var replaced: Rendered?
                guard
                    let (config, ready) = shared.withLock({
                        $0.channels[id]?.publish(servingTime: now, retired: &replaced)
                    })
                else {
                    queued.remove(id)
                    continue
                }
                if let replaced { retired.append(replaced) }
                let timeline = Timeline(config)
                let completed = timeline.completedTicks(at: now)
                if lastRendered[id] != completed {
                    if !ready {
                        toRender.insert(id)
                    } else if config.partsPerSegment != nil {
                        // At once, channel by channel: the event loops start answering the first channel's players
                        // while the others are published (a loop's wake-up takes what gathers while it runs).
                        wakeups.resume(releasable(id, completedTicks: completed), true)
                    }
                    due.append((id, timeline.tickStart(completed), completed))
                }
                let next = timeline.nextTick(after: now)
                queue.push(next, id)
                // A channel is in the ahead queue once: a newer boundary replaces the one it waits for.
                if aheadBoundary.updateValue(next, forKey: id) == nil {
                    let lead = min(3000, timeline.tickMilliseconds / 2)
                    aheadQueue.push(max(now, next.adding(milliseconds: -lead)), id)
                }
            }
            wakeups.wake()
            retired = []
            var published: [(id: ChannelID, window: Published, boundary: Timestamp, completed: Int64)] = []
            var released: [Blocked.Waiter] = []
            for (id, boundary, completed) in due {
                // A render that fails leaves the channel's requests held (to their deadline, or a later window).
                guard let window = try? withWindow(id, Published.init) else { continue }
                if toRender.contains(id), window.hasParts, window.completedTicks >= completed {
                    released += releasable(id, completedTicks: window.completedTicks)
                }
                published.append((id, window, boundary, completed))
            }
            Self.resume(released, true)
            for (id, window, boundary, completed) in published {
                // Sample what is served: every 30th window of each channel, and every window with a schedule change.
                // Each channel's 30th falls on a tick of its own (`sampleOffset`): channels that share boundaries are
                // not all hashed and recorded at one boundary, in the milliseconds its held requests are answered in.
                if (completed + Self.sampleOffset(id)) % 30 == 0 || lastSampledVersion[id] != window.version {
                    lastSampledVersion[id] = window.version
                    for (rendition, body) in window.bodies.sorted(by: { $0.key < $1.key }) {
                        samples.append(
                            RenderSample(
                                channel: id, tick: window.tick, rendition: rendition,
                                rendererVersion: PlaylistBuilder.rendererVersion,
                                sha256: sha256Hex(String(buffer: body))))
                    }
                }
                if lastRendered[id] != nil {
                    // When the window became servable, not when this loop reached the channel: once its bytes
                    // existed (rendered ahead, or by whichever request or tick rendered it) and the serving time had
                    // reached its boundary (the watermark). Any request from then on is answered with it.
                    lateness.recordNanoseconds(
                        max(
                            0,
                            servableInstant(readyAt: window.readyAt, boundary: boundary).milliseconds(since: boundary))
                            * 1_000_000)
                    rendered.increment()
                }
                lastRendered[id] = completed
            }
            expireBlocked(now: clock())
            // Windows of the coming boundaries, rendered ahead on every core; published when their boundary is served.
            var dueAhead: [(ChannelID, Timestamp)] = []
            let aheadNow = clock()
            while let (due, id) = aheadQueue.first, due <= aheadNow {
                aheadQueue.pop()
                if let boundary = aheadBoundary.removeValue(forKey: id) { dueAhead.append((id, boundary)) }
            }
            if dueAhead.count < 64 || cores == 1 {
                for (id, boundary) in dueAhead { renderAhead(id, boundary: boundary) }
            } else {
                let chunk = (dueAhead.count + cores - 1) / cores
                await withTaskGroup(of: Void.self) { group in
                    for start in stride(from: 0, to: dueAhead.count, by: chunk) {
                        let part = dueAhead[start..<min(dueAhead.count, start + chunk)]
                        group.addTask { for (id, boundary) in part { self.renderAhead(id, boundary: boundary) } }
                    }
                }
            }
            if !samples.isEmpty, self.samples != nil, case .dropped = recorder.yield(samples) {
                dropped.increment(by: samples.count)
            }
            if let (due, _) = queue.first, due > now, due <= clock() {
                // Passed on the wall clock, not yet known from the log: read the watermark now rather than at the next poll,
                // and look again in half a millisecond (the read takes about one; players blocked on the boundary wait
                // for it), for 20 ms of this boundary (timed on the monotonic clock), then every 2 ms (a loaded database).
                _ = watermarkWake.withLock { $0?.yield() }
                if waitingFor?.due != due { waitingFor = (due, ContinuousClock.now) }
                let quick = ContinuousClock.now - waitingFor!.since < .milliseconds(20)
                try await Task.sleep(for: quick ? .microseconds(500) : .milliseconds(2), tolerance: .zero)
                continue
            }
            var next = min(
                queue.first?.0 ?? now.adding(milliseconds: 1000), aheadQueue.first?.0 ?? now.adding(milliseconds: 1000),
                now.adding(milliseconds: 1000))
            if let (due, _) = queue.first, shared.withLock({ $0.knownUntil }) < due {
                // The watermark reports the database clock plus the decision margin (Migrations/0012): read shortly before
                // the boundary, it already covers it, so the boundary does not wait for a round trip after it. A store
                // whose watermark is not ahead (or a read that comes late) falls back on the read after the boundary above.
                let ask = due.adding(milliseconds: -Self.watermarkLeadMilliseconds)
                if clock() >= ask {
                    if askedFor != due {
                        askedFor = due
                        _ = watermarkWake.withLock { $0?.yield() }
                    }
                } else {
                    next = min(next, ask)
                }
            }
            // To the millisecond (the clock's resolution), with no leeway (the executor's default lets a timer fire a
            // millisecond or a tenth of its wait late): up to a millisecond before what is due, then in steps of a
            // fifth of a millisecond, so a boundary is passed by at most that much (held players wait for it).
            // Past already (the serving time behind the clock, a watermark that lags): a millisecond, as before.
            let wait = next.milliseconds(since: clock())
            let step: Duration =
                wait >= 2 ? .milliseconds(min(1000, wait - 1)) : wait >= 0 ? .microseconds(200) : .milliseconds(1)
            try await Task.sleep(for: step, tolerance: .zero)
        }
    }

    /// How long before a boundary the ticker asks for a watermark: within the decision margin (20 ms), with room for the
    /// read's round trip.
    static let watermarkLeadMilliseconds: Int64 = 8

    /// Renders a clock channel's window for the boundary `boundary` ahead of it, from the schedule in effect at that
    /// instant as far as it is known now, and keeps it aside until a tick at or past the boundary is served. Returns
    /// whether it rendered (false: the channel is gone, not a clock channel, already past that boundary, or rendered
    /// ahead already from the same schedule). A command folded later that takes effect at or before the boundary
    /// changes the version in effect there, and that window is then rendered again when served.
    @discardableResult
    package func renderAhead(_ channel: ChannelID, boundary: Timestamp) -> Bool {
        let snapshot: (ChannelConfig, ChannelState, Int64, Rendered.Effect)? = shared.withLock { shared in
            guard let entry = shared.channels[channel], entry.lastTick < boundary else { return nil }
            let inEffect = entry.inEffect(at: boundary)
            let effect = entry.effect(at: boundary)
            guard let config = inEffect.config, config.source == .clock else { return nil }
            let completed = Timeline(config).completedTicks(at: boundary)
            if let ahead = entry.ahead, ahead.completedTicks == completed, ahead.effect == effect { return nil }
            if let current = entry.rendered, current.completedTicks == completed, current.effect == effect {
                return nil
            }
            return (config, inEffect, completed, effect)
        }
        guard let (config, inEffect, completed, effect) = snapshot else { return false }
        guard var rendered = try? Self.render(config: config, state: inEffect, tick: boundary) else { return false }
        rendered.completedTicks = completed
        rendered.effect = effect
        rendered.readyAt = clock()
        return shared.withLock { shared in
            // Served past the boundary meanwhile (a request rendered it): nothing to keep.
            guard let entry = shared.channels[channel], entry.lastTick < boundary else { return false }
            shared.channels[channel]!.ahead = rendered
            return true
        }
    }

    // MARK: - Blocking reload

    /// Waits until the ticker has published a window of `channel` with at least `target` completed ticks (parts), at
    /// most `timeoutMilliseconds`. Returns false on time-out or cancellation. Costs no thread: a continuation in a list
    /// that the channel's next tick walks once.
    public func awaitWindow(
        _ channel: ChannelID, rendition: Identifier? = nil, completedTicks target: Int64, timeoutMilliseconds: Int64
    ) async -> Bool {
        let key = Blocked.Key(channel: channel, rendition: rendition)
        let deadline = clock().adding(milliseconds: timeoutMilliseconds)
        let id = blocked.withLock { blocked in
            blocked.nextID &+= 1
            return blocked.nextID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                // Cancelled already (the client went away before this ran): not registered.
                guard !Task.isCancelled else { return continuation.resume(returning: false) }
                register(key, id: id, target: target, deadline: deadline, batch: nil) {
                    continuation.resume(returning: $0)
                }
            }
        } onCancel: {
            // A client that went away: its slot is freed now (if it was registered yet; else at its deadline).
            let waiter = blocked.withLock { blocked -> Blocked.Waiter? in
                guard let index = blocked.waiters[key]?.firstIndex(where: { $0.id == id }) else { return nil }
                blocked.count -= 1
                return blocked.waiters[key]!.remove(at: index)
            }
            if let waiter { Self.resume([waiter], false) }
        }
    }

    /// The same for a caller that is not a task (an HTTP handler on its event loop): `resume` is called once, from the
    /// ticker (or at once when the window exists already), with whether the window exists; the caller hops to its own
    /// thread. Returns the registration's id (for `cancelWindow`), or nil, without calling `resume`, when the ticker
    /// has stopped.
    ///
    /// - Parameter batch: where `resume` gathers its work (an event loop's), woken once the requests released with it
    ///   have been resumed, or in steps of them at a boundary (`StagedWakeups`): a loop then answers its share of a
    ///   part's thousand held requests back to back.
    public func whenWindow(
        _ channel: ChannelID, rendition: Identifier? = nil, completedTicks target: Int64, timeoutMilliseconds: Int64,
        batch: (any WakeupBatch)? = nil, _ resume: @escaping @Sendable (Bool) -> Void
    ) -> UInt64? {
        let key = Blocked.Key(channel: channel, rendition: rendition)
        let deadline = clock().adding(milliseconds: timeoutMilliseconds)
        // One take of the lock for the id and the registration (a thousand players re-register after every part).
        let (id, ready) =
            blocked.withLock { blocked -> (UInt64, Bool?)? in
                guard !blocked.closed else { return nil }
                blocked.nextID &+= 1
                return (
                    blocked.nextID,
                    Self.register(
                        &blocked, key, id: blocked.nextID, target: target, deadline: deadline, batch: batch,
                        resume: resume)
                )
            } ?? (0, nil)
        guard id != 0 else { return nil }
        if let ready {
            resume(ready)
            batch?.wake()
        }
        return id
    }

    /// Drops a registration of `whenWindow` whose caller went away (its connection closed): its `resume` is not called.
    public func cancelWindow(_ channel: ChannelID, rendition: Identifier? = nil, id: UInt64) {
        let key = Blocked.Key(channel: channel, rendition: rendition)
        blocked.withLock { blocked in
            guard let index = blocked.waiters[key]?.firstIndex(where: { $0.id == id }) else { return }
            blocked.waiters[key]!.remove(at: index)
            if blocked.waiters[key]!.isEmpty { blocked.waiters[key] = nil }
            blocked.count -= 1
        }
    }

    private func register(
        _ key: Blocked.Key, id: UInt64, target: Int64, deadline: Timestamp, batch: (any WakeupBatch)?,
        resume: @escaping @Sendable (Bool) -> Void
    ) {
        let ready = blocked.withLock {
            Self.register(&$0, key, id: id, target: target, deadline: deadline, batch: batch, resume: resume)
        }
        if let ready {
            resume(ready)
            batch?.wake()
        }
    }

    /// Adds a waiter under the lock, or says how to resume it at once (true: its window is there; false: closed).
    private static func register(
        _ blocked: inout Blocked, _ key: Blocked.Key, id: UInt64, target: Int64, deadline: Timestamp,
        batch: (any WakeupBatch)?,
        resume: @escaping @Sendable (Bool) -> Void
    ) -> Bool? {
        if blocked.closed { return false }
        if let published = blocked.published[key], published >= target { return true }
        blocked.waiters[key, default: []].append(
            .init(id: id, target: target, deadline: deadline, resume: resume, batch: batch))
        blocked.earliestDeadline = min(blocked.earliestDeadline, deadline)
        blocked.count += 1
        return nil
    }

    /// Resumes `waiters` with `value`, then wakes each batch they gathered in, once.
    private static func resume(_ waiters: [Blocked.Waiter], _ value: Bool) {
        var wakeups = StagedWakeups()
        wakeups.resume(waiters, value)
        wakeups.wake()
    }

    /// Requests released in steps (a boundary's channels one after another): their batches (event loops) are woken at
    /// the first release, so the loops start answering at once, then once `step` more requests have been released
    /// (a loop still answering takes them in the same wake-up; one that finished is woken again), and at `wake()`.
    /// Not once per channel: 5,000 channels of a few players each would wake each loop thousands of times.
    private struct StagedWakeups {
        static let step = 64
        private var batches: [any WakeupBatch] = []
        private var released = 0
        private var woken = false

        fileprivate mutating func resume(_ waiters: [Blocked.Waiter], _ value: Bool) {
            for waiter in waiters {
                waiter.resume(value)
                if let batch = waiter.batch, !batches.contains(where: { $0 === batch }) { batches.append(batch) }
            }
            released += waiters.count
            if !woken || released >= Self.step { wake() }
        }

        /// Wakes the batches gathered since the last wake.
        mutating func wake() {
            guard !batches.isEmpty else { return }
            for batch in batches { batch.wake() }
            batches = []
            released = 0
            woken = true
        }
    }

    /// Where a channel's every-30th sampled window falls (0–29), from its id: the same on every instance and every run
    /// (FNV-1a, not `Hasher`, which is seeded per process).
    static func sampleOffset(_ channel: ChannelID) -> Int64 {
        var hash: UInt32 = 2_166_136_261
        for byte in channel.rawValue.utf8 { hash = (hash ^ UInt32(byte)) &* 16_777_619 }
        return Int64(hash % 30)
    }

    /// Requests blocked now, over all channels.
    public var blockedRequests: Int { blocked.withLock { $0.count } }

    /// The capacity of a channel's array of events not yet in effect at its last tick (tests: flat in history).
    func pendingCapacity(of channel: ChannelID) -> Int? {
        shared.withLock { $0.channels[channel]?.pending.capacity }
    }

    /// The ticker published a window of `channel`: releases the requests waiting for it or an earlier one.
    private func releaseBlocked(_ channel: ChannelID, rendition: Identifier? = nil, completedTicks: Int64) {
        Self.resume(releasable(channel, rendition: rendition, completedTicks: completedTicks), true)
    }

    /// Records the window published and takes the requests waiting for it or an earlier one, for the caller to resume.
    private func releasable(_ channel: ChannelID, rendition: Identifier? = nil, completedTicks: Int64) -> [Blocked
        .Waiter]
    {
        let key = Blocked.Key(channel: channel, rendition: rendition)
        return blocked.withLock { blocked -> [Blocked.Waiter] in
            // A clock channel's windows only move forward. A relay rendition's upstream can go back (a restarted or
            // failed-over packager): what is published is where it is now, so a request for a part it has not reached
            // again is held, not woken at once into a loop.
            blocked.published[key] =
                rendition != nil ? completedTicks : max(blocked.published[key] ?? .min, completedTicks)
            guard let waiting = blocked.waiters[key] else { return [] }
            var ready: [Blocked.Waiter] = []
            var still: [Blocked.Waiter] = []
            for waiter in waiting {
                if waiter.target <= completedTicks { ready.append(waiter) } else { still.append(waiter) }
            }
            blocked.waiters[key] = still.isEmpty ? nil : still
            blocked.count -= ready.count
            return ready
        }
    }

    /// The ticker stops: answers every held request (as timed out) and holds no more.
    private func closeBlocked() {
        let all = blocked.withLock { blocked -> [Blocked.Waiter] in
            blocked.closed = true
            let all = blocked.waiters.values.flatMap { $0 }
            blocked.waiters = [:]
            blocked.count = 0
            return all
        }
        Self.resume(all, false)
    }

    /// Answers the requests whose deadline passed (at most every 100 ms).
    func expireBlocked(now: Timestamp) {
        let expired = blocked.withLock { blocked -> [Blocked.Waiter] in
            // Walked only once the earliest deadline may have passed (at most every 100 ms): not at every wake of the
            // ticker with thousands held.
            guard blocked.count > 0, blocked.earliestDeadline <= now, now.milliseconds(since: blocked.lastExpiry) >= 100
            else { return [] }
            blocked.lastExpiry = now
            var expired: [Blocked.Waiter] = []
            var earliest = Timestamp(milliseconds: .max)
            for (key, waiting) in blocked.waiters {
                guard waiting.contains(where: { $0.deadline <= now }) else {
                    for waiter in waiting { earliest = min(earliest, waiter.deadline) }
                    continue
                }
                var still: [Blocked.Waiter] = []
                for waiter in waiting {
                    if waiter.deadline <= now {
                        expired.append(waiter)
                    } else {
                        still.append(waiter)
                        earliest = min(earliest, waiter.deadline)
                    }
                }
                blocked.waiters[key] = still.isEmpty ? nil : still
            }
            blocked.earliestDeadline = earliest
            blocked.count -= expired.count
            return expired
        }
        Self.resume(expired, false)
    }

    // MARK: - Reads

    /// The channels known, sorted by id.
    public func channels() -> [ChannelState] {
        shared.withLock {
            $0.channels.values.map(\.state).filter { $0.config != nil }.sorted { $0.channel < $1.channel }
        }
    }

    public func state(of channel: ChannelID) -> ChannelState? {
        shared.withLock { $0.channels[channel]?.state }.flatMap { $0.config == nil ? nil : $0 }
    }

    /// The folded state of a channel as far as this follower has read, configured or not (for command handling).
    public func followedState(of channel: ChannelID) -> ChannelState? {
        shared.withLock { $0.channels[channel]?.state }
    }

    /// The channel's playlists at the current tick, rendered once per window and schedule version.
    ///
    /// The lock is held only to pick the tick and take a snapshot of the schedule; rendering happens outside it, so
    /// one channel's render never holds up another channel's requests.
    public func rendered(_ channel: ChannelID) throws(LookupError) -> Rendered {
        try withWindow(channel) { $0 }
    }

    /// Runs `body` on the channel's window at the current tick: under the lock, in place, when it is rendered already
    /// (a request then copies only what it takes from it, not the window), else on the window rendered now (outside the
    /// lock: one channel's render never holds up another channel's requests).
    private func withWindow<T: Sendable>(_ channel: ChannelID, _ body: (borrowing Rendered) -> T) throws(LookupError)
        -> T
    {
        let now = clock()
        var retired: Rendered?
        let step: Result<T, Entry.Step>? = shared.withLock { shared in
            // In place: `channels[channel]?` (or any read of the entry through the dictionary's getter) copies the whole entry.
            guard let index = shared.channels.index(forKey: channel) else { return nil }
            let serving = Self.servingTime(now: now, shared, silenceLimit: silenceLimit)
            return shared.channels.values[index].prepare(servingTime: serving, retired: &retired, body)
        }
        _ = consume retired  // the window replaced, freed here rather than under the lock
        switch step {
        case nil:
            throw .unknownChannel(channel)
        case .success(let value)?:
            return value
        case .failure(.render(let config, let inEffect, let tick, let completed, let effect, let upstreams))?:
            var rendered: Rendered
            do {
                rendered = try Self.render(config: config, state: inEffect, tick: tick, upstreams: upstreams)
            } catch {
                throw .renderFailed("\(error)")
            }
            rendered.completedTicks = completed
            rendered.effect = effect
            rendered.readyAt = clock()
            shared.withLock { shared in
                // Another request may have rendered a later tick (or a later upstream) meanwhile: keep the newest.
                guard let index = shared.channels.index(forKey: channel) else { return }
                if let current = shared.channels.values[index].rendered,
                    current.tick > rendered.tick || current.completedTicks > rendered.completedTicks
                {
                    return
                }
                shared.channels.values[index].rendered = rendered
            }
            return body(rendered)
        }
    }

    /// One rendition's media playlist now.
    public func mediaPlaylist(_ channel: ChannelID, rendition: Identifier) throws(LookupError) -> (
        text: String, targetDuration: Int, tick: Timestamp
    ) {
        let rendered = try rendered(channel)
        guard let config = state(of: channel)?.config, config.renditions.contains(where: { $0.name == rendition })
        else {
            throw .unknownRendition(channel: channel, rendition: rendition)
        }
        guard let text = rendered.bodies[rendition].map({ String(buffer: $0) }) else {
            if case .relay = config.source { throw .upstreamMissing(channel: channel, rendition: rendition) }
            throw .notStarted(
                channel: channel,
                firstSegmentEnds: Timeline(config).segmentStart(
                    Int64(
                        (3 * config.targetDuration * 1000 + Int(config.segmentDurationMilliseconds) - 1)
                            / Int(config.segmentDurationMilliseconds))))
        }
        return (text, rendered.targetDuration, rendered.tick)
    }

    /// One rendition's media playlist now, pre-encoded: the public GET's path. When the window is already rendered
    /// this is one lock take and no copy of the bytes (the channel's state is looked at only to explain a miss).
    ///
    /// - Parameter skip: a delta update asked for (`_HLS_skip`); the full playlist for a channel without parts.
    public func servedMedia(_ channel: ChannelID, rendition: Identifier, skip: PlaylistBuilder.DeltaUpdate? = nil)
        throws(LookupError) -> ServedMedia
    {
        let served = try withWindow(channel) { rendered -> ServedMedia? in
            guard let body = skip.flatMap({ rendered.deltaBodies[rendition]?[$0] }) ?? rendered.bodies[rendition] else {
                return nil
            }
            return ServedMedia(
                body: body, targetDuration: rendered.relayTargetDurations[rendition] ?? rendered.targetDuration,
                tick: rendered.tick,
                tickText: rendered.tickText,
                completedTicks: rendered.completedTicks, partsPerSegment: rendered.partsPerSegment,
                partMilliseconds: rendered.partMilliseconds,
                tickBoundary: rendered.tickBoundary, relayParts: rendered.relayParts[rendition])
        }
        if let served { return served }
        // A miss: unknown rendition, not started, or a relay's upstream not read yet (the same answers as `mediaPlaylist`).
        // If a request rendered the rendition meanwhile, that window is served.
        let (text, targetDuration, tick) = try mediaPlaylist(channel, rendition: rendition)
        return ServedMedia(
            body: ByteBuffer(string: text), targetDuration: targetDuration, tick: tick, tickText: tick.iso8601)
    }

    /// Relay channels: the upstream playlist of one rendition changed. For an upstream with parts the window is
    /// rendered now and the requests blocked on that rendition's next parts are released (one wake-up per upstream
    /// part, like a clock channel's per part boundary).
    ///
    /// - Parameter url: the upstream URL it was read from: dropped unless the channel's source still gives that URL for
    ///   that rendition (a read that began before the source or the renditions changed is not kept).
    public func updateUpstream(
        _ channel: ChannelID, rendition: Identifier, playlist: MediaPlaylist, from url: String? = nil
    ) {
        let changed = shared.withLock { shared -> Bool in
            guard var entry = shared.channels[channel], entry.upstreams[rendition] != playlist,
                let config = entry.state.config, case .relay(let template) = config.source,
                config.renditions.contains(where: { $0.name == rendition }),
                url == nil || url == RelayDecorator.upstreamURL(template: template, rendition: rendition)
            else { return false }
            // Renditions no longer configured are not kept.
            entry.upstreams = entry.upstreams.filter { name, _ in config.renditions.contains { $0.name == name } }
            entry.upstreams[rendition] = playlist
            entry.upstreamGeneration += 1
            entry.rendered = nil
            shared.channels[channel] = entry
            return true
        }
        guard changed else { return }
        _ = try? rendered(channel)
        // Upstream without parts now: nothing to wait for (the held requests are answered with what there is).
        releaseBlocked(
            channel, rendition: rendition, completedTicks: RelayDecorator.partsPosition(playlist)?.ordinal ?? .max)
    }

    /// Renders every rendition of a channel from one snapshot. Pure; also used by replay.
    public static func render(
        config: ChannelConfig, state: ChannelState, tick: Timestamp, upstreams: [Identifier: MediaPlaylist] = [:]
    ) throws -> Rendered {
        var playlists: [Identifier: String] = [:]
        var deltas: [Identifier: DeltaBodies] = [:]
        var relayParts: [Identifier: RelayDecorator.PartsPosition] = [:]
        var relayTargetDurations: [Identifier: Int] = [:]
        for rendition in config.renditions {
            switch config.source {
            case .clock:
                if let playlist = PlaylistBuilder.mediaPlaylist(
                    config: config, state: state, rendition: rendition, at: tick)
                {
                    playlists[rendition.name] = try PlaylistRenderer.render(playlist)
                    if let yes = PlaylistBuilder.deltaPlaylist(
                        playlist, config: config, state: state, at: tick, update: .segments),
                        let v2 = PlaylistBuilder.deltaPlaylist(
                            playlist, config: config, state: state, at: tick, update: .segmentsAndDateRanges)
                    {
                        deltas[rendition.name] = DeltaBodies(
                            segments: ByteBuffer(string: try PlaylistRenderer.render(yes)),
                            segmentsAndDateRanges: ByteBuffer(string: try PlaylistRenderer.render(v2)))
                    }
                }
            case .relay(let template):
                if let upstream = upstreams[rendition.name] {
                    if relayParts.isEmpty {
                        // Where every rendition's copy stands, for each one's rendition reports (one snapshot for all).
                        relayParts = upstreams.compactMapValues { RelayDecorator.partsPosition($0) }
                    }
                    let url = RelayDecorator.upstreamURL(template: template, rendition: rendition.name)
                    playlists[rendition.name] = try PlaylistRenderer.render(
                        try RelayDecorator.decorate(
                            upstream, upstreamURL: url, config: config, state: state, positions: relayParts))
                    relayTargetDurations[rendition.name] = upstream.targetDuration
                }
            }
        }
        var rendered = Rendered(
            completedTicks: Timeline(config).completedTicks(at: tick), version: state.version, tick: tick,
            targetDuration: config.targetDuration, playlists: playlists,
            multivariant: try PlaylistRenderer.render(PlaylistBuilder.multivariant(config: config)))
        rendered.deltaBodies = deltas
        rendered.relayParts = relayParts
        rendered.relayTargetDurations = relayTargetDurations
        rendered.partsPerSegment = config.source == .clock ? config.partsPerSegment : nil
        rendered.partMilliseconds = config.source == .clock ? config.partDurationMilliseconds : nil
        if config.source == .clock { rendered.tickBoundary = Timeline(config).tickStart(rendered.completedTicks) }
        return rendered
    }
}

extension ChannelFollower.Entry {
    /// What a request needs: the cached playlists, or what to render them from.
    /// A window to render (`prepare` answers from the kept one in place otherwise).
    enum Step: Error {
        case render(
            config: ChannelConfig, state: ChannelState, tick: Timestamp, completed: Int64,
            effect: ChannelFollower.Rendered.Effect,
            upstreams: [Identifier: MediaPlaylist])
    }

    /// Folds an event in. Returns the tick already served at or after the event's effect without it, if any: only
    /// possible while the log was unreachable (then ticks are served past the watermark, see `servingTime`).
    mutating func fold(_ recorded: RecordedScheduleEvent) -> Timestamp? {
        let diverged = lastTick >= recorded.attribution.at ? lastTick : nil
        state.apply(recorded)
        pending.append(recorded)
        settle(upTo: lastTick)
        rendered = nil
        return diverged
    }

    /// Picks the tick (never before the last one served), settles what is in effect for good, and answers `body` from
    /// the kept window, in place, when the window and the schedule in effect are the same; else says what to render.
    /// Nil: the channel has no configuration in effect.
    ///
    /// - Parameter retired: the window the swap replaced, if any, for the caller to let go of outside the lock.
    mutating func prepare<T>(
        servingTime: Timestamp, retired: inout ChannelFollower.Rendered?,
        _ body: (borrowing ChannelFollower.Rendered) -> T
    ) -> Result<T, Step>? {
        let tick = max(servingTime, lastTick)
        lastTick = tick
        settle(upTo: tick)
        let effect = effect(at: tick)
        // The settled state is in effect unless a pending event is (then it is folded, only to be rendered from).
        let completed: Int64
        if effect.pending == 0 {
            guard let config = settled.config else { return nil }
            completed = config.source == .clock ? Timeline(config).completedTicks(at: tick) : upstreamGeneration
        } else {
            guard let config = inEffect(at: tick).config else { return nil }
            completed = config.source == .clock ? Timeline(config).completedTicks(at: tick) : upstreamGeneration
        }
        // Compared in place: binding the kept window to a name would copy it.
        if rendered?.completedTicks == completed, rendered?.effect == effect {
            return .success(body(rendered!))
        }
        if ahead?.completedTicks == completed, ahead?.effect == effect, let aheadTick = ahead?.tick, aheadTick <= tick {
            // Rendered ahead for this window from this schedule: published now (the swap), not rendered again.
            retired = rendered.take()
            rendered = ahead.take()
            return .success(body(rendered!))
        }
        let inEffect = inEffect(at: tick)
        guard let config = inEffect.config else { return nil }
        return .failure(
            .render(
                config: config, state: inEffect, tick: tick, completed: completed, effect: effect, upstreams: upstreams)
        )
    }

    /// The ticker at a clock channel's boundary: moves the channel's tick to `servingTime` (as any request would) and
    /// publishes the window of that tick if it is at hand (kept, or rendered ahead: the swap), in place. Nil for a relay
    /// or a channel without configuration; `ready` false when the window is still to be rendered.
    mutating func publish(servingTime: Timestamp, retired: inout ChannelFollower.Rendered?) -> (
        config: ChannelConfig, ready: Bool
    )? {
        guard let config = state.config, config.source == .clock else { return nil }
        switch prepare(servingTime: servingTime, retired: &retired, { _ in () }) {
        case .success?: return (config, true)
        case .failure?, nil: return (config, false)
        }
    }

    /// Moves the leading pending events decided at or before `tick` into the settled state. Ticks served to a
    /// channel never go backwards, so they are in effect for good.
    mutating func settle(upTo tick: Timestamp) {
        var settledCount = 0
        for event in pending {
            guard event.attribution.at <= tick else { break }
            settled.apply(event)
            settledCount += 1
        }
        guard settledCount > 0 else { return }
        pending.removeFirst(settledCount)
        // A log read before the first tick (a restart on a long log) leaves the array at its peak capacity, 100,000
        // events for a year's channel, and their memory in the allocator: both are let go of.
        if pending.capacity > 1024, pending.capacity > 4 * pending.count {
            var kept: [RecordedScheduleEvent] = []
            kept.reserveCapacity(pending.count)
            kept.append(contentsOf: pending)
            pending = kept
            if settledCount >= 10_000 { MemoryTrim.request() }
        }
    }

    /// Which events `inEffect(at: tick)` folds (see ``ChannelFollower/Rendered/Effect``): what a kept window is
    /// compared on, not the version alone.
    func effect(at tick: Timestamp) -> ChannelFollower.Rendered.Effect {
        .init(settled: settled.version, pending: pending.count { $0.attribution.at <= tick })
    }

    /// What `fold(asOf: tick)` of the whole log gives: the settled prefix, then the pending events decided at or
    /// before `tick` in version order.
    func inEffect(at tick: Timestamp) -> ChannelState {
        guard pending.contains(where: { $0.attribution.at <= tick }) else { return settled }
        var state = settled
        for event in pending where event.attribution.at <= tick { state.apply(event) }
        return state
    }
}

/// A binary min-heap of (instant, channel), ordered by instant then channel id so ties are deterministic.
struct BoundaryQueue {
    private var items: [(Timestamp, ChannelID)] = []

    var first: (Timestamp, ChannelID)? { items.first }

    private static func less(_ a: (Timestamp, ChannelID), _ b: (Timestamp, ChannelID)) -> Bool {
        a.0 < b.0 || (a.0 == b.0 && a.1 < b.1)
    }

    mutating func push(_ at: Timestamp, _ id: ChannelID) {
        items.append((at, id))
        var child = items.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard Self.less(items[child], items[parent]) else { break }
            items.swapAt(child, parent)
            child = parent
        }
    }

    mutating func pop() {
        guard !items.isEmpty else { return }
        items.swapAt(0, items.count - 1)
        items.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1, right = left + 1
            var smallest = parent
            if left < items.count && Self.less(items[left], items[smallest]) { smallest = left }
            if right < items.count && Self.less(items[right], items[smallest]) { smallest = right }
            guard smallest != parent else { return }
            items.swapAt(parent, smallest)
            parent = smallest
        }
    }
}

/// Where the wake-ups of held requests gather (an HTTP server's event loop): each `resume` given with it adds its work,
/// and `wake()`, called after they are resumed (at a boundary, in steps while later channels are published), runs
/// what gathered, and what gathers while it runs.
public protocol WakeupBatch: AnyObject, Sendable {
    func wake()
}
