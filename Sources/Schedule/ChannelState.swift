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
    state.version = recorded.version
    state.position = max(state.position, recorded.position)
    switch recorded.event {
    case .channelCreated(let config):
        state.config = config
    case .renditionsUpdated(let renditions):
        state.config?.renditions = renditions
    case .breakPlaced(let spec):
        let placed = BreakState(spec: spec, placed: recorded.attribution)
        let index = state.breaks.firstIndex { $0.start > spec.start } ?? state.breaks.endIndex
        state.breaks.insert(placed, at: index)
    case .playoutLimitSet(let id, let limit, let kind):
        if let index = state.breaks.firstIndex(where: { $0.id == id }) {
            state.breaks[index].playoutLimitMilliseconds = limit
            state.breaks[index].limited = recorded.attribution
            state.breaks[index].limitKind = kind
        }
    case .breakCancelled(let id):
        if let index = state.breaks.firstIndex(where: { $0.id == id }) {
            state.breaks[index].cancelled = recorded.attribution
        }
    }
    return state
}
