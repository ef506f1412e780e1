import API
import Foundation
import HTTPTypes
import Hummingbird
import Testing

@Suite("Feed hook rules as Codable types")
struct HookRulesTests {
    static func file(_ hook: String) -> Data {
        Data(#"{"hooks": [\#(hook)]}"#.utf8)
    }

    @Test(
        "a hooks file's mistakes name the hook, the rule and the field",
        arguments: [
            (
                #"{"name": "s", "secret": "0123456789abcdef", "rules": [{"when": {"a": 1}, "command": {"command": "cancel_break"}}]}"#,
                "hooks: hooks[0].rules[0].channel is required"
            ),
            (
                #"{"name": "s", "secret": "0123456789abcdef", "tolerance_seconds": "300", "rules": []}"#,
                "hooks: hooks[0].tolerance_seconds must be a whole number"
            ),
            (
                #"{"name": "s", "secret": "0123456789abcdef", "rules": [{"when": {}, "channel": "demo", "command": {"command": "cancel_break"}}]}"#,
                "hooks: hook s rule 1: when must be a non-empty object"
            ),
            (
                #"{"name": "s", "secret": "0123456789abcdef", "rules": [{"when": {"a": 1}, "channel": "demo", "command": {"command": "drop_table"}}]}"#,
                #"hooks: hook s rule 1: command "drop_table" is not a schedule command"#
            ),
            (
                #"{"name": "s", "secret": "0123456789abcdef", "rules": [{"when": {"a": 1}, "channel": "demo", "command": {"id": "x"}}]}"#,
                "hooks: hook s rule 1: command must be an object with a command field"
            ),
            (
                #"{"name": "s", "secret": "short", "rules": [{"when": {"a": 1}, "channel": "demo", "command": {"command": "cancel_break"}}]}"#,
                "hooks: hook s: the secret must be at least 16 bytes"
            ),
            (
                #"{"name": "s", "secret_env": "NOPE", "rules": []}"#,
                "hooks: hook s: environment variable NOPE (secret_env) is not set"
            ),
            (
                #"{"name": "s", "secret": "0123456789abcdef", "delivery_id": "id", "rules": [{"when": {"a": 1}, "channel": "demo", "command": {"command": "cancel_break"}}]}"#,
                #"hooks: hook s: delivery_id must be a payload path such as "$.id""#
            ),
        ])
    func fileMistakes(hook: String, message: String) {
        #expect(throws: (any Error).self) { try HookSet(json: Self.file(hook), environment: [:]) }
        do {
            _ = try HookSet(json: Self.file(hook), environment: [:])
        } catch {
            #expect("\(error)" == message)
        }
    }

    @Test("rules match numbers whatever their notation; keys are kept as written; a numeric delivery id is exact")
    func matching() async throws {
        var fixture = try await APIFixture()
        fixture.hooks = try HookSet(
            json: Self.file(
                """
                {"name": "feed", "secret": "\(fixture.hookSecret)", "delivery_id": "$.delivery.id", "rules": [
                  {"when": {"match.period": 2, "kind_of": "break"}, "channel": "demo",
                   "command": {"command": "place_break", "id": "$.break_id", "in": 30, "duration": 30, "asset_uri": "https://ads.example/a.m3u8",
                               "attributes": {"X-COM-EXAMPLE-AD": "$.ad"}}}]}
                """), environment: [:])
        try await fixture.test { [fixture] client in
            let first =
                #"{"match": {"period": 2.0}, "kind_of": "break", "break_id": "h-1", "ad": "abc", "delivery": {"id": 9007199254740993}}"#
            let placed = try await client.post("/hooks/feed", first, fixture.signed(first))
            #expect(placed.status == .created, "\(placed.text)")
            #expect(placed.text.contains("X-COM-EXAMPLE-AD"), "\(placed.text)")
            // Differs from the first delivery's id only beyond a double's precision: a new delivery, so a new command
            // (refused as a reused break id, not replayed as the first).
            let second =
                #"{"match": {"period": 2}, "kind_of": "break", "break_id": "h-1", "ad": "abc", "delivery": {"id": 9007199254740992}}"#
            let other = try await client.post("/hooks/feed", second, fixture.signed(second))
            #expect(other.status == .conflict && other.json["replayed"] == nil, "\(other.text)")
            let same = try await client.post("/hooks/feed", first, fixture.signed(first))
            #expect(same.status == .created && same.json["replayed"] as? Bool == true)
            let otherPeriod = #"{"match": {"period": 3}, "kind_of": "break", "delivery": {"id": 1}}"#
            let ignored = try await client.post("/hooks/feed", otherPeriod, fixture.signed(otherPeriod))
            #expect(ignored.status == .ok && ignored.json["ignored"] != nil)
        }
    }
}
