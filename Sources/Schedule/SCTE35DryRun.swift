import HLS

/// `cueline scte35 dry-run`: every section a channel received, decided again against a proposed policy, in the log's
/// order and at the instants the server decided them. Pure.
///
/// The log is folded as it is, except that what each received section led to (the events after its
/// `SCTE35Received`) is replaced by what the proposed policy decides, so a break the proposal would not have placed is
/// not there for a later end to find. Operators' commands are folded as they were decided. With the policy that was in
/// force (`policy` nil: each section under the policy the log had set when it arrived), every line is what the log
/// shows.
public enum SCTE35DryRun {
    public struct Line: Hashable, Sendable, Codable {
        /// When the section was decided (its `decided_at`), and its event's version in the log.
        public var at: Timestamp
        public var version: Int64
        public var section: String
        /// What the log shows it did.
        public var logged: SCTE35Received.Outcome
        public var loggedBreak: BreakID?
        public var loggedDetail: String
        /// What the proposed policy decides: an outcome, or why it would have been refused (then nothing is written).
        public var proposed: SCTE35Received.Outcome?
        public var proposedBreak: BreakID?
        public var proposedDetail: String
        public var differs: Bool
    }

    /// The lines of the sections decided within `between` (every one when nil).
    public static func run(
        _ events: [RecordedScheduleEvent], channel: ChannelID, policy: SCTE35Policy?,
        between: ClosedRange<Timestamp>? = nil
    ) -> [Line] {
        var state = ChannelState(channel: channel, retention: .window)
        var lines: [Line] = []
        var index = events.startIndex
        while index < events.endIndex {
            let recorded = events[index]
            index += 1
            guard case .scte35Received(let logged) = recorded.event else {
                state.apply(recorded)
                continue
            }
            // What the section led to in the log: the events after it, replaced below by what the proposal decides.
            let consequences = events[index..<min(events.endIndex, index + logged.consequences)].map(\.event)
            index += consequences.count
            let now = recorded.attribution.at
            var line = Line(
                at: now, version: recorded.version, section: logged.ingest.section, logged: logged.outcome,
                loggedBreak: logged.breakID, loggedDetail: logged.detail, proposed: nil, proposedBreak: nil,
                proposedDetail: "", differs: true)
            do {
                let (received, decided) = try decideIngest(
                    logged.ingest, policy: policy ?? state.scte35Policy ?? .standard, state: state, now: now)
                for event in [.scte35Received(received)] + decided {
                    state.apply(
                        RecordedScheduleEvent(
                            event: event, version: recorded.version, position: recorded.position,
                            attribution: recorded.attribution))
                }
                line.proposed = received.outcome
                line.proposedBreak = received.breakID
                line.proposedDetail = received.detail
                line.differs =
                    received.outcome != logged.outcome || received.breakID != logged.breakID || decided != consequences
            } catch {
                line.proposedDetail = "refused: \(error)"
            }
            if between.map({ $0.contains(now) }) ?? true { lines.append(line) }
        }
        return lines
    }
}
