import HLS

/// A channel's schedule, folded from its events.
///
/// Breaks are held sorted by start and indexed by id, so lookups, overlap checks and the playlist's walk touch only
/// the breaks near the instant they ask about. With `Retention.window` (the follower and replay) a break leaves the
/// state once it can no longer appear in any window rendered from the events folded so far: see `retirementCutoff`.
public struct ChannelState: Hashable, Sendable {
    /// Which breaks the state keeps.
    public enum Retention: Hashable, Sendable {
        /// Every break ever placed (as-run, audit folds).
        case all
        /// Only breaks that a window rendered from now on, a command, or a player behind the live edge can still
        /// need: a break whose planned end (or cancellation) is before `retirementCutoff` leaves.
        case window
    }

    public var channel: ChannelID
    public var config: ChannelConfig?
    /// The SCTE-35 ingest policy set last (`SCTE35PolicySet`); nil: `SCTE35Policy.standard`.
    public private(set) var scte35Policy: SCTE35Policy?
    /// The ad settings as last set (`ChannelCreated`'s, then each `AdSettingsSet`); nil for a channel that never had
    /// any (created before them): no preload ranges, no ad server, no slate.
    public private(set) var adSettings: AdSettings?
    /// The prerolls replaced or removed by `AdSettingsSet`, with when (the last four): their published range left the
    /// playlists then, which delta updates list (`RECENTLY-REMOVED-DATERANGES`).
    public private(set) var replacedPrerolls: [ReplacedPreroll] = []
    /// The stream version of the last event folded in.
    public var version: Int64
    /// The global position of the last event folded in.
    public var position: Int64
    /// The breaks held, in order of start (with `.all`, every break ever placed).
    public private(set) var breaks: [BreakState]
    public let retention: Retention
    /// The latest decision instant (`decided_at`) of the events folded in: the clock of pruning, never the wall clock.
    public private(set) var latestDecided: Timestamp
    /// The longest planned duration of any break placed (bounds how far before an instant a covering break starts).
    public private(set) var longestBreakMilliseconds: Int64
    /// Start of each held break by id (the latest placed when an id was reused after its first break retired).
    private var startsByID: [BreakID: Timestamp]
    /// No held break retires before this (`retirementKey` minimum), so most folds skip the pruning scan.
    private var nextRetirement: Timestamp

    /// How long a break is kept after it has left the last window that can hold it: players behind the live edge
    /// (paused, or seeking in the window) still fetch its asset list and chunk playlists after the window left it,
    /// commands decided on another instance may carry a `now` a little behind the latest `decided_at` (clock skew,
    /// the effect delay), and `cueline schedule` keeps showing the breaks of the last minutes. Ten minutes covers each
    /// of these many times over and costs, at one break a minute, ten breaks of memory.
    public static let retentionMarginMilliseconds: Int64 = 600_000

    public init(channel: ChannelID, retention: Retention = .all) {
        self.channel = channel
        self.version = 0
        self.position = 0
        self.breaks = []
        self.retention = retention
        self.latestDecided = Timestamp(milliseconds: .min)
        self.longestBreakMilliseconds = 0
        self.startsByID = [:]
        self.nextRetirement = Timestamp(milliseconds: .max)
    }

    public static func == (lhs: ChannelState, rhs: ChannelState) -> Bool {
        lhs.channel == rhs.channel && lhs.config == rhs.config && lhs.version == rhs.version
            && lhs.position == rhs.position
            && lhs.breaks == rhs.breaks && lhs.scte35Policy == rhs.scte35Policy && lhs.adSettings == rhs.adSettings
            && lhs.replacedPrerolls == rhs.replacedPrerolls
    }

    /// A preroll setting replaced (or removed) at an instant.
    public struct ReplacedPreroll: Hashable, Sendable, Codable {
        public var preroll: AdSettings.Preroll
        public var at: Timestamp

        public init(preroll: AdSettings.Preroll, at: Timestamp) {
            self.preroll = preroll
            self.at = at
        }
    }

    /// The most replaced prerolls kept: more than one change within a delta update's reach is rare already.
    static let replacedPrerollsKept = 4

    /// Sets what a checkpoint recorded of the prerolls replaced (``ChannelSnapshot/restore()``).
    public mutating func restore(replacedPrerolls: [ReplacedPreroll]) {
        self.replacedPrerolls = Array(replacedPrerolls.suffix(Self.replacedPrerollsKept))
    }

    /// The renderer version of this channel's playlists: 3 once it has ad settings (preload ranges, prerolls, skip
    /// control), else its configuration's.
    public var rendererVersion: Int {
        adSettings != nil ? 3 : config?.rendererVersion ?? 1
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(channel)
        hasher.combine(version)
        hasher.combine(position)
        hasher.combine(breaks)
    }

    /// The held break with this id (with `.all`, also a retired one; `liveBreak` leaves those out).
    public func breakState(_ id: BreakID) -> BreakState? {
        index(of: id).map { breaks[$0] }
    }

    /// The break with this id unless it has retired (as of the later of `now` and the latest decision folded): what
    /// commands decided at `now` see, the same with either retention.
    public func liveBreak(_ id: BreakID, now: Timestamp? = nil) -> BreakState? {
        guard let item = breakState(id), !isRetired(item, now: now) else { return nil }
        return item
    }

