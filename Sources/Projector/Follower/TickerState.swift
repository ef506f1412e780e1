import HLS
import Schedule

/// What the ticker (``ChannelFollower/tickAtSegmentBoundaries()``) knows between its wakes, and what it decides, as a
/// value: which channels are due at a boundary, which windows to render ahead and when, which published windows to
/// sample and time, and how long to sleep (or whether to ask for a watermark first). The ticker carries out what it
/// returns (publishing under the follower's lock, releasing held requests, rendering, recording); the tests drive it
/// alone, on instants they choose.
struct TickerState {
    /// What the ticker does before its next pass.
    struct Wait: Equatable {
        /// Ask the log for a watermark now (the next boundary is near, or passed on the wall clock but not yet known).
        var askWatermark: Bool
        var sleep: Duration
    }

    /// Each channel's next boundary; a channel is in it once.
    private var queue = BoundaryQueue()
    /// When to render each channel's next window ahead (half a tick before its boundary, at most 3 s), and the
    /// boundary it is for.
    private var aheadQueue = BoundaryQueue()
    private var aheadBoundary: [ChannelID: Timestamp] = [:]
    private var queued: Set<ChannelID> = []
    private var knownChannels = -1
    private var lastScan: Timestamp
    /// The window last published of each channel (`completedTicks`), and the version last sampled.
    private var lastPublished: [ChannelID: Int64] = [:]
    private var lastSampledVersion: [ChannelID: Int64] = [:]
    /// The boundary whose watermark the ticker is waiting for (passed on the wall clock), and since when.
    private var waitingFor: (due: Timestamp, since: ContinuousClock.Instant)?
    /// The boundary a watermark was asked for ahead of.
    private var askedFor: Timestamp?

    /// How long before a boundary the ticker asks for a watermark: within the decision margin (20 ms), with room for
    /// the read's round trip.
    static let watermarkLeadMilliseconds: Int64 = 8

    init(now: Timestamp) { lastScan = now }

    /// Whether to look for channels that are not queued yet: the count of channels changed, or 5 s have passed (a
    /// count check is cheap; the full look catches a channel replaced by another).
    mutating func needsScan(channelCount: Int, now: Timestamp) -> Bool {
        guard channelCount != knownChannels || now.milliseconds(since: lastScan) >= 5000 else { return false }
        knownChannels = channelCount
        lastScan = now
        return true
    }

    /// The clock channels found by a scan that are not queued join the queue, due at once (in id order).
    mutating func join(_ ids: [ChannelID], now: Timestamp) {
        for id in ids.filter({ !queued.contains($0) }).sorted() {
            queued.insert(id)
            queue.push(now, id)
        }
    }

    /// The next channel whose boundary has come by `now`, taken from the queue (it is put back by
    /// ``scheduled(_:timeline:now:)``, or leaves for good when it is gone or no longer a clock channel).
    mutating func nextDue(at now: Timestamp) -> ChannelID? {
        guard let (at, id) = queue.first, at <= now else { return nil }
        queue.pop()
        return id
    }

    /// A channel taken by ``nextDue(at:)`` that is gone, or no longer a clock channel: it leaves the queue.
    mutating func leave(_ id: ChannelID) { queued.remove(id) }

    /// A due channel's tick was moved to `now`: whether its window there is one not published yet, and where it
    /// starts; the channel is queued again for its next boundary, and to be rendered ahead of it.
    mutating func scheduled(_ id: ChannelID, timeline: Timeline, now: Timestamp) -> (
        isNew: Bool, boundary: Timestamp, completed: Int64
    ) {
        let completed = timeline.completedTicks(at: now)
        let next = timeline.nextTick(after: now)
        queue.push(next, id)
        // A channel is in the ahead queue once: a newer boundary replaces the one it waits for.
        if aheadBoundary.updateValue(next, forKey: id) == nil {
            let lead = min(3000, timeline.tickMilliseconds / 2)
            aheadQueue.push(max(now, next.adding(milliseconds: -lead)), id)
        }
        return (lastPublished[id] != completed, timeline.tickStart(completed), completed)
    }

    /// A window was published: whether to sample it (every 30th window of each channel, on a tick of its own, and
    /// every window with a schedule change) and whether to time it (not the channel's first: there was no boundary to
    /// be late for).
    mutating func published(_ id: ChannelID, completed: Int64, version: Int64) -> (sample: Bool, time: Bool) {
        let sample = (completed + Self.sampleOffset(id)) % 30 == 0 || lastSampledVersion[id] != version
        if sample { lastSampledVersion[id] = version }
        let time = lastPublished[id] != nil
        lastPublished[id] = completed
        return (sample, time)
    }

