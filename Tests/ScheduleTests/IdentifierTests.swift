import Foundation
import HLS
import Schedule
import Testing

/// One identifier type for channels and breaks, with one rule, and what becomes of a channel created before the rule.
@Suite("Identifiers: one type, one rule")
struct IdentifierTests {
    @Test(
        "ChannelID and BreakID are the one identifier type, checked by one initializer",
        arguments: [
            ("news", true), ("brk-42", true), ("a_b", true), ("_news", false), ("-news", false), ("News", false),
            ("a.b", false), ("", false),
        ])
    func oneRule(text: String, valid: Bool) throws {
        #expect((ChannelID(text) != nil) == valid)
        #expect((BreakID(text) != nil) == valid)
        do {
            let id = try Identifier(text, field: "channel")
            #expect(valid && id.rawValue == text)
        } catch {
            #expect(!valid)
            guard case .invalidField(let field, let reason) = error else {
                Issue.record("\(error)")
                return
            }
            #expect(field == "channel" && reason.hasSuffix(Identifier.rule), "\(reason)")
        }
    }

    @Test("a channel id that breaks the rule cannot be created, with the reason naming the field")
    func createRefused() throws {
        var config = demoConfig()
        config.id = try #require(ChannelID(stored: "_news"))
        do {
            _ = try decide(.createChannel(config), state: ChannelState(channel: config.id), now: epoch)
            Issue.record("_news was created")
        } catch {
            #expect(error.field == "channel", "\(error)")
        }
    }

    @Test("an old channel named _x, created before the rule, still loads from its log and renders its playlists")
    func oldChannelStillLoads() throws {
        // Its ChannelCreated as written back then, read as every log is read: the id is kept as stored, every other
        // field as before (replay renders what was served), and it would not be created today.
        let written = String(decoding: try JSONEncoder().encode(demoConfig()), as: UTF8.self).replacingOccurrences(
            of: #""id":"demo""#, with: #""id":"_x""#)
        #expect(written.contains(#""id":"_x""#))
        let config = try JSONDecoder().decode(ChannelConfig.self, from: Data(written.utf8))
        #expect(config.id.rawValue == "_x" && !config.id.isCurrent)
        var expected = demoConfig()
        expected.id = try #require(ChannelID(stored: "_x"))
        #expect(config == expected)
        #expect(throws: ScheduleError.self) { try config.validate() }
        // Ids no rule ever allowed do not load.
        for bad in ["News", "a b", "", String(repeating: "a", count: 65)] {
            #expect(throws: DecodingError.self) {
                try JSONDecoder().decode(
                    ChannelConfig.self,
                    from: Data(written.replacingOccurrences(of: #""id":"_x""#, with: "\"id\":\"\(bad)\"").utf8))
            }
        }
        // Its log as written back then: folded without deciding, as every log is.
        var state = ChannelState(channel: config.id)
        let attribution = Attribution(at: epoch, actor: "op", source: "cli")
        state = evolve(
            state,
            RecordedScheduleEvent(event: .channelCreated(config), version: 1, position: 1, attribution: attribution))
        var other = try Channel()
        guard case .breakPlaced(let spec)? = try other.apply(place("brk-1", start: 60, duration: 30), at: epoch).first
        else {
            Issue.record("no break placed")
            return
        }
        state = evolve(
            state, RecordedScheduleEvent(event: .breakPlaced(spec), version: 2, position: 2, attribution: attribution))
        #expect(state.config?.id.rawValue == "_x" && state.breaks.map(\.id) == ["brk-1"])
        let playlist = try #require(
            PlaylistBuilder.mediaPlaylist(config: config, state: state, rendition: config.renditions[0], at: at(66)))
        #expect(try PlaylistRenderer.render(playlist).contains(#"ID="brk-1""#))
    }

    @Test("ids in the log's payloads keep the rule they were created with; a plain decoder reads today's rule")
    func storedRule() throws {
        let old = try #require(BreakID(stored: "_old"))
        let events: [ScheduleEvent] = [
            .breakPlaced(
                BreakSpec(
                    id: old, start: epoch, plannedDurationMilliseconds: 30_000,
                    asset: .uri("https://ads.example.com/a.m3u8"))),
            .playoutLimitSet(id: old, limitMilliseconds: 10_000, kind: .playoutLimit),
            .breakCancelled(id: old),
        ]
        for event in events {
            let encoded = EventCodec.encode(event)
            #expect(
                try EventCodec.decode(
                    type: encoded.type, schemaVersion: encoded.schemaVersion, payload: encoded.payload) == event)
            // An id no rule ever allowed is a malformed payload, not a break.
            let bad = encoded.payload.replacingOccurrences(of: #""_old""#, with: #""Bad Id""#)
            #expect(bad != encoded.payload)
            #expect(throws: EventCodec.DecodingFailure.self) {
                try EventCodec.decode(type: encoded.type, schemaVersion: encoded.schemaVersion, payload: bad)
            }
        }
        // A hooks file or a token's scope is read by a plain decoder: today's rule only.
        #expect(throws: DecodingError.self) { try JSONDecoder().decode([BreakID].self, from: Data(#"["_old"]"#.utf8)) }
        let stored = JSONDecoder()
        stored.userInfo[Identifier.storedRuleKey] = true
        #expect(try stored.decode([BreakID].self, from: Data(#"["_old","brk-1"]"#.utf8)) == [old, "brk-1"])
        #expect(throws: DecodingError.self) { try stored.decode([BreakID].self, from: Data(#"["a b"]"#.utf8)) }
    }
}