    /// The instant before which a break that ended (planned end) or was cancelled has retired: the latest
    /// `decided_at` folded, less one window and one segment (every tick rendered from these events is at or after
    /// that instant, so its window starts after `cutoff + margin`), less `retentionMarginMilliseconds`. Nil for relay
    /// channels (the upstream's window length is not known here: they keep every break) and before the channel exists.
    ///
    /// - Parameter now: a command's decision instant: the cutoff is then taken from the later of it and the latest
    ///   decision folded (the command's events will be folded at `now`, so the fold ignores the same breaks).
    public func retirementCutoff(now: Timestamp? = nil) -> Timestamp? {
        let latest = max(latestDecided, now ?? latestDecided)
        guard let config, config.source == .clock, latest.milliseconds != .min else { return nil }
        let window = (Int64(config.windowSegments) + 1) * config.segmentDurationMilliseconds
        return latest.adding(milliseconds: -(window + Self.retentionMarginMilliseconds))
    }

    /// Whether the break has retired: no window from now on holds it and commands treat it as gone.
    public func isRetired(_ item: BreakState, now: Timestamp? = nil) -> Bool {
        guard let cutoff = retirementCutoff(now: now) else { return false }
        return item.retirementKey < cutoff
    }

    /// The index of the first held break starting at or after `time` (`breaks.endIndex` if none).
    public func firstIndex(startingAtOrAfter time: Timestamp) -> Int {
        var low = breaks.startIndex, high = breaks.endIndex
        while low < high {
            let mid = (low + high) / 2
            if breaks[mid].start < time { low = mid + 1 } else { high = mid }
        }
        return low
    }

    /// The index of the first held break that may still cover `time` (its start is at most the longest break before).
    public func firstIndex(coveringOrAfter time: Timestamp) -> Int {
        firstIndex(startingAtOrAfter: time.adding(milliseconds: -longestBreakMilliseconds))
    }

    private func index(of id: BreakID) -> Int? {
        guard let start = startsByID[id] else { return nil }
        var found: Int?
        var index = firstIndex(startingAtOrAfter: start)
        while index < breaks.endIndex && breaks[index].start == start {
            if breaks[index].id == id { found = index }
            index += 1
        }
        return found
    }
}

extension BreakState {
    /// When the break stops mattering: its cancellation if cancelled (a cancelled break is in no playlist), else its
    /// planned end (an early return keeps the planned span: `cancel-current` answers "already limited" within it).
    var retirementKey: Timestamp {
        cancelled.map { min($0.at, spec.plannedEnd) } ?? spec.plannedEnd
    }
}

/// Folds one event into the state. Pure.
public func evolve(_ state: ChannelState, _ recorded: RecordedScheduleEvent) -> ChannelState {
    var state = state
    state.apply(recorded)
    return state
}

extension ChannelState {
    /// Folds one event in place: what `evolve` does, without copying the schedule (folding a long log stays linear).
    ///
    /// A limit or cancellation naming a retired break changes nothing, with either retention (commands refuse them;
    /// a log written otherwise folds the same into the hot and the full state).
    public mutating func apply(_ recorded: RecordedScheduleEvent) {
        version = recorded.version
        position = max(position, recorded.position)
        latestDecided = max(latestDecided, recorded.attribution.at)
        switch recorded.event {
        case .channelCreated(let config):
            self.config = config
            adSettings = config.ads
        case .renditionsUpdated(let renditions):
            config?.renditions = renditions
        case .breakPlaced(let spec):
            let placed = BreakState(spec: spec, placed: recorded.attribution)
            // Breaks are usually placed in order: look for the insertion point from the end.
            var index = breaks.endIndex
            while index > breaks.startIndex && breaks[index - 1].start > spec.start { index -= 1 }
            breaks.insert(placed, at: index)
            startsByID[spec.id] = spec.start
            longestBreakMilliseconds = max(longestBreakMilliseconds, spec.plannedDurationMilliseconds)
            nextRetirement = min(nextRetirement, placed.retirementKey)
        case .playoutLimitSet(let id, let limit, let kind, let scte35In):
            if let index = index(of: id), !isRetired(breaks[index]) {
                breaks[index].scte35In = scte35In
                breaks[index].playoutLimitMilliseconds = limit
                breaks[index].limited = recorded.attribution
                breaks[index].limitKind = kind
            }
        case .breakCancelled(let id, let kind):
            if let index = index(of: id), !isRetired(breaks[index]) {
                breaks[index].cancelled = recorded.attribution
                breaks[index].cancelKind = kind
                nextRetirement = min(nextRetirement, breaks[index].retirementKey)
            }
        case .scte35PolicySet(let policy):
            scte35Policy = policy
        case .scte35Received:
            break  // a record of what arrived; what it did follows it as events of its own
        case .adSettingsSet(let settings):
            if let old = adSettings?.preroll, old != settings.preroll {
                replacedPrerolls.append(ReplacedPreroll(preroll: old, at: recorded.attribution.at))
                if replacedPrerolls.count > Self.replacedPrerollsKept { replacedPrerolls.removeFirst() }
            }
            adSettings = settings
        }
        retire()
    }

    /// With `.window`, drops the breaks retired at the current cutoff. Scans only when one is due.
    private mutating func retire() {
        guard retention == .window, let cutoff = retirementCutoff(), nextRetirement < cutoff else { return }
        var next = Timestamp(milliseconds: .max)
        var kept: [BreakState] = []
        kept.reserveCapacity(breaks.count)
        for item in breaks {
            let key = item.retirementKey
            if key < cutoff {
                if startsByID[item.id] == item.start { startsByID[item.id] = nil }
            } else {
                next = min(next, key)
                kept.append(item)
            }
        }
        breaks = kept
        nextRetirement = next
    }
}
