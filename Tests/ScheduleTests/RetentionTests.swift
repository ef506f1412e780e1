import HLS
import Schedule
import TestSupport
import Testing

/// The same commands decided and folded twice: into the full state (`.all`) and into the hot state (`.window`), as the
/// follower holds it.
private struct Twins {
    var full: ChannelState
    var hot: ChannelState
    var position: Int64 = 0

    init(_ config: ChannelConfig = demoConfig()) throws {
        full = ChannelState(channel: config.id, retention: .all)
        hot = ChannelState(channel: config.id, retention: .window)
        try apply(.createChannel(config), at: epoch)
    }

    /// Decides against both states; they must agree on the events or on the refusal.
    @discardableResult
    mutating func apply(_ command: ScheduleCommand, at time: Timestamp) throws -> [ScheduleEvent] {
        let fromFull = Result { () throws(ScheduleError) in try decide(command, state: full, now: time) }
        let fromHot = Result { () throws(ScheduleError) in try decide(command, state: hot, now: time) }
        #expect("\(fromFull)" == "\(fromHot)", "\(command) at \(time): the hot and the full state decide differently")
        let events = try fromFull.get()
        for event in events {
            position += 1
            let recorded = RecordedScheduleEvent(
                event: event, version: full.version + 1, position: position,
                attribution: Attribution(at: time, actor: "op", source: "test"))
            full.apply(recorded)
            hot.apply(recorded)
        }
        return events
    }

    func render(_ state: ChannelState, at tick: Timestamp) throws -> String? {
        let config = state.config!
        return try PlaylistBuilder.mediaPlaylist(
            config: config, state: state, rendition: config.renditions[0], at: tick
        ).map(PlaylistRenderer.render)
    }
}

