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

    @Test(
        "between the early-ended break and the next one, nothing is on air… but the planned span still says already limited"
    )
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

    // MARK: - During a break's first segment (issue 16)

    @Test("cancel-current after the start on the clock but before the live edge reached it removes the break")
    func removedBeforeFirstSegment() throws {
        var channel = try Channel()
        try channel.apply(place("brk-1", start: 90, duration: 30), at: at(60))
        let before = channel
        // Decided at 93 s: the live edge is still 90 s, the end of segment 14; segment 15 (90…96 s) is not published.
        let events = try channel.apply(.cancelCurrentEvent, at: at(93), actor: "carol")
        #expect(events == [.breakCancelled(id: "brk-1", kind: .cancelCurrent)])
        #expect(
            ScheduleCommand.cancelCurrentEvent.note(for: events, decidedAt: at(93))
                == "brk-1 had not reached the live edge (no segment holds it yet): removed instead of ended early")
        #expect(channel.state.breakState("brk-1")?.phase(liveEdge: at(96)) == .cancelled)

        // The as-run shows it cancelled at the start, and how.
        let entries = AsRun.entries(state: channel.state, from: nil, to: nil, at: at(200))
        #expect(entries.count == 1)
        #expect(
            entries[0].status == "cancelled" && entries[0].actualStart == nil
                && entries[0].airedDuration == DecimalNumber(milliseconds: 0))
        #expect(entries[0].cancelledBy == "carol" && entries[0].cancelledAt == at(93))
        #expect(entries[0].cancelledHow == "cancel-current (before its first segment was served)")
        let csv = AsRun.csv(entries).components(separatedBy: "\r\n")
        #expect(csv[0].hasSuffix(",cancelled_at,cancelled_how"))
        #expect(
            csv[1].hasSuffix(
                ",carol,test,2026-03-01T12:01:33.000Z,cancel-current (before its first segment was served)"))

        // The playlist showed it only ahead of every segment, and never again once removed.
        let served = try before.render("720p", at: at(92.9))
        #expect(served.contains("ID=\"brk-1\""))
        #expect(
            !served.contains("#EXT-X-PROGRAM-DATE-TIME:2026-03-01T12:01:30.000Z"),
            "no segment at or after the break's start is listed")
        for tick in stride(from: 93.0, through: 200, by: 0.5) {
            #expect(!(try channel.render("720p", at: at(tick))).contains("brk-1"), "tick \(tick)")
        }
    }

    @Test("an unaligned break in its first half-segment is removed too")
    func removedUnaligned() throws {
        var channel = try Channel()
        try channel.apply(place("brk-1", start: 91.5, duration: 30, alignment: .exact), at: at(60))
        #expect(
            try channel.apply(.cancelCurrentEvent, at: at(91.5)) == [
                .breakCancelled(id: "brk-1", kind: .cancelCurrent)
            ], "start ≤ now")
    }

    @Test("a break that has not started on the clock still needs break cancel")
    func futureBreakNotRemoved() throws {
        var channel = try Channel()
        try channel.apply(place("brk-1", start: 90, duration: 30), at: at(60))
        #expect(throws: ScheduleError.nothingOnAir(channel: "demo", liveEdge: at(84))) {
            try decide(.cancelCurrentEvent, state: channel.state, now: at(89.9))
        }
    }

    @Test("once the live edge passed the start, cancel-current sets a playout limit as before")
    func limitOnceServed() throws {
        var channel = try Channel()
        try channel.apply(place("brk-1", start: 90, duration: 30), at: at(60))
        let events = try channel.apply(.cancelCurrentEvent, at: at(97))
        #expect(events == [.playoutLimitSet(id: "brk-1", limitMilliseconds: 6_000, kind: .cancelCurrent)])
        #expect(ScheduleCommand.cancelCurrentEvent.note(for: events, decidedAt: at(97)) == nil)
        #expect(try channel.render("720p", at: at(97)).contains("X-PLAYOUT-LIMIT=6.000"))
    }

    @Test("break limit and an SCTE-35 return in the first segment are refused, saying what to do")
    func limitBeforeFirstSegment() throws {
        var channel = try Channel()
        try channel.apply(place("brk-1", start: 90, duration: 30), at: at(60))
        let expected = ScheduleError.notServedYet(id: "brk-1", start: at(90), liveEdge: at(90), servedFrom: at(90))
        #expect(throws: expected) {
            try decide(.setPlayoutLimit(id: "brk-1", limitMilliseconds: 10_000), state: channel.state, now: at(93))
        }
        #expect(throws: expected) {
            try decide(.returnFromBreak(id: "brk-1", scte35In: nil), state: channel.state, now: at(93))
        }
        #expect(expected.description.contains("cueline event cancel-current"))
        // Before its start on the clock it is simply not on air yet.
        #expect(throws: ScheduleError.notOnAir(id: "brk-1", start: at(90), liveEdge: at(84))) {
            try decide(.setPlayoutLimit(id: "brk-1", limitMilliseconds: 10_000), state: channel.state, now: at(89))
        }
    }

    @Test("BreakCancelled payloads: an explicit cancel is what it always was; the kind reads back")
    func cancelledPayloads() throws {
        #expect(EventCodec.encode(.breakCancelled(id: "brk-1")).payload == #"{"id":"brk-1"}"#)
        let removed = EventCodec.encode(.breakCancelled(id: "brk-1", kind: .cancelCurrent))
        #expect(removed.payload == #"{"id":"brk-1","kind":"cancel-current"}"#)
        #expect(
            try EventCodec.decode(type: "BreakCancelled", schemaVersion: 1, payload: removed.payload)
                == .breakCancelled(id: "brk-1", kind: .cancelCurrent))
        #expect(
            try EventCodec.decode(type: "BreakCancelled", schemaVersion: 1, payload: #"{"id":"brk-1"}"#)
                == .breakCancelled(id: "brk-1", kind: .cancelBreak))
    }
}
