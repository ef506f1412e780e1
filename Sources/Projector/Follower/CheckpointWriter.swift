import EventStore
import Logging
import Metrics
import Schedule
import Synchronization

/// Writes the follower's replay checkpoints (`ChannelSnapshot`, every `interval` events of a channel) to the log's
/// database, off the hot path: the follower hands over the folded state it already holds (a copy of the hot form, no
/// I/O under its lock), and this service encodes and inserts it on its own task, one at a time, so that the first
/// replay of any instant of a long log reads at most `interval` events past a checkpoint (issue 34, item 7).
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

    func run() async {
        let (wakes, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        state.withLock { $0.wake = continuation }
        defer { state.withLock { $0.wake = nil } }
        var stored: [ChannelID: Int64] = [:]
        do { stored = try await latestStored() } catch {
            report(error)
        }
        state.withLock { state in
            state.stored = stored.merging(state.stored ?? [:], uniquingKeysWith: max)
        }
        continuation.yield()
        for await _ in wakes {
            while let next = take() {
                do {
                    try await insert(next)
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
                }
                if Task.isCancelled { return }
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
