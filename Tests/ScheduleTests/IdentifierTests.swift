import Foundation
import HLS
import Schedule
import Testing

/// One identifier type for channels and breaks, with one rule, and what becomes of a channel created before the rule.
@Suite("Identifiers: one type, one rule")
struct IdentifierTests {
    @Test("ChannelID and BreakID are the one identifier type, checked by one initializer", arguments: [
        ("news", true), ("brk-42", true), ("a_b", true), ("_news", false), ("-news", false), ("News", false), ("a.b", false), ("", false),
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
            _ = try decide(.createChannel(config), state: ChannelState(channel: "_news"), now: epoch)
            Issue.record("_news was created")
        } catch {
            #expect(error.field == "channel", "\(error)")
        }
    }

    @Test("an old channel named _x, created before the rule, still loads from its log and renders its playlists")
    func oldChannelStillLoads() throws {
        // Its ChannelCreated as written back then, read as every log is read: the id is kept as stored, every other
        // field as before (replay renders what was served), and it would not be created today.
        let written = String(decoding: try JSONEncoder().encode(demoConfig()), as: UTF8.self).replacingOccurrences(of: #""id":"demo""#, with: #""id":"_x""#)
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
                try JSONDecoder().decode(ChannelConfig.self, from: Data(written.replacingOccurrences(of: #""id":"_x""#, with: "\"id\":\"\(bad)\"").utf8))
            }
        }
        // Its log as written back then: folded without deciding, as every log is.
        var state = ChannelState(channel: "_x")
        let attribution = Attribution(at: epoch, actor: "op", source: "cli")
        state = evolve(state, RecordedScheduleEvent(event: .channelCreated(config), version: 1, position: 1, attribution: attribution))
        var other = try Channel()
        guard case .breakPlaced(let spec)? = try other.apply(place("brk-1", start: 60, duration: 30), at: epoch).first else {
            Issue.record("no break placed")
            return
        }
        state = evolve(state, RecordedScheduleEvent(event: .breakPlaced(spec), version: 2, position: 2, attribution: attribution))
        #expect(state.config?.id.rawValue == "_x" && state.breaks.map(\.id) == ["brk-1"])
        let playlist = try #require(PlaylistBuilder.mediaPlaylist(config: config, state: state, rendition: config.renditions[0], at: at(66)))
        #expect(try PlaylistRenderer.render(playlist).contains(#"ID="brk-1""#))
    }
}