@Suite("Retention: the hot state holds what the window needs")
struct RetentionTests {
    @Test(
        "for random logs the hot state renders the full state's playlist at every tick",
        arguments: [1, 2, 3, 4, 5, 6] as [UInt64])
    func hotRendersLikeFull(seed: UInt64) throws {
        var random = SplitMix64(seed: seed)
        // A short window and horizon-less (every future break published): the strictest case for pruning.
        var twins = try Twins(demoConfig(segment: 2000, window: 3, renditions: ["720p"]))
        var ids: [BreakID] = []
        var time = epoch.adding(milliseconds: 10_000)
        var lastTick = epoch
        var refused = 0, accepted = 0
        // Three hours of random commands, a few seconds apart.
        while time < epoch.adding(milliseconds: 3 * 3_600_000) {
            let command: ScheduleCommand
            switch Int.random(in: 0..<10, using: &random) {
            case 0..<5:
                // Sometimes an id used before (retired or not), else a fresh one; starts from now to 10 minutes ahead.
                let id =
                    !ids.isEmpty && Int.random(in: 0..<5, using: &random) == 0
                    ? ids.randomElement(using: &random)! : BreakID("b\(ids.count)")!
                ids.append(id)
                let start = time.adding(milliseconds: Int64.random(in: 0...600_000, using: &random))
                command = .placeBreak(
                    PlaceBreak(
                        id: id, start: .at(start),
                        plannedDurationMilliseconds: Int64.random(in: 1...120, using: &random) * 1000,
                        asset: .uri("https://ads.example.com/\(id).m3u8"),
                        alignment: Bool.random(using: &random) ? .segment : .exact))
            case 5: command = .cancelCurrentEvent
            case 6, 7: command = .cancelBreak(id: ids.randomElement(using: &random) ?? "b0")
            case 8:
                command = .setPlayoutLimit(
                    id: ids.randomElement(using: &random) ?? "b0",
                    limitMilliseconds: Int64.random(in: 0...60, using: &random) * 1000)
            default: command = .returnFromBreak(id: ids.randomElement(using: &random) ?? "b0", scte35In: nil)
            }
            do { try twins.apply(command, at: time); accepted += 1 } catch { refused += 1 }
            // Every tick (each segment boundary, and the command's own instant) up to the next command.
            let next = time.adding(milliseconds: Int64.random(in: 500...15_000, using: &random))
            var tick = max(time, lastTick)
            while tick < next {
                let full = try twins.render(twins.full, at: tick)
                let hot = try twins.render(twins.hot, at: tick)
                #expect(full == hot, "seed \(seed) tick \(tick)")
                if full != hot { return }
                lastTick = tick
                tick = Timeline(twins.full.config!).nextBoundary(after: tick)
            }
            time = next
        }
        #expect(
            accepted > 100 && refused > 100, "the log exercises both paths: \(accepted) accepted, \(refused) refused")
        // Pruning did happen: the full state has every break, the hot one those of the last minutes and the future.
        #expect(
            twins.hot.breaks.count * 5 < twins.full.breaks.count,
            "hot \(twins.hot.breaks.count), full \(twins.full.breaks.count)")
        // And every break held hot is one the full state has, unchanged.
        for item in twins.hot.breaks { #expect(twins.full.breaks.contains(item)) }
    }

    @Test("replay's fold with the window retention renders the same bytes as the full fold")
    func replayFold() throws {
        var channel = try Channel()
        var events: [RecordedScheduleEvent] = []
        var position: Int64 = 1
        events.append(
            RecordedScheduleEvent(
                event: .channelCreated(demoConfig()), version: 1, position: 1,
                attribution: Attribution(at: epoch, actor: "op", source: "t")))
        for n in 0..<60 {
            let decided = at(Double(60 + n * 60))
            for event in try channel.apply(
                place(BreakID("brk-\(n)")!, start: Double(90 + n * 60), duration: 30), at: decided)
            {
                position += 1
                events.append(
                    RecordedScheduleEvent(
                        event: event, version: position, position: position,
                        attribution: Attribution(at: decided, actor: "op", source: "t")))
            }
        }
        for seconds in stride(from: 60.0, through: 3700, by: 6) {
            let full = fold("demo", events, asOf: at(seconds), retention: .all)
            let hot = fold("demo", events, asOf: at(seconds), retention: .window)
            let config = full.config!
            #expect(
                PlaylistBuilder.mediaPlaylist(
                    config: config, state: full, rendition: config.renditions[0], at: at(seconds))
                    == PlaylistBuilder.mediaPlaylist(
                        config: config, state: hot, rendition: config.renditions[0], at: at(seconds)))
        }
        let hot = fold("demo", events, asOf: at(3700), retention: .window)
        #expect(hot.breaks.count < 15 && fold("demo", events, asOf: at(3700)).breaks.count == 60)
    }

    @Test("a break leaves the hot state a window and the margin after its planned end, and not before")
    func leavesAfterMargin() throws {
        var twins = try Twins()
        try twins.apply(place("brk-1", start: 90, duration: 30), at: at(60))
        // Cutoff = latest decision − (5 + 1) × 6 s − 600 s. brk-1 ends at 120 s: it stays while the latest is ≤ 756 s.
        try twins.apply(place("brk-2", start: 900, duration: 30), at: at(756))
        #expect(twins.hot.breakState("brk-1") != nil)
        #expect(throws: ScheduleError.alreadyEnded(id: "brk-1", end: at(120))) {
            try twins.apply(.cancelBreak(id: "brk-1"), at: at(756))
        }
        #expect(throws: ScheduleError.breakIDReused("brk-1")) {
            try twins.apply(place("brk-1", start: 1000, duration: 30), at: at(756))
        }
        try twins.apply(place("brk-3", start: 960, duration: 30), at: at(756.001))
        #expect(twins.hot.breakState("brk-1") == nil && twins.hot.breaks.map(\.id) == ["brk-2", "brk-3"])
        #expect(
            twins.full.breaks.map(\.id) == ["brk-1", "brk-2", "brk-3"]
                && twins.full.isRetired(twins.full.breakState("brk-1")!))
    }

    @Test("commands naming a retired break are refused as unknown, with either state")
    func retiredBreakRefused() throws {
        var twins = try Twins()
        try twins.apply(place("brk-1", start: 90, duration: 30), at: at(60))
        try twins.apply(place("brk-2", start: 1200, duration: 30), at: at(1000))
        for command: ScheduleCommand in [
            .cancelBreak(id: "brk-1"), .setPlayoutLimit(id: "brk-1", limitMilliseconds: 1000),
            .returnFromBreak(id: "brk-1", scte35In: nil),
        ] {
            #expect(throws: ScheduleError.unknownBreak(channel: "demo", id: "brk-1")) {
                try twins.apply(command, at: at(1001))
            }
        }
        #expect(ScheduleError.unknownBreak(channel: "demo", id: "brk-1").description.contains("as-run"))
        // Nothing is on air: cancel-current says so rather than reaching the retired break.
        #expect(throws: ScheduleError.nothingOnAir(channel: "demo", liveEdge: at(1002))) {
            try twins.apply(.cancelCurrentEvent, at: at(1002))
        }
    }

    @Test("the id of a retired break may be placed again; the as-run report lists both")
    func retiredIDReused() throws {
        var twins = try Twins()
        try twins.apply(place("brk-1", start: 90, duration: 30), at: at(60))
        try twins.apply(place("brk-1", start: 1200, duration: 20), at: at(1000))
        #expect(twins.hot.breaks.map(\.start) == [at(1200)])
        #expect(twins.full.breaks.map(\.id) == ["brk-1", "brk-1"] && twins.full.breakState("brk-1")?.start == at(1200))
        // Commands name the new one: a cancel reaches it in both states.
        try twins.apply(.cancelBreak(id: "brk-1"), at: at(1001))
        #expect(
            twins.full.breaks.map(\.isCancelled) == [false, true] && twins.hot.breakState("brk-1")?.isCancelled == true)
        let entries = AsRun.entries(state: twins.full, from: nil, to: nil, at: at(1300))
        #expect(entries.map(\.breakID) == ["brk-1", "brk-1"] && entries.map(\.status) == ["aired", "cancelled"])
    }

    @Test("a cancelled break leaves after its cancellation, even when it was planned far ahead")
    func cancelledLeaves() throws {
        var twins = try Twins()
        try twins.apply(place("brk-far", start: 5000, duration: 30), at: at(60))
        try twins.apply(.cancelBreak(id: "brk-far"), at: at(61))
        try twins.apply(place("brk-2", start: 800, duration: 30), at: at(697.5))
        #expect(twins.hot.breakState("brk-far") == nil && twins.full.breakState("brk-far")?.isCancelled == true)
    }

    @Test("the hot state stays the same size however long the channel has run")
    func boundedState() throws {
        var twins = try Twins()
        var sizes: [Int] = []
        for n in 0..<2000 {
            try twins.apply(
                place(BreakID("brk-\(n)")!, start: Double(90 + n * 60), duration: 30), at: at(Double(60 + n * 60)))
            if n == 100 || n == 1999 { sizes.append(twins.hot.breaks.count) }
        }
        #expect(sizes[0] == sizes[1] && sizes[0] < 15, "\(sizes)")
        #expect(twins.full.breaks.count == 2000)
    }
}
