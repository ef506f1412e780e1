import EventStore
import Logging
import Metrics
import Schedule
import Synchronization

/// Writes the follower's replay checkpoints (`ChannelSnapshot`, every `interval` events of a channel) to the log's
/// database, off the hot path: the follower hands over the folded state it already holds (a copy of the hot form, no
/// I/O under its lock), and this service encodes and inserts it on its own task, one at a time, so that the first
/// replay of any instant of a long log reads at most `interval` events past a checkpoint (issue 34, item 7). A write
/// that fails is tried again with a backoff. A channel whose log holds an event this build cannot read gets no
/// checkpoint past it (`ChannelFollower.Entry.skippedUnreadable`): its fold is not the one a build that reads it reaches.
///
/// The service role inserts and never replaces (`PostgresEventStore.insertSnapshot`, migration 0014): a checkpoint
/// already there is kept, and the database records who wrote each one, which `cueline replay` names and
/// `cueline verify` re-folds. Versions at or below a channel's latest checkpoint (read once when it starts) are not
/// offered again, so a restart that folds a long log again writes nothing it wrote before.
final class CheckpointWriter: Sendable {
    static let interval: Int64 = 1000
    /// Checkpoints waiting to be written; past it the oldest are dropped (counted): a later one of the same channel
    /// serves the instants after it, and `cueline checkpoint` writes any that are missing.
    static let maximumPending = 4096

    private struct State {
        var pending: [ChannelSnapshot] = []
        var head = 0
        /// The highest version written or known stored, by channel (nil until the stored ones are read).
        var stored: [ChannelID: Int64]?
        var wake: AsyncStream<Void>.Continuation?
        var lastError: String?
        var written = 0
    }

    private let state = Mutex(State())
    private let insert: @Sendable (ChannelSnapshot) async throws -> Void
    private let latestStored: @Sendable () async throws -> [ChannelID: Int64]
    private let logger: Logger

    init(store: PostgresEventStore, logger: Logger) {
        insert = { try await store.insertSnapshot($0) }
        latestStored = { try await store.latestSnapshotVersions() }
        self.logger = logger
        _ = Counter(label: "cueline_checkpoints_written_total")
        _ = Counter(label: "cueline_checkpoint_errors_total")
    }

    /// How many this writer inserted, and whether it has nothing left to write (tests).
    var progress: (written: Int, idle: Bool) {
        state.withLock { ($0.written, $0.stored != nil && $0.head == $0.pending.count) }
    }

    /// Whether a channel's fold at `version` is one to checkpoint: every `interval`-th version.
    static func isDue(_ version: Int64) -> Bool { version > 0 && version % interval == 0 }

    /// Offers a checkpoint; cheap (no I/O, no encoding), called under the follower's lock.
    func offer(_ snapshot: ChannelSnapshot) {
        let wake = state.withLock { state -> AsyncStream<Void>.Continuation? in
            if let stored = state.stored?[snapshot.channel], stored >= snapshot.version { return nil }
            if state.pending.count - state.head >= Self.maximumPending {
                state.head += 1
                Counter(label: "cueline_checkpoints_dropped_total").increment()
            }
            if state.head > 1024, state.head * 2 > state.pending.count {
                state.pending.removeFirst(state.head)
                state.head = 0
            }
            state.pending.append(snapshot)
            return state.wake
        }
        wake?.yield()
    }

    /// Reads the versions stored already, so that the first catch-up's offers at or below them are dropped at once
    /// instead of queued (`buildApplication` calls it before the follower reads the log; `run()` does if it was not).
    func prime() async {
        guard state.withLock({ $0.stored == nil }) else { return }
        var stored: [ChannelID: Int64] = [:]
        do { stored = try await latestStored() } catch { report(error) }
        state.withLock { state in
            state.stored = stored.merging(state.stored ?? [:], uniquingKeysWith: max)
            let known = state.stored!
            state.pending = state.pending[state.head...].filter { $0.version > (known[$0.channel] ?? 0) }
            state.head = 0
        }
    }

    func run() async {
        let (wakes, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        state.withLock { $0.wake = continuation }
        defer { state.withLock { $0.wake = nil } }
        await prime()
        continuation.yield()
        // A write that fails (the database away) is tried again, after 1 s, then twice as long each time, up to 60 s:
        // a gap left here would otherwise stay until an operator's `cueline checkpoint`.
        var backoff = Duration.seconds(1)
        for await _ in wakes {
            while let next = take() {
                do {
                    try await insert(next)
                    backoff = .seconds(1)
                    Counter(label: "cueline_checkpoints_written_total").increment()
                    let recovered = state.withLock { state -> Bool in
                        state.written += 1
                        let known = state.stored?[next.channel] ?? 0
                        state.stored?[next.channel] = max(known, next.version)
                        defer { state.lastError = nil }
                        return state.lastError != nil
                    }
                    if recovered { logger.notice("writing replay checkpoints again") }
                } catch is CancellationError {
                    return
                } catch {
                    report(error)
                    putBack(next)
                    do { try await Task.sleep(for: backoff) } catch { return }
                    backoff = min(backoff * 2, .seconds(60))
                }
                if Task.isCancelled { return }
            }
        }
    }

    /// A checkpoint whose write failed goes back to the front, to be tried first.
    private func putBack(_ snapshot: ChannelSnapshot) {
        state.withLock { state in
            if state.head > 0 {
                state.head -= 1
                state.pending[state.head] = snapshot
            } else {
                state.pending.insert(snapshot, at: 0)
            }
        }
    }

    /// The next checkpoint to write, skipping those a later write made redundant (none: a version below the stored).
    private func take() -> ChannelSnapshot? {
        state.withLock { state in
            while state.head < state.pending.count {
                let next = state.pending[state.head]
                state.head += 1
                if state.head == state.pending.count {
                    state.pending.removeAll(keepingCapacity: false)
                    state.head = 0
                }
                if let stored = state.stored?[next.channel], stored >= next.version { continue }
                return next
            }
            return nil
        }
    }

    private func report(_ error: any Error) {
        Counter(label: "cueline_checkpoint_errors_total").increment()
        let first = state.withLock { state -> Bool in
            defer { state.lastError = "\(error)" }
            return state.lastError != "\(error)"
        }
        guard first else { return }
        logger.warning(
            "cannot write a replay checkpoint; replays read further back in the log until one is written (cueline checkpoint writes them too)",
            metadata: ["error": "\(error)"])
    }
}
