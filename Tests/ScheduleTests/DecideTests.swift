import HLS
import Schedule
import Testing

@Suite("decide refuses with a specific error")
struct DecideTests {
    private func channelWithBreak() throws -> Channel {
        var channel = try Channel()
        try channel.apply(place("brk-1", start: 90, duration: 30), at: at(60))
        return channel
    }

    private func refusal(_ channel: Channel, _ command: ScheduleCommand, at seconds: Double) -> ScheduleError? {
        do {
            _ = try decide(command, state: channel.state, now: at(seconds))
            return nil
        } catch {
            return error
        }
    }

    @Test("overlapping breaks")
    func overlap() throws {
        let channel = try channelWithBreak()
        #expect(
            refusal(channel, place("brk-2", start: 100, duration: 30), at: 61)
                == .overlap(id: "brk-2", otherID: "brk-1", otherStart: at(90), otherEnd: at(120)))
        #expect(refusal(channel, place("brk-2", start: 80, duration: 10.001, alignment: .exact), at: 61) != nil)
        #expect(refusal(channel, place("brk-2", start: 120, duration: 10), at: 61) == nil, "back-to-back is fine")
        #expect(refusal(channel, place("brk-2", start: 80, duration: 10, alignment: .exact), at: 61) == nil)
    }

    @Test("a start behind the live edge")
    func behind() throws {
        let channel = try Channel()
        #expect(
            refusal(channel, place("brk-1", start: 59, duration: 10, alignment: .exact), at: 61)
                == .startBehindLiveEdge(start: at(59), liveEdge: at(60)))
        #expect(
            refusal(channel, place("brk-1", start: 53.9, duration: 10), at: 61)
                == .startBehindLiveEdge(start: at(54), liveEdge: at(60)), "judged on the snapped start")
        #expect(
            refusal(channel, place("brk-1", start: 59, duration: 10), at: 61) == nil,
            "59 s moves to the boundary at 60 s, the live edge")
        #expect(
            refusal(channel, place("brk-1", start: 60, duration: 10), at: 61) == nil,
            "at the live edge is still ahead of every viewer")
    }

    @Test("a limit on a break that is not on air, already limited, below what played, or not below planned")
    func limits() throws {
        var channel = try channelWithBreak()
        #expect(
            refusal(channel, .setPlayoutLimit(id: "brk-1", limitMilliseconds: 10_000), at: 89)
                == .notOnAir(id: "brk-1", start: at(90), liveEdge: at(84)))
        #expect(
            refusal(channel, .setPlayoutLimit(id: "brk-1", limitMilliseconds: 5_000), at: 103)
                == .limitBelowPlayed(
                    id: "brk-1", limit: DecimalNumber(milliseconds: 5_000), played: DecimalNumber(milliseconds: 12_000))
        )
        #expect(
            refusal(channel, .setPlayoutLimit(id: "brk-1", limitMilliseconds: 30_000), at: 103)
                == .limitNotBelowPlanned(
                    id: "brk-1", limit: DecimalNumber(milliseconds: 30_000),
                    planned: DecimalNumber(milliseconds: 30_000)))
        #expect(
            refusal(channel, .setPlayoutLimit(id: "brk-1", limitMilliseconds: 20_000), at: 121)
                == .alreadyEnded(id: "brk-1", end: at(120)))
        try channel.apply(.setPlayoutLimit(id: "brk-1", limitMilliseconds: 20_000), at: at(103))
        #expect(
            refusal(channel, .setPlayoutLimit(id: "brk-1", limitMilliseconds: 18_000), at: 104)
                == .alreadyLimited(id: "brk-1", limit: DecimalNumber(milliseconds: 20_000)))
        #expect(
            refusal(channel, .cancelCurrentEvent, at: 104)
                == .alreadyLimited(id: "brk-1", limit: DecimalNumber(milliseconds: 20_000)))
    }

    @Test("cancelling a break on air says to use a limit")
    func cancelOnAir() throws {
        let channel = try channelWithBreak()
        let error = refusal(channel, .cancelBreak(id: "brk-1"), at: 97)
        #expect(error == .cancelOnAir(id: "brk-1", start: at(90)))
        #expect(error?.description.contains("cueline break limit") == true)
    }

    @Test("unknown ids, reused ids, nothing on air, an unknown channel")
    func unknown() throws {
        var channel = try channelWithBreak()
        #expect(refusal(channel, .cancelBreak(id: "nope"), at: 61) == .unknownBreak(channel: "demo", id: "nope"))
        #expect(
            refusal(channel, .setPlayoutLimit(id: "nope", limitMilliseconds: 1000), at: 61)
                == .unknownBreak(channel: "demo", id: "nope"))
        try channel.apply(.cancelBreak(id: "brk-1"), at: at(61))
        #expect(
            refusal(channel, place("brk-1", start: 200, duration: 10), at: 62) == .breakIDReused("brk-1"),
            "a cancelled id stays used")
        #expect(refusal(channel, .cancelBreak(id: "brk-1"), at: 62) == .alreadyCancelled(id: "brk-1"))
        #expect(refusal(channel, .cancelCurrentEvent, at: 95) == .nothingOnAir(channel: "demo", liveEdge: at(90)))
        #expect(refusal(Channel.empty("other"), .cancelCurrentEvent, at: 1) == .unknownChannel("other"))
    }

    @Test("generated ids are unique and skip ids callers chose")
    func generatedIDs() throws {
        var channel = try Channel()
        try channel.apply(place("brk-3", start: 300, duration: 10), at: at(60))
        let events = try channel.apply(
            .placeBreak(
                PlaceBreak(
                    start: .inMilliseconds(60_000), plannedDurationMilliseconds: 10_000,
                    asset: .uri("https://a.example/x.m3u8"))), at: at(60))
        guard case .breakPlaced(let spec) = events.first else { Issue.record("no break placed"); return }
        #expect(spec.id == "brk-4")
        #expect(spec.start == at(120))
    }

    @Test(
        "bad input names the field",
        arguments: [
            (
                ScheduleCommand.placeBreak(
                    PlaceBreak(
                        id: BreakID(stored: "_bad-id")!, start: .at(at(200)), plannedDurationMilliseconds: 1000,
                        asset: .uri("https://a/x.m3u8"))), "id"
            ),
            (
                .placeBreak(
                    PlaceBreak(start: .at(at(200)), plannedDurationMilliseconds: 0, asset: .uri("https://a/x.m3u8"))),
                "duration"
            ),
            (
                .placeBreak(
                    PlaceBreak(start: .at(at(200)), plannedDurationMilliseconds: 1000, asset: .uri("/relative.m3u8"))),
                "asset_uri"
            ),
            // No assets (an empty pod is what the CLI and the API send for none) and no ad server to fill the break.
            (
                .placeBreak(PlaceBreak(start: .at(at(200)), plannedDurationMilliseconds: 1000, asset: .pod([]))),
                "asset_uri"
            ),
            (
                .placeBreak(
                    PlaceBreak(
                        start: .at(at(200)), plannedDurationMilliseconds: 1000, asset: .uri("https://a/x.m3u8"),
                        options: InterstitialOptions(cue: [.pre, .post]))), "cue"
            ),
            (
                .placeBreak(
                    PlaceBreak(
                        start: .at(at(200)), plannedDurationMilliseconds: 1000, asset: .uri("https://a/x.m3u8"),
                        options: InterstitialOptions(clientAttributes: [
                            ClientAttribute(name: "X-ASSET-URI", value: .string("x"))
                        ]))), "attr"
            ),
            (
                .placeBreak(
                    PlaceBreak(
                        start: .at(at(200)), plannedDurationMilliseconds: 1000, asset: .uri("https://a/x.m3u8"),
                        options: InterstitialOptions(clientAttributes: [
                            ClientAttribute(name: "X-NOTE", value: .string("say \"hi\""))
                        ]))), "attr"
            ),
            (
                .placeBreak(
                    PlaceBreak(
                        start: .inMilliseconds(-1), plannedDurationMilliseconds: 1000, asset: .uri("https://a/x.m3u8"))),
                "in"
            ),
        ])
    func badInput(command: ScheduleCommand, field: String) throws {
        let channel = try Channel()
        #expect(refusal(channel, command, at: 61)?.field == field)
    }

    @Test(
        "channel configuration is validated field by field",
        arguments: [
            (
                ChannelConfig(
                    id: ChannelID(stored: "_demo")!, segmentDurationMilliseconds: 6000, windowSegments: 5, epoch: epoch,
                    renditions: demoConfig().renditions, publicBaseURL: "http://x"), "channel"
            ),
            (
                ChannelConfig(
                    id: "demo", segmentDurationMilliseconds: 6000, windowSegments: 2, epoch: epoch,
                    renditions: demoConfig().renditions, publicBaseURL: "http://x"), "window"
            ),
            (
                ChannelConfig(
                    id: "demo", segmentDurationMilliseconds: 50, windowSegments: 50, epoch: epoch,
                    renditions: demoConfig().renditions, publicBaseURL: "http://x"), "segment-duration"
            ),
            (
                ChannelConfig(
                    id: "demo", segmentDurationMilliseconds: 6000, windowSegments: 5, epoch: epoch, renditions: [],
                    publicBaseURL: "http://x"), "rendition"
            ),
            (
                ChannelConfig(
                    id: "demo", segmentDurationMilliseconds: 6000, windowSegments: 5, epoch: epoch,
                    renditions: [RenditionConfig(name: "a", bandwidth: 1, uriTemplate: "seg.ts")],
                    publicBaseURL: "http://x"), "rendition"
            ),
            (
                ChannelConfig(
                    id: "demo", segmentDurationMilliseconds: 6000, windowSegments: 5, epoch: epoch,
                    renditions: demoConfig().renditions, publicBaseURL: "ftp://x"), "public-url"
            ),
        ])
    func badConfig(config: ChannelConfig, field: String) {
        #expect(throws: ScheduleError.self) { try config.validate() }
        do { try config.validate() } catch { #expect(error.field == field, "\(error)") }
    }
}

extension Channel {
    static func empty(_ id: ChannelID) -> Channel {
        var channel = try! Channel()
        channel.state = ChannelState(channel: id)
        return channel
    }
}
