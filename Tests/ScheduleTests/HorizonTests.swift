import HLS
import Schedule
import Testing

/// Issue 12: every future break ever placed was published in every playlist (2,000 future breaks: 404 KB).
@Suite("Look-ahead horizon")
struct HorizonTests {
    private func channel(horizon: Int64?, futureBreaks: Int) throws -> Channel {
        var config = demoConfig()
        config.horizonMilliseconds = horizon
        var channel = try Channel(config)
        for index in 0..<futureBreaks {
            // Exact starts: the horizon arithmetic below counts from 100 s, off the 6 s boundaries.
            try channel.apply(
                place(BreakID("b\(index)")!, start: 100 + Double(index) * 60, duration: 30, alignment: .exact),
                at: at(50))
        }
        return channel
    }

    @Test("only breaks starting within the horizon of the live edge are published; the rest join as the edge moves")
    func horizon() throws {
        // As many breaks to air as a channel may hold (issue 12 measured 2,000, before that limit).
        let crowded = try channel(horizon: 120_000, futureBreaks: Limits.maximumFutureBreaks)
        let text = try crowded.render("720p", at: at(60))
        // Live edge at 60 s: b0 (100 s) and b1 (160 s) start before 180 s, b2 (220 s) does not.
        #expect(text.contains(#"ID="b0""#) && text.contains(#"ID="b1""#))
        #expect(!text.contains(#"ID="b2""#))
        // As the live edge passes 100 s, b2 enters.
        #expect(try crowded.render("720p", at: at(102)).contains(#"ID="b2""#))
        // The same bytes as a channel holding only the breaks the horizon shows.
        #expect(text == (try channel(horizon: 120_000, futureBreaks: 2).render("720p", at: at(60))))
    }

    @Test(
        "a channel without a horizon (created before it existed) still publishes every future break, so its replay is unchanged"
    )
    func legacyChannel() throws {
        let text = try channel(horizon: nil, futureBreaks: 50).render("720p", at: at(60))
        #expect(text.components(separatedBy: "#EXT-X-DATERANGE").count - 1 == 50)
    }

    @Test(
        "the horizon is part of the configuration: at least 3 target durations, at most a day",
        arguments: [17_999, 86_400_001, -1])
    func bounds(horizon: Int64) {
        var config = demoConfig()
        config.horizonMilliseconds = horizon
        #expect(throws: ScheduleError.self) { try config.validate() }
    }

    @Test("an old ChannelCreated payload decodes without a horizon, and a new one round-trips it")
    func codec() throws {
        let old = EventCodec.encode(.channelCreated(demoConfig()))
        #expect(!old.payload.contains("horizon"))
        var config = demoConfig()
        config.horizonMilliseconds = 120_000
        let encoded = EventCodec.encode(.channelCreated(config))
        #expect(
            try EventCodec.decode(type: encoded.type, schemaVersion: encoded.schemaVersion, payload: encoded.payload)
                == .channelCreated(config))
    }
}