    /// Where a channel's every-30th sampled window falls (0–29), from its id: the same on every instance and every run
    /// (FNV-1a, not `Hasher`, which is seeded per process), so channels that share boundaries are not all hashed and
    /// recorded at one boundary, in the milliseconds its held requests are answered in.
    static func sampleOffset(_ channel: ChannelID) -> Int64 {
        var hash: UInt32 = 2_166_136_261
        for byte in channel.rawValue.utf8 { hash = (hash ^ UInt32(byte)) &* 16_777_619 }
        return Int64(hash % 30)
    }

    /// The windows to render ahead by `now`, each for the boundary it waits for.
    mutating func dueAhead(at now: Timestamp) -> [(ChannelID, Timestamp)] {
        var due: [(ChannelID, Timestamp)] = []
        while let (at, id) = aheadQueue.first, at <= now {
            aheadQueue.pop()
            if let boundary = aheadBoundary.removeValue(forKey: id) { due.append((id, boundary)) }
        }
        return due
    }

    /// What to do after a pass that served `now`, the wall clock being `clock` and the log known until `knownUntil`.
    ///
    /// A boundary passed on the wall clock but not yet served (not known from the log): a watermark now rather than at
    /// the next poll, then another look in half a millisecond (the read takes about one; players blocked on the
    /// boundary wait for it) for 20 ms of this boundary (on the monotonic clock `monotonic`), then every 2 ms (a loaded
    /// database). Otherwise a sleep until the next boundary or render ahead (at most a second), with a watermark asked
    /// for once, `watermarkLeadMilliseconds` before a boundary the log is not known up to yet (the watermark reports the
    /// database clock plus the decision margin, so read shortly before, it already covers the boundary). The sleep is
    /// to the millisecond, up to a millisecond before what is due, then in steps of a fifth of one, so a boundary is
    /// passed by at most that much; past already (a watermark that lags), a millisecond.
    mutating func wait(
        now: Timestamp, clock: Timestamp, knownUntil: Timestamp, monotonic: ContinuousClock.Instant
    ) -> Wait {
        if let (due, _) = queue.first, due > now, due <= clock {
            if waitingFor?.due != due { waitingFor = (due, monotonic) }
            let quick = monotonic - waitingFor!.since < .milliseconds(20)
            return Wait(askWatermark: true, sleep: quick ? .microseconds(500) : .milliseconds(2))
        }
        var next = min(
            queue.first?.0 ?? now.adding(milliseconds: 1000), aheadQueue.first?.0 ?? now.adding(milliseconds: 1000),
            now.adding(milliseconds: 1000))
        var ask = false
        if let (due, _) = queue.first, knownUntil < due {
            let asking = due.adding(milliseconds: -Self.watermarkLeadMilliseconds)
            if clock >= asking {
                if askedFor != due {
                    askedFor = due
                    ask = true
                }
            } else {
                next = min(next, asking)
            }
        }
        let wait = next.milliseconds(since: clock)
        let step: Duration =
            wait >= 2 ? .milliseconds(min(1000, wait - 1)) : wait >= 0 ? .microseconds(200) : .milliseconds(1)
        return Wait(askWatermark: ask, sleep: step)
    }
}

/// A binary min-heap of (instant, channel), ordered by instant then channel id so ties are deterministic.
struct BoundaryQueue {
    private var items: [(Timestamp, ChannelID)] = []

    var first: (Timestamp, ChannelID)? { items.first }

    private static func less(_ a: (Timestamp, ChannelID), _ b: (Timestamp, ChannelID)) -> Bool {
        a.0 < b.0 || (a.0 == b.0 && a.1 < b.1)
    }

    mutating func push(_ at: Timestamp, _ id: ChannelID) {
        items.append((at, id))
        var child = items.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard Self.less(items[child], items[parent]) else { break }
            items.swapAt(child, parent)
            child = parent
        }
    }

    mutating func pop() {
        guard !items.isEmpty else { return }
        items.swapAt(0, items.count - 1)
        items.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < items.count, Self.less(items[left], items[smallest]) { smallest = left }
            if right < items.count, Self.less(items[right], items[smallest]) { smallest = right }
            guard smallest != parent else { return }
            items.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
