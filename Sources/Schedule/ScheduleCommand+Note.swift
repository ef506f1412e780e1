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
            var notes: [String] = []
            let requested = request.requestedStart(decidedAt: decidedAt)
            if spec.start != requested {
                notes.append(
                    "start \(spec.start) (snapped from \(requested) to the next segment boundary; align exact keeps it)"
                )
            }
            if let media = spec.media {
                if media.requestedDurationMilliseconds != nil {
                    notes.append(
                        "planned \(DecimalNumber(milliseconds: spec.plannedDurationMilliseconds)) s, the length of the media (\(DecimalNumber(milliseconds: request.plannedDurationMilliseconds)) s was asked)"
                    )
                }
                let chunks = media.assets.reduce(0) { $0 + ($1?.chunkMilliseconds?.count ?? 0) }
                if chunks > 0 {
                    let longest = media.assets.compactMap { $0?.chunkMilliseconds?.max() }.max() ?? 0
                    notes.append(
                        "served as \(chunks) chunks of at most \(DecimalNumber(milliseconds: longest)) s, so an early return ends the ad within one chunk"
                    )
                }
            }
            return notes.isEmpty ? nil : notes.joined(separator: "; ")
        case (.ingestSCTE35, .scte35Received(let received)?):
            // What the section did under the channel's policy, then what the command it became says of itself.
            let rest = Array(events.dropFirst())
            let inner: String? =
                switch rest.first {
                case .breakPlaced(let spec)?:
                    ScheduleCommand.placeBreak(
                        PlaceBreak(
                            id: spec.id, start: .inMilliseconds(0),
                            plannedDurationMilliseconds: spec.media?.requestedDurationMilliseconds
                                ?? spec.plannedDurationMilliseconds, asset: spec.asset,
                            alignment: received.ingest.alignment)
                    ).note(for: rest, decidedAt: decidedAt)
                default: nil
                }
            return "SCTE-35: \(received.detail)" + (inner.map { "; \($0)" } ?? "")
        case (.cancelCurrentEvent, .breakCancelled(let id, .cancelCurrent)?):
            return "\(id) had not reached the live edge (no segment holds it yet): removed instead of ended early"
        default:
            return nil
        }
    }
}
