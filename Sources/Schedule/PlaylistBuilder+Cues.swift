import HLS

/// The segment-level ad markers of a channel whose signalling asks for them (`--markers scte35|both`).
extension PlaylistBuilder {
    /// The CUE markers of the segments `segments` (the window and, with parts, the segment in progress), by segment
    /// number, in the order they precede the segment. Empty unless the channel's signalling writes them.
    ///
    /// A break's first segment is the first one starting at or after its start (a break placed on a clock channel
    /// starts on a boundary): `EXT-X-CUE-OUT:DURATION=<planned>` precedes it, `EXT-X-CUE-OUT-CONT` with the time since
    /// that segment's start every later segment starting before the break's end (planned, or the playout limit's),
    /// and `EXT-X-CUE-IN` the first segment starting at or after that end. A break that covers no whole segment gets
    /// none (its date range still carries `SCTE35-OUT`). An early return ends at the live edge its decision saw, so
    /// no published segment's markers change; back-to-back breaks give one segment `CUE-IN` then `CUE-OUT`.
    static func cueMarkers(
        config: ChannelConfig, state: ChannelState, timeline: Timeline, segments: ClosedRange<Int64>
    ) -> [Int64: [CueMarker]] {
        guard config.signalling?.markers.cueMarkers == true else { return [:] }
        var cues: [Int64: [CueMarker]] = [:]
        let last = timeline.segmentStart(segments.upperBound)
        // From breaks ending a segment before the first one: the first segment may carry their CUE-IN.
        let from = timeline.segmentStart(segments.lowerBound).adding(milliseconds: -timeline.segmentMilliseconds)
        for item in state.breaks[state.firstIndex(coveringOrAfter: from)...] where !item.isCancelled {
            if item.start > last { break }
            let out = timeline.segment(atOrAfter: item.start)
            let back = timeline.segment(atOrAfter: item.end)
            guard back > out, back >= segments.lowerBound, out <= segments.upperBound else { continue }
            let duration = DecimalNumber(milliseconds: item.spec.plannedDurationMilliseconds)
            let outStart = timeline.segmentStart(out)
            for n in max(out, segments.lowerBound)...min(back, segments.upperBound) {
                let marker: CueMarker
                if n == out {
                    marker = .out(duration: duration)
                } else if n == back {
                    marker = .in
                } else {
                    marker = .cont(
                        elapsed: DecimalNumber(milliseconds: timeline.segmentStart(n).milliseconds(since: outStart)),
                        duration: duration)
                }
                cues[n, default: []].append(marker)
            }
        }
        return cues
    }
}
