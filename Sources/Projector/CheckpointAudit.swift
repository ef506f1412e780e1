import EventStore
import Schedule

extension Replay {
    /// Re-folds the log at every stored checkpoint of `channel` and describes those that differ from the fold: replay
    /// trusts a checkpoint while the log's hash at its version matches, so one is only as good as the role that wrote
    /// it (`cueline verify` fails on any listed here).
    /// - Parameters:
    ///   - events: the channel's whole log, in version order; `readable`: those this build decodes (`ChannelLoader`).
    public static func auditCheckpoints(
        _ channel: ChannelID, events: [RecordedEvent], readable: [RecordedScheduleEvent], store: PostgresEventStore
    ) async throws -> (checked: Int, mismatched: [String]) {
        let stored = try await store.storedSnapshots(of: channel)
        guard !stored.isEmpty else { return (0, []) }
        let hashes = Dictionary(events.map { ($0.version, $0.hash) }, uniquingKeysWith: { first, _ in first })
        var state = ChannelState(channel: channel, retention: .window)
        var remaining = readable.makeIterator()
        var next = remaining.next()
        var mismatched: [String] = []
        var checked = 0
        for (version, writtenBy, snapshot) in stored {
            while let event = next, event.version <= version {
                state.apply(event)
                next = remaining.next()
            }
            guard let snapshot else {
                mismatched.append("version \(version), written by \(writtenBy): this build cannot read it")
                continue
            }
            guard snapshot.fold == ChannelSnapshot.foldVersion else { continue }  // never used by this build
            checked += 1
            let folded = state.version == version ? ChannelSnapshot(state, chainHash: hashes[version] ?? nil) : nil
            guard folded != snapshot else { continue }
            mismatched.append(
                "version \(version), written by \(writtenBy): differs from the fold of the log at that version; replay "
                    + "uses it while the log's hash there matches: delete it (DELETE FROM cueline_snapshots WHERE "
                    + "channel = '\(channel)' AND version = \(version)) and find how \(writtenBy) wrote it")
        }
        return (checked, mismatched)
    }
}
