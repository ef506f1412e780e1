import HLS
import Schedule
import Testing

/// `cancel_current_event` ends the break that is on air by its effective end, not the first whose planned span
/// covers the live edge (issue 11, defect 9).
@Suite("cancel current event picks the break actually on air")
struct CancelCurrentTests {
    /// brk-1 planned 90…150 s and ended early at 102 s; brk-2 placed at 108 s for 30 s, inside brk-1's planned span.
    private func channelAfterEarlyReturn() throws -> Channel {
        var channel = try Channel()
        try channel.apply(place("brk-1", start: 90, duration: 60), at: at(60))
        try channel.apply(.setPlayoutLimit(id: "brk-1", limitMilliseconds: 12_000), at: at(103))
        try channel.apply(place("brk-2", start: 108, duration: 30), at: at(103))
        return channel
    }

    @Test("after an early return, the newer break on air is the one ended")
    func newerBreakOnAir() throws {
        var channel = try channelAfterEarlyReturn()
        // Live edge at 120 s: brk-2 has played 12 s.
        let events = try channel.apply(.cancelCurrentEvent, at: at(121))
        #expect(events == [.playoutLimitSet(id: "brk-2", limitMilliseconds: 12_000, kind: .cancelCurrent)])
        #expect(channel.state.breakState("brk-1")?.playoutLimitMilliseconds == 12_000, "the earlier break is untouched")
    }

    @Test("between the early-ended break and the next one, nothing is on air… but the planned span still says already limited")
    func gapAfterEarlyReturn() throws {
        let channel = try channelAfterEarlyReturn()
        // Live edge 102 s: brk-1 ended right here (another operator's early return at this live edge); brk-2 not started.
        #expect(throws: ScheduleError.alreadyLimited(id: "brk-1", limit: DecimalNumber(milliseconds: 12_000))) {
            try decide(.cancelCurrentEvent, state: channel.state, now: at(103))
        }
    }

    @Test("two operators ending the same break at the same live edge: the second is told it is already limited")
    func raceAtTheSameLiveEdge() throws {
        var channel = try Channel()
        try channel.apply(place("brk-1", start: 90, duration: 30), at: at(60))
        try channel.apply(.cancelCurrentEvent, at: at(103))
        #expect(throws: ScheduleError.alreadyLimited(id: "brk-1", limit: DecimalNumber(milliseconds: 12_000))) {
            try decide(.cancelCurrentEvent, state: channel.state, now: at(103.5))
        }
    }

    @Test("after a break ran to its end, the next one on air is ended")
    func afterBreakAired() throws {
        var channel = try Channel()
        try channel.apply(place("brk-1", start: 90, duration: 12), at: at(60))
        try channel.apply(place("brk-2", start: 102, duration: 30), at: at(60))
        let events = try channel.apply(.cancelCurrentEvent, at: at(115))
        #expect(events == [.playoutLimitSet(id: "brk-2", limitMilliseconds: 12_000, kind: .cancelCurrent)])
    }
}
