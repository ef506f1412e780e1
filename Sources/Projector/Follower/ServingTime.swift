import HLS
import Metrics
import Synchronization

/// The serving time: the instant playlists are served for, held back by what the log is known up to unless the log
/// is unreachable, its head held, or silent; and when a window became servable (tick lateness).
extension ChannelFollower {
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
            metrics.logSilences.increment()
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
    static func byWallClock(now: Timestamp, _ shared: Shared, silenceLimit: Int64) -> Bool {
        !shared.caughtUpOnce || shared.lastError != nil || shared.logHeadBusy
            || isSilent(now: now, shared, silenceLimit: silenceLimit)
    }

    static func isSilent(now: Timestamp, _ shared: Shared, silenceLimit: Int64) -> Bool {
        shared.caughtUpOnce && now.milliseconds - silenceLimit > shared.lastHeard.milliseconds
    }

    static func servingTime(now: Timestamp, _ shared: Shared, silenceLimit: Int64) -> Timestamp {
        byWallClock(now: now, shared, silenceLimit: silenceLimit) ? now : min(now, shared.knownUntil)
    }

    /// When a window for the boundary `boundary` became servable: once its bytes existed and the serving time had
    /// reached the boundary (now, if it has not yet).
    package func servableInstant(_ window: Rendered, boundary: Timestamp) -> Timestamp {
        servableInstant(readyAt: window.readyAt, boundary: boundary)
    }

    func servableInstant(readyAt: Timestamp, boundary: Timestamp) -> Timestamp {
        max(boundary, readyAt, servingTimeReached(boundary) ?? clock())
    }

    /// When the serving time first reached `instant` (on the follower's clock): the instant itself when serving is not
    /// held back by the watermark, else when the known instant first passed it; nil when it has not yet.
    func servingTimeReached(_ instant: Timestamp) -> Timestamp? {
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
}
