/// What a section asks of the break schedule, independent of how it was signalled.
public enum Cue: Hashable, Sendable {
    /// Leave the network: a break starts. Duration in milliseconds when the section gives one.
    case out(eventID: UInt32, durationMilliseconds: Int64?)
    /// Return to the network: the break with this event id ends now.
    case `in`(eventID: UInt32)
    /// The event with this id is cancelled.
    case cancel(eventID: UInt32)
}

extension SpliceInfoSection {
    /// The cues this section carries, in order: one for a `splice_insert`, one per break-related segmentation
    /// descriptor of a `time_signal`. Empty for `splice_null`, heartbeats and segmentation types that are not
    /// breaks (programs, chapters, content identification).
    public var cues: [Cue] {
        switch command {
        case .insert(let insert):
            if insert.cancel { return [.cancel(eventID: insert.eventID)] }
            if insert.outOfNetwork {
                return [
                    .out(eventID: insert.eventID, durationMilliseconds: insert.breakDuration.map(ticksToMilliseconds))
                ]
            }
            return [.in(eventID: insert.eventID)]
        case .timeSignal:
            return descriptors.compactMap { descriptor -> Cue? in
                guard case .segmentation(let segmentation) = descriptor else { return nil }
                if segmentation.cancel { return .cancel(eventID: segmentation.eventID) }
                if SegmentationType.breakStarts.contains(segmentation.typeID) {
                    return .out(
                        eventID: segmentation.eventID,
                        durationMilliseconds: segmentation.duration.map(ticksToMilliseconds))
                }
                if SegmentationType.breakEnds.contains(segmentation.typeID) {
                    return .in(eventID: segmentation.eventID)
                }
                return nil
            }
        case .null, .bandwidthReservation, .privateCommand:
            return []
        }
    }
}

/// 90 kHz ticks to milliseconds, to the nearest.
public func ticksToMilliseconds(_ ticks: UInt64) -> Int64 {
    Int64((ticks + 45) / 90)
}
