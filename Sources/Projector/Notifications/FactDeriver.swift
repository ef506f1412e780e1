import EventStore
import HLS
import Schedule

/// A channel's notification facts, derived from its events and its timeline: a pure value fed the channel's events in
/// version order and advanced to an instant known to be final (a watermark's `knownUntil`).
///
/// Order: each event gets the key `(running maximum of decided_at up to it, position, rank)`: log order, and an
/// event appended later can never get a key at or below an instant the log is complete to (the append refuses a
/// decision at or before the database clock). A timeline fact's key is the instant it becomes visible in the playlist
/// (the first tick whose live edge passes the break's start, or reaches its end; `Timeline` and
/// `BreakState.phase(liveEdge:)`, the rules the as-run uses), or the key of the event it depends on when that is
/// later. So `advance(to: t)` returns exactly the facts with keys in (previous t, t], in key order, whatever the
/// instants it was advanced through: every instance and a replay derive the same sequence.
public struct FactDeriver: Sendable {
    public let channel: ChannelID
    var timeline: Timeline?
    var runningMaximum = Int64.min
    /// Events read but not yet final (their key is after the instant advanced to).
    var pending: [(event: RecordedScheduleEvent, key: Int64)] = []
    /// Breaks whose timeline facts are not all derived yet, by the position of the event that placed them.
    var open: [Int64: OpenBreak] = [:]
    /// The open break placed under each id (ids can be placed again once retired).
    var placedUnder: [BreakID: Int64] = [:]
    public private(set) var knownUntil = Timestamp(milliseconds: .min)
    /// The last version given to ``add(_:)``.
    public private(set) var version: Int64 = 0
    /// The key of the channel's first event (nil before one): a refused command is notified on a channel only when
    /// ordered after it.
    public private(set) var firstKey: Int64?

    /// A placed break as the schedule's own fold keeps it: a channel state holding it alone, so that its limits and
    /// cancellation are applied by `ChannelState.apply`, the rules the follower and the as-run use.
    struct OpenBreak: Sendable {
        var fold: ChannelState
        var state: BreakState
        var placedKey: Int64
        var placedPosition: Int64
        var placedVersion: Int64
        /// The event that fixed its end: the placement, or the playout limit.
        var endKey: Int64
        var endPosition: Int64
        var endVersion: Int64
        var onAirDerived = false
    }

    public init(channel: ChannelID) {
        self.channel = channel
    }

    /// Takes the channel's next events (version order; an unreadable event is given as its version alone, through
    /// `skipped`).
    public mutating func add(_ event: RecordedScheduleEvent) {
        runningMaximum = max(runningMaximum, event.attribution.at.milliseconds)
        firstKey = firstKey ?? runningMaximum
        version = event.version
        pending.append((event, runningMaximum))
    }

    /// An event this build cannot read: no fact, but it still orders those after it.
    public mutating func skip(version: Int64, decidedAt: Timestamp) {
        runningMaximum = max(runningMaximum, decidedAt.milliseconds)
        firstKey = firstKey ?? runningMaximum
        self.version = version
    }

    /// The instant the deriver can be advanced to with the events given so far, whatever comes next: just before the
    /// last event's key (the next event's key is at least that). A long log is derived a page at a time this way,
    /// without holding it all (and with the same facts as in one step).
    public var settled: Timestamp { Timestamp(milliseconds: runningMaximum == .min ? .min : runningMaximum - 1) }

    /// The facts that became final up to `instant`, in key order.
    public mutating func advance(to instant: Timestamp) -> [NotificationFact] {
        guard instant > knownUntil else { return [] }
        knownUntil = instant
        // Most channels, most of the time: nothing read and nothing on air or ahead.
        if pending.isEmpty && open.isEmpty { return [] }
        var facts: [NotificationFact] = []
        var applied = 0
        while applied < pending.count, pending[applied].key <= instant.milliseconds {
            apply(pending[applied].event, key: pending[applied].key, into: &facts)
            applied += 1
        }
        pending.removeFirst(applied)
        if let timeline {
            deriveTimeline(timeline, at: instant, into: &facts)
        }
        return facts.sorted { $0.key < $1.key }
    }

