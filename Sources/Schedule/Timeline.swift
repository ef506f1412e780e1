import HLS

/// The clock-source arithmetic of a channel: segment n covers [epoch + n·d, epoch + (n+1)·d).
public struct Timeline: Hashable, Sendable {
    public var epoch: Timestamp
    public var segmentMilliseconds: Int64
    public var windowSegments: Int
    /// LL-HLS channels: part p of segment n covers [segmentStart(n) + p·partMilliseconds, + partMilliseconds).
    public var partMilliseconds: Int64?

    public init(_ config: ChannelConfig) {
        epoch = config.epoch
        segmentMilliseconds = config.segmentDurationMilliseconds
        windowSegments = config.windowSegments
        partMilliseconds = config.partDurationMilliseconds
    }

    // MARK: Ticks: the instants a channel's playlists change (part boundaries with parts, else segment boundaries)

    /// How long a tick lasts: a part with parts, else a segment.
    public var tickMilliseconds: Int64 { partMilliseconds ?? segmentMilliseconds }

    /// Parts per segment (1 without parts).
    public var partsPerSegment: Int64 { segmentMilliseconds / tickMilliseconds }

    /// The number of ticks (parts, or segments) that have ended at `time`: identifies the playlist served at `time`.
    public func completedTicks(at time: Timestamp) -> Int64 {
        let elapsed = time.milliseconds(since: epoch)
        guard elapsed > 0 else { return 0 }
        return elapsed / tickMilliseconds
    }

    public func tickStart(_ k: Int64) -> Timestamp {
        epoch.adding(milliseconds: k * tickMilliseconds)
    }

    /// The instant the next tick ends after `time`.
    public func nextTick(after time: Timestamp) -> Timestamp {
        tickStart(max(0, completedTicks(at: time)) + (time < epoch ? 0 : 1))
    }

    /// The number of segments that have ended at `time` (so the last one is `count - 1`).
    public func completedSegments(at time: Timestamp) -> Int64 {
        let elapsed = time.milliseconds(since: epoch)
        guard elapsed > 0 else { return 0 }
        return elapsed / segmentMilliseconds
    }

    /// The live edge at `time`: the end of the last segment that has ended, or with parts of the last part (the end
    /// of the playlist served at `time`).
    public func liveEdge(at time: Timestamp) -> Timestamp {
        tickStart(completedTicks(at: time))
    }

    public func segmentStart(_ n: Int64) -> Timestamp {
        epoch.adding(milliseconds: n * segmentMilliseconds)
    }

    /// The first segment boundary at or after `time`: `time` itself when it is one.
    public func boundary(atOrAfter time: Timestamp) -> Timestamp {
        segmentStart(segment(atOrAfter: time))
    }

    /// The first segment starting at or after `time`.
    public func segment(atOrAfter time: Timestamp) -> Int64 {
        let elapsed = time.milliseconds(since: epoch)
        // Rounded up, also before the epoch (Swift's division truncates toward zero).
        return elapsed >= 0
            ? elapsed / segmentMilliseconds + (elapsed % segmentMilliseconds == 0 ? 0 : 1)
            : elapsed / segmentMilliseconds
    }

    /// The segment numbers in the window at `time`; empty before the first segment has ended.
    public func window(at time: Timestamp) -> Range<Int64> {
        let end = completedSegments(at: time)
        return max(0, end - Int64(windowSegments))..<end
    }

    /// The instant the next segment ends after `time` (when the next tick is due).
    public func nextBoundary(after time: Timestamp) -> Timestamp {
        segmentStart(max(0, completedSegments(at: time)) + (time < epoch ? 0 : 1))
    }
}
