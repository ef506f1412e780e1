import HLS

/// A channel's schedule, folded from its events.
public struct ChannelState: Hashable, Sendable {
    public var channel: String
    public var config: ChannelConfig?
    /// The stream version of the last event folded in.
    public var version: Int64
    /// The global position of the last event folded in.
    public var position: Int64
    /// Every break ever placed, in order of start.
    public var breaks: [BreakState]

    public init(channel: String) {
        self.channel = channel
        self.version = 0
        self.position = 0
        self.breaks = []
    }

    public func breakState(_ id: String) -> BreakState? {
        breaks.first { $0.id == id }
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
    public mutating func apply(_ recorded: RecordedScheduleEvent) {
        version = recorded.version
        position = max(position, recorded.position)
        switch recorded.event {
        case .channelCreated(let config):
            self.config = config
        case .renditionsUpdated(let renditions):
            config?.renditions = renditions
        case .breakPlaced(let spec):
            let placed = BreakState(spec: spec, placed: recorded.attribution)
            // Breaks are usually placed in order: look for the insertion point from the end.
            var index = breaks.endIndex
            while index > breaks.startIndex && breaks[index - 1].start > spec.start { index -= 1 }
            breaks.insert(placed, at: index)
        case .playoutLimitSet(let id, let limit, let kind, let scte35In):
            if let index = breaks.lastIndex(where: { $0.id == id }) {
                breaks[index].scte35In = scte35In
                breaks[index].playoutLimitMilliseconds = limit
                breaks[index].limited = recorded.attribution
                breaks[index].limitKind = kind
            }
        case .breakCancelled(let id, let kind):
            if let index = breaks.lastIndex(where: { $0.id == id }) {
                breaks[index].cancelled = recorded.attribution
                breaks[index].cancelKind = kind
            }
        }
    }
}