    mutating func apply(_ recorded: RecordedScheduleEvent, key: Int64, into facts: inout [NotificationFact]) {
        let who = recorded.attribution
        func fact(_ kind: NotificationKind, _ id: BreakID) -> NotificationFact {
            NotificationFact(
                channel: channel, kind: kind, breakID: id, at: who.at,
                key: FactKey(atMilliseconds: key, position: recorded.position, rank: kind.rank),
                version: recorded.version, actor: who.actor, source: who.source)
        }
        switch recorded.event {
        case .channelCreated(let config):
            timeline = Timeline(config)
        case .renditionsUpdated:
            break
        case .scte35PolicySet, .scte35Received, .adSettingsSet:
            // A section's consequences are facts of their own (placed, limited, cancelled); the section and the policy
            // are the log's record, not the plant's news.
            break
        case .breakPlaced(let spec):
            var placed = fact(.placed, spec.id)
            placed.start = spec.start
            placed.plannedDurationMilliseconds = spec.plannedDurationMilliseconds
            facts.append(placed)
            if let previous = placedUnder[spec.id] { open[previous] = nil }
            placedUnder[spec.id] = recorded.position
            var fold = ChannelState(channel: channel)
            fold.apply(recorded)
            guard let state = fold.breakState(spec.id) else { break }
            open[recorded.position] = OpenBreak(
                fold: fold, state: state, placedKey: key, placedPosition: recorded.position,
                placedVersion: recorded.version, endKey: key, endPosition: recorded.position,
                endVersion: recorded.version)
        case .playoutLimitSet(let id, let limit, let kind, _):
            var limited = fact(.limited, id)
            limited.playoutLimitMilliseconds = limit
            limited.how = kind.rawValue
            if let position = placedUnder[id], var item = open[position] {
                limited.start = item.state.start
                limited.plannedDurationMilliseconds = item.state.spec.plannedDurationMilliseconds
                item.fold.apply(recorded)
                item.state = item.fold.breakState(id) ?? item.state
                (item.endKey, item.endPosition, item.endVersion) = (key, recorded.position, recorded.version)
                open[position] = item
            }
            facts.append(limited)
        case .breakCancelled(let id, let kind):
            var cancelled = fact(.cancelled, id)
            cancelled.how = kind.rawValue
            facts.append(cancelled)
            if let position = placedUnder[id], let item = open[position] {
                open[position] = nil
                placedUnder[id] = nil
                // A break on air is ended by a limit, never cancelled; should the log say otherwise, its timeline
                // facts stand as derived and the removal is not claimed.
                if !item.onAirDerived {
                    var removed = fact(.removed, id)
                    removed.how = kind.rawValue
                    removed.start = item.state.start
                    removed.plannedDurationMilliseconds = item.state.spec.plannedDurationMilliseconds
                    facts.append(removed)
                }
            }
        }
    }

    mutating func deriveTimeline(_ timeline: Timeline, at instant: Timestamp, into facts: inout [NotificationFact]) {
        let liveEdge = timeline.liveEdge(at: instant)
        for position in open.keys.sorted() {
            guard var item = open[position] else { continue }
            let phase = item.state.phase(liveEdge: liveEdge)
            guard phase != .scheduled, phase != .cancelled else { continue }
            func fact(_ kind: NotificationKind, at: Timestamp, visible: Timestamp, key: Int64, position: Int64)
                -> NotificationFact
            {
                NotificationFact(
                    channel: channel, kind: kind, breakID: item.state.id, at: at,
                    key: FactKey(
                        atMilliseconds: max(visible.milliseconds, key), position: position, rank: kind.rank),
                    version: kind == .onAir ? item.placedVersion : item.endVersion, start: item.state.start,
                    plannedDurationMilliseconds: item.state.spec.plannedDurationMilliseconds,
                    // On air says nothing of a limit: one decided later must not change the fact (a derivation
                    // that reaches the limit first would otherwise differ from one that stepped past the start).
                    playoutLimitMilliseconds: kind == .endedEarly ? item.state.playoutLimitMilliseconds : nil,
                    how: kind == .endedEarly ? item.state.limitKind?.rawValue : nil)
            }
            if !item.onAirDerived {
                // The first tick whose live edge is past the start.
                facts.append(
                    fact(
                        .onAir, at: item.state.start, visible: timeline.nextTick(after: item.state.start),
                        key: item.placedKey, position: item.placedPosition))
                item.onAirDerived = true
            }
            if phase == .aired || phase == .endedEarly {
                // The first tick whose live edge reaches the end.
                let end = item.state.end
                let visible = timeline.liveEdge(at: end) == end ? end : timeline.nextTick(after: end)
                facts.append(
                    fact(
                        phase == .aired ? .aired : .endedEarly, at: end, visible: visible, key: item.endKey,
                        position: item.endPosition))
                open[position] = nil
                if placedUnder[item.state.id] == position { placedUnder[item.state.id] = nil }
            } else {
                open[position] = item
            }
        }
    }
}
