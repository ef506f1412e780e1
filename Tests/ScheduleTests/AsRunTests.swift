import HLS
import Schedule
import Testing

@Suite("As-run")
struct AsRunTests {
    @Test("totals match the log with early returns and cancellations")
    func totals() throws {
        var channel = try Channel()
        try channel.apply(place("brk-1", start: 90, duration: 30), at: at(60), actor: "alice")  // ends early at 12 s
        try channel.apply(place("brk-2", start: 150, duration: 20), at: at(60), actor: "bob")  // runs its length
        try channel.apply(place("brk-3", start: 200, duration: 30), at: at(60), actor: "alice")  // cancelled
        try channel.apply(place("brk-4", start: 300, duration: 60), at: at(60), actor: "alice")  // on air at the end
        try channel.apply(.cancelCurrentEvent, at: at(103.5), actor: "carol")
        try channel.apply(.cancelBreak(id: "brk-3"), at: at(180), actor: "dave")
        let entries = AsRun.entries(state: channel.state, from: nil, to: nil, at: at(330))
        #expect(entries.map(\.status) == ["ended-early", "aired", "cancelled", "on-air"])
        #expect(entries[0].airedDuration == DecimalNumber(milliseconds: 12_000))
        #expect(entries[0].actualEnd == at(102))
        #expect(entries[0].endedEarlyBy == "carol" && entries[0].endedEarlyHow == "cancel-current")
        #expect(entries[1].airedDuration == DecimalNumber(milliseconds: 20_000) && entries[1].placedBy == "bob")
        #expect(entries[2].actualStart == nil && entries[2].cancelledBy == "dave" && entries[2].cancelledAt == at(180))
        #expect(entries[3].actualEnd == nil && entries[3].airedDuration == DecimalNumber(milliseconds: 30_000))
        let totals = AsRun.totals(entries)
        #expect(
            totals.breaksPlanned == 4 && totals.breaksAired == 3 && totals.breaksEndedEarly == 1
                && totals.breaksCancelled == 1)
        #expect(totals.secondsAired == DecimalNumber(milliseconds: 62_000))
        #expect(totals.secondsPlanned == DecimalNumber(milliseconds: 110_000))
        // A window: only breaks planned to start in [from, to).
        #expect(
            AsRun.entries(state: channel.state, from: at(100), to: at(250), at: at(330)).map(\.breakID) == [
                "brk-2", "brk-3",
            ])
    }

    @Test("CSV has a header, RFC 4180 quoting and one row per break")
    func csv() throws {
        var channel = try Channel()
        try channel.apply(place("brk-1", start: 90, duration: 30), at: at(60), actor: "O'Brien, Pat")
        let text = AsRun.csv(AsRun.entries(state: channel.state, from: nil, to: nil, at: at(200)))
        let lines = text.components(separatedBy: "\r\n")
        #expect(
            lines[0].hasPrefix("break_id,status,planned_start,planned_duration,actual_start,actual_end,aired_duration"))
        #expect(
            lines[1].hasPrefix(
                "brk-1,aired,2026-03-01T12:01:30.000Z,30.000,2026-03-01T12:01:30.000Z,2026-03-01T12:02:00.000Z,30.000,")
        )
        #expect(lines[1].contains(#""O'Brien, Pat""#))
    }
}
