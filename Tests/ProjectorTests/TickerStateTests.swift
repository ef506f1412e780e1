import HLS
import Schedule
import Testing

@testable import Projector

/// The ticker's decisions without a clock, a lock or a database (issue 32: a pure state returning what to do).
@Suite("Ticker state")
struct TickerStateTests {
    static let timeline = Timeline(config())  // 6 s segments from `epoch`
    static func at(_ seconds: Double) -> Timestamp { epoch.adding(milliseconds: Int64(seconds * 1000)) }

    @Test("channels join once, in id order, are due at their boundaries and queued again for the next")
    func dueAtBoundaries() {
        var ticker = TickerState(now: Self.at(0))
        let r1 = ticker.needsScan(channelCount: 2, now: Self.at(0))
        #expect(r1)
        ticker.join(["b", "a"], now: Self.at(0))
        ticker.join(["a", "b"], now: Self.at(0))  // already queued: not twice
        var due: [ChannelID] = []
        while let id = ticker.nextDue(at: Self.at(0)) {
            due.append(id)
            let scheduled = ticker.scheduled(id, timeline: Self.timeline, now: Self.at(0))
            #expect(scheduled.isNew && scheduled.boundary == Self.at(0) && scheduled.completed == 0)
        }
        #expect(due == ["a", "b"])
        let r2 = ticker.nextDue(at: Self.at(5.999))
        #expect(r2 == nil)
        let r3 = ticker.nextDue(at: Self.at(6))
        #expect(r3 == "a")
        let r4 = ticker.nextDue(at: Self.at(6))
        #expect(r4 == "b")
        let r5 = ticker.nextDue(at: Self.at(6))
        #expect(r5 == nil)
        // Gone: it leaves the queue, and a later scan queues it again.
        ticker.leave("a")
        ticker.join(["a"], now: Self.at(6))
        let r6 = ticker.nextDue(at: Self.at(6))
        #expect(r6 == "a")
    }

    @Test(
        "a window is new until published; the first of a channel is not timed; every 30th and every new version are sampled"
    )
    func publishedWindows() {
        var ticker = TickerState(now: Self.at(0))
        ticker.join(["demo"], now: Self.at(6))
        _ = ticker.nextDue(at: Self.at(6))
        let r7 = ticker.scheduled("demo", timeline: Self.timeline, now: Self.at(6))
        #expect(r7.isNew)
        let first = ticker.published("demo", completed: 1, version: 3)
        #expect(first == (sample: true, time: false))
        _ = ticker.nextDue(at: Self.at(6.5))
        let r8 = ticker.scheduled("demo", timeline: Self.timeline, now: Self.at(6.5))
        #expect(!r8.isNew, "published already")
        let offset = TickerState.sampleOffset("demo")
        var sampled: [Int64] = []
        for completed in Int64(2)...Int64(61) {
            let (sample, time) = ticker.published("demo", completed: completed, version: 3)
            #expect(time)
            if sample { sampled.append(completed) }
        }
        #expect(sampled == (2...61).filter { ($0 + offset) % 30 == 0 })
        let r9 = ticker.published("demo", completed: 62, version: 4)
        #expect(r9.sample, "a schedule change")
    }

    @Test("a channel is rendered ahead once per boundary, half a tick (at most 3 s) before it")
    func renderAhead() {
        var ticker = TickerState(now: Self.at(0))
        ticker.join(["demo"], now: Self.at(6))
        _ = ticker.nextDue(at: Self.at(6))
        _ = ticker.scheduled("demo", timeline: Self.timeline, now: Self.at(6))
        let r10 = ticker.dueAhead(at: Self.at(8.999))
        #expect(r10.isEmpty)
        let due = ticker.dueAhead(at: Self.at(9))
        #expect(due.map(\.0) == ["demo"] && due.map(\.1) == [Self.at(12)])
        let r11 = ticker.dueAhead(at: Self.at(11))
        #expect(r11.isEmpty)
    }

    @Test(
        "the wait: to the next boundary to the millisecond, a watermark asked for once 8 ms before a boundary not yet known, and quick looks while a passed boundary is not known"
    )
    func waits() {
        var ticker = TickerState(now: Self.at(0))
        ticker.join(["demo"], now: Self.at(6))
        _ = ticker.nextDue(at: Self.at(6))
        _ = ticker.scheduled("demo", timeline: Self.timeline, now: Self.at(6))  // next boundary 12 s, ahead at 9 s
        let start = ContinuousClock.now
        func wait(clock: Double, known: Double = 100, after: Duration = .zero) -> TickerState.Wait {
            ticker.wait(
                now: min(Self.at(clock), Self.at(known)), clock: Self.at(clock), knownUntil: Self.at(known),
                monotonic: start + after)
        }
        // Known ahead: sleep to a millisecond before the render ahead at 9 s, looking again at least every second.
        #expect(wait(clock: 6.1) == .init(askWatermark: false, sleep: .milliseconds(999)))
        #expect(wait(clock: 8.5) == .init(askWatermark: false, sleep: .milliseconds(499)))
        _ = ticker.dueAhead(at: Self.at(9))
        // The log known only to 11 s: wake 8 ms before the boundary, ask once, then steps of a fifth of a millisecond.
        #expect(wait(clock: 11.5, known: 11) == .init(askWatermark: false, sleep: .milliseconds(491)))
        #expect(wait(clock: 11.992, known: 11) == .init(askWatermark: true, sleep: .milliseconds(7)))
        #expect(wait(clock: 11.993, known: 11) == .init(askWatermark: false, sleep: .milliseconds(6)))
        #expect(wait(clock: 11.999, known: 11) == .init(askWatermark: false, sleep: .microseconds(200)))
        // Passed on the wall clock, not known: a watermark at every look, every 0.5 ms for 20 ms, then every 2 ms.
        #expect(wait(clock: 12.001, known: 11) == .init(askWatermark: true, sleep: .microseconds(500)))
        #expect(
            wait(clock: 12.010, known: 11, after: .milliseconds(19))
                == .init(askWatermark: true, sleep: .microseconds(500)))
        #expect(
            wait(clock: 12.030, known: 11, after: .milliseconds(21))
                == .init(askWatermark: true, sleep: .milliseconds(2)))
    }

    @Test("channels are looked for when their count changes, and every 5 s whatever it is")
    func scans() {
        var ticker = TickerState(now: Self.at(0))
        let r12 = ticker.needsScan(channelCount: 0, now: Self.at(0))
        #expect(r12)
        let r13 = ticker.needsScan(channelCount: 0, now: Self.at(4.9))
        #expect(!r13)
        let r14 = ticker.needsScan(channelCount: 1, now: Self.at(4.9))
        #expect(r14)
        let r15 = ticker.needsScan(channelCount: 1, now: Self.at(9.8))
        #expect(!r15)
        let r16 = ticker.needsScan(channelCount: 1, now: Self.at(9.9))
        #expect(r16)
    }

    @Test("the sampled tick of a channel is fixed by its id (the same on every instance)")
    func sampleOffsets() {
        #expect(TickerState.sampleOffset("demo") == 24)
    }
}
