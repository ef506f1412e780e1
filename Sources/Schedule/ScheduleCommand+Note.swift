import HLS

extension ScheduleCommand {
    /// What an operator should know about how the command was applied that the events alone do not say: a start
    /// moved to a segment boundary, a break removed instead of ended early. Nil when it did what it says.
    ///
    /// - Parameters:
    ///   - events: the events the command produced (the original ones, on a retry).
    ///   - decidedAt: the instant it was decided (`decided_at` of its events), which `--in` counts from.
    public func note(for events: [ScheduleEvent], decidedAt: Timestamp) -> String? {
        switch (self, events.first) {
        case (.placeBreak(let request), .breakPlaced(let spec)?):
            let requested = request.requestedStart(decidedAt: decidedAt)
            guard spec.start != requested else { return nil }
            return "start \(spec.start) (snapped from \(requested) to the next segment boundary; align exact keeps it)"
        case (.cancelCurrentEvent, .breakCancelled(let id, .cancelCurrent)?):
            return "\(id) had not reached the live edge (no segment holds it yet): removed instead of ended early"
        default:
            return nil
        }
    }
}
