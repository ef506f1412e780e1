import HLS
import Schedule
import Testing

/// A channel holds at most `Limits.maximumFutureBreaks` breaks that have not aired (issue 34, defect 3): a new one
/// beyond it is refused by `decide`, with the limit named; folding never refuses, so a log written before the limit
/// (holding more) still folds, and its other commands still work.
@Suite("At most 1,000 breaks to air per channel")
struct FutureBreakLimitTests {
    static func placeAt(_ index: Int, id: String? = nil) -> ScheduleCommand {
        place(BreakID(id ?? "f-\(index)")!, start: 60 + 12 * Double(index), duration: 6)
    }

    @Test("the 1,001st break to air is refused naming the limit; a cancelled or aired one makes room")
    func refusedBeyondTheLimit() throws {
        var channel = try Channel()
        for index in 0..<Limits.maximumFutureBreaks {
            try channel.apply(Self.placeAt(index), at: epoch)
        }
        let beyond = Self.placeAt(Limits.maximumFutureBreaks)
        #expect(throws: ScheduleError.tooManyFutureBreaks(channel: "demo", limit: 1000)) {
            try decide(beyond, state: channel.state, now: epoch)
        }
        #expect(
            ScheduleError.tooManyFutureBreaks(channel: "demo", limit: 1000).description
                == "channel demo already has 1000 breaks that have not aired, the limit of future breaks per channel; cancel one with `cueline break cancel`, or place this one once some have aired"
        )
        // Other commands go on.
        try channel.apply(.cancelBreak(id: "f-999"), at: epoch)
        try channel.apply(beyond, at: epoch)
        #expect(throws: ScheduleError.tooManyFutureBreaks(channel: "demo", limit: 1000)) {
            try decide(Self.placeAt(1001), state: channel.state, now: epoch)
        }
        // Once f-0 has aired (the live edge is past its start), there is room for one more.
        let later = at(60 + 12 * 2)
        try channel.apply(Self.placeAt(1001), at: later)
        #expect(
            channel.state.breaks.filter {
                $0.phase(liveEdge: Timeline(channel.state.config!).liveEdge(at: later)) == .scheduled
            }.count <= 1000)
    }

    @Test("a log that already holds more breaks to air folds; decide refuses only a new one")
    func oldLogStillFolds() throws {
        var state = ChannelState(channel: "demo")
        var version: Int64 = 0
        func fold(_ event: ScheduleEvent) {
            version += 1
            state = evolve(
                state,
                RecordedScheduleEvent(
                    event: event, version: version, position: version,
                    attribution: Attribution(at: epoch, actor: "old", source: "test")))
        }
        fold(.channelCreated(demoConfig()))
        for index in 0..<1200 {
            fold(
                .breakPlaced(
                    BreakSpec(
                        id: BreakID("old-\(index)")!, start: at(60 + 12 * Double(index)),
                        plannedDurationMilliseconds: 6000,
                        asset: .uri("https://ads.example.com/\(index).m3u8"), options: InterstitialOptions())))
        }
        #expect(state.breaks.count == 1200 && state.version == 1201)
        #expect(throws: ScheduleError.tooManyFutureBreaks(channel: "demo", limit: 1000)) {
            try decide(Self.placeAt(2000), state: state, now: epoch)
        }
        #expect(try decide(.cancelBreak(id: "old-5"), state: state, now: epoch) == [.breakCancelled(id: "old-5")])
    }
}
