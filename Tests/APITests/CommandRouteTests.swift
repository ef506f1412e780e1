import API
import EventStore
import Foundation
import HTTPTypes
import Hummingbird
import Testing

@Suite("Command route, in process")
struct CommandRouteTests {
    static let place =
        #"{"command":"place_break","id":"brk-1","in":30,"duration":30,"asset_list":"https://ads.example/list"}"#

    @Test(
        "201 with the events; a retry with the same Idempotency-Key is the same 201, replayed; the key with another request is 409"
    )
    func appliedAndReplayed() async throws {
        let fixture = try await APIFixture()
        try await fixture.test { [fixture] client in
            let key: HTTPFields = [HTTPField.Name("Idempotency-Key")!: "place-1"]
            let first = try await client.post("/channels/demo/commands", Self.place, fixture.auth("desk", key))
            #expect(first.status == .created, "\(first.text)")
            #expect(first.json["replayed"] as? Bool == false && first.json["version"] as? Int == 2)
            let events = try #require(first.json["events"] as? [[String: Any]])
            #expect(events.first?["type"] as? String == "BreakPlaced" && events.first?["actor"] as? String == "desk")
            let again = try await client.post("/channels/demo/commands", Self.place, fixture.auth("desk", key))
            #expect(
                again.status == .created && again.json["replayed"] as? Bool == true
                    && again.json["version"] as? Int == 2)
            let other = try await client.post(
                "/channels/demo/commands", #"{"command":"cancel_break","id":"brk-1"}"#, fixture.auth("desk", key))
            #expect(other.status == .conflict)
            #expect(try await fixture.store.version(of: "demo") == 2)
        }
    }

    @Test("409: a stale If-Match, a break id reused, a race lost; 422 for an If-Match that is not a version")
    func conflicts() async throws {
        let fixture = try await APIFixture()
        try await fixture.test { [fixture] client in
            let stale = try await client.post(
                "/channels/demo/commands", Self.place, fixture.auth("desk", [.ifMatch: "\"7\""]))
            #expect(stale.status == .conflict)
            let notVersion = try await client.post(
                "/channels/demo/commands", Self.place, fixture.auth("desk", [.ifMatch: "seven"]))
            #expect(notVersion.status == .unprocessableContent && notVersion.error?.field == "If-Match")
            let current = try await client.post(
                "/channels/demo/commands", Self.place, fixture.auth("desk", [.ifMatch: "1"]))
            #expect(current.status == .created)
            let reused = try await client.post("/channels/demo/commands", Self.place, fixture.auth("desk"))
            #expect(reused.status == .conflict && reused.error?.field == "id", "\(reused.text)")
            let cancelled = try await client.post(
                "/channels/demo/commands", #"{"command":"cancel_break","id":"brk-1"}"#, fixture.auth("desk"))
            #expect(cancelled.status == .created)
            let twice = try await client.post(
                "/channels/demo/commands", #"{"command":"cancel_break","id":"brk-1"}"#, fixture.auth("desk"))
            #expect(twice.status == .conflict, "\(twice.text)")
        }
    }

    @Test(
        "a command body that is not sent as application/json is refused naming Content-Type (a page of any origin can send text/plain unasked), and nothing is written"
    )
    func jsonMediaTypeRequired() async throws {
        let fixture = try await APIFixture()
        try await fixture.test { [fixture] client in
            for contentType in [
                "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", nil,
            ] {
                var headers = fixture.auth("desk")
                if let contentType { headers[.contentType] = contentType }
                let refused = try await client.execute(
                    uri: "/channels/demo/commands", method: .post, headers: headers,
                    body: ByteBuffer(string: Self.place))
                #expect(
                    refused.status == .badRequest && refused.error?.field == "Content-Type",
                    "\(contentType ?? "none"): \(refused.text)")
            }
            #expect(try await fixture.store.version(of: "demo") == 1)
            let charset = try await client.execute(
                uri: "/channels/demo/commands", method: .post,
                headers: fixture.auth("desk", [.contentType: "Application/JSON; charset=utf-8"]),
                body: ByteBuffer(string: Self.place))
            #expect(charset.status == .created, "\(charset.text)")
        }
    }

    @Test("422 names a key given twice or not a field of the command, anywhere in it; nothing is written")
    func strictKeys() async throws {
        let fixture = try await APIFixture()
        try await fixture.test { [fixture] client in
            let place = #""command":"place_break","in":30,"duration":10,"asset_uri":"https://ads.example/a.m3u8""#
            for (body, field, reason) in [
                (
                    #"{"command":"cancel_break","command":"place_break","in":5,"duration":5,"asset_uri":"https://ads.example/a.m3u8"}"#,
                    "command", "is given twice"
                ),
                (
                    #"{"command":"place_break","\u0063ommand":"cancel_break","in":5,"duration":5}"#, "command",
                    "is given twice"
                ),
                (
                    "{\(place),\"playoutlimit\":5}", "playoutlimit",
                    "is not a field of this request (its fields are in /openapi.json)"
                ),
                (
                    "{\(place),\"restirct\":[\"SKIP\"]}", "restirct",
                    "is not a field of this request (its fields are in /openapi.json)"
                ),
                (
                    #"{"command":"place_break","in":5,"duration":5,"pod":[{"uri":"https://ads.example/a.m3u8","duration":5,"durtion":4}]}"#,
                    "pod[0].durtion", "is not a field of this request (its fields are in /openapi.json)"
                ),
                ("{\(place),\"attributes\":{\"X-A\":\"1\",\"X-A\":\"2\"}}", "attributes.X-A", "is given twice"),
            ] {
                let answer = try await client.post("/channels/demo/commands", body, fixture.auth("desk"))
                #expect(
                    answer.status == .unprocessableContent && answer.error?.field == field
                        && answer.error?.message == "\(field) \(reason)", "\(body): \(answer.text)")
            }
            // JSON is UTF-8: a byte order mark or UTF-16, which the decoder would read past the key checks, is refused.
            for bytes in [
                [0xEF, 0xBB, 0xBF] + Array(#"{"command":"cancel_current_event","in":1,"in":2}"#.utf8),
                Array(#"{"command":"cancel_current_event"}"#.utf16).flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] },
            ] {
                let answer = try await client.execute(
                    uri: "/channels/demo/commands", method: .post,
                    headers: fixture.auth("desk", [.contentType: "application/json"]),
                    body: ByteBuffer(bytes: bytes))
                #expect(
                    answer.status == .unprocessableContent
                        && answer.error?.message == "body must be JSON in UTF-8, without a byte order mark")
            }
            // The keys of attributes are the client's own, named as written.
            let attribute = try await client.post(
                "/channels/demo/commands", "{\(place),\"attributes\":{\"myAttr\":1}}", fixture.auth("desk"))
            #expect(attribute.error?.field == "attributes.myAttr", "\(attribute.text)")
            #expect(try await fixture.store.version(of: "demo") == 1)
            // Keys inside free values are not fields: attributes' own keys, strings that look like keys.
            let fine = try await client.post(
                "/channels/demo/commands",
                "{\(place),\"reason\":\"{\\\"in\\\":1,\\\"in\\\":2}\",\"attributes\":{\"X-COM-EXAMPLE-A\":\"1\"}}",
                fixture.auth("desk"))
            #expect(fine.status == .created, "\(fine.text)")
            // Every field of the wire type is taken: a key the type has is never refused as unknown.
            for child in Mirror(reflecting: CommandRequest(command: .placeBreak)).children {
                let key = child.label!.reduce(into: "") { $0 += $1.isUppercase ? "_" + $1.lowercased() : String($1) }
                let answer = try await client.post(
                    "/channels/demo/commands", #"{"command":"cancel_current_event","\#(key)":null}"#,
                    fixture.auth("desk"))
                #expect(answer.error?.message.contains("is not a field") != true, "\(key): \(answer.text)")
            }
        }
    }

    @Test(
        "422 names the field: a body that is not a command, a missing or wrong field, an actor with control characters")
    func invalidFields() async throws {
        var fixture = try await APIFixture()
        try await fixture.test { [fixture] client in
            let notJSON = try await client.post("/channels/demo/commands", "{", fixture.auth("desk"))
            #expect(notJSON.status == .unprocessableContent && notJSON.error?.field == "body")
            #expect(notJSON.error?.message == "body is not valid JSON: The given data was not valid JSON.")
            // What does not decode is named as sent (snake_case, list indexes), in words, not as the decoder's dump.
            for (body, field, message) in [
                ("{}", "command", "command is required"),
                ("[]", "body", "body must be a JSON object"),
                (#"{"command":"place_break","in":"soon","duration":5}"#, "in", "in must be a number"),
                (
                    #"{"command":"set_playout_limit","id":"b","playout_limit":"x"}"#, "playout_limit",
                    "playout_limit must be a number"
                ),
                (
                    #"{"command":"place_break","in":5,"duration":5,"pod":[{"duration":3}]}"#, "pod[0].uri",
                    "pod[0].uri is required"
                ),
                (
                    #"{"command":"place_break","in":5,"duration":5,"attributes":{"X-A":1}}"#, "attributes.X-A",
                    "attributes.X-A must be a string"
                ),
                (
                    #"{"command":"place_break","in":5,"duration":5,"chunked":"yes"}"#, "chunked",
                    "chunked must be true or false"
                ),
            ] {
                let answer = try await client.post("/channels/demo/commands", body, fixture.auth("desk"))
                #expect(
                    answer.status == .unprocessableContent && answer.error?.field == field
                        && answer.error?.message == message, "\(body): \(answer.text)")
            }
            let noDuration = try await client.post(
                "/channels/demo/commands", #"{"command":"place_break","in":30,"asset_list":"https://ads.example/l"}"#,
                fixture.auth("desk"))
            #expect(noDuration.status == .unprocessableContent && noDuration.error?.field == "duration")
            #expect(noDuration.error?.message == "duration is required")
            let unknown = try await client.post(
                "/channels/demo/commands", #"{"command":"explode"}"#, fixture.auth("desk"))
            #expect(unknown.status == .unprocessableContent && unknown.error?.field == "command")
            let align = try await client.post(
                "/channels/demo/commands",
                #"{"command":"place_break","in":30,"duration":30,"asset_list":"https://ads.example/l","align":"near"}"#,
                fixture.auth("desk"))
            #expect(align.status == .unprocessableContent && align.error?.field == "align")
            let key = try await client.post(
                "/channels/demo/commands", Self.place,
                fixture.auth("desk", [HTTPField.Name("Idempotency-Key")!: String(repeating: "k", count: 2000)]))
            #expect(key.status == .unprocessableContent && key.error?.field == "Idempotency-Key")
            let behind = try await client.post(
                "/channels/demo/commands",
                #"{"command":"place_break","start":"2026-03-01T12:00:00Z","duration":30,"asset_list":"https://ads.example/l"}"#,
                fixture.auth("desk"))
            #expect(behind.status == .unprocessableContent && behind.error?.field == "start", "\(behind.text)")
        }
        fixture.open = true
        try await fixture.test { client in
            let actor = try await client.post(
                "/channels/demo/commands", #"{"command":"cancel_current_event","actor":"a\u001bb"}"#)
            #expect(actor.status == .unprocessableContent && actor.error?.field == "actor")
            // Open mode: the body's actor is recorded.
            let named = try await client.post(
                "/channels/demo/commands",
                #"{"command":"place_break","id":"b-2","in":600,"duration":30,"asset_list":"https://ads.example/l","actor":"ops-desk"}"#
            )
            #expect(named.status == .created)
            #expect((named.json["events"] as? [[String: Any]])?.first?["actor"] as? String == "ops-desk")
        }
    }

    @Test(
        "401 without a token, 403 for a viewer and for automation outside its command types, 404 for an unknown channel"
    )
    func refusals() async throws {
        let fixture = try await APIFixture()
        try await fixture.test { [fixture] client in
            let none = try await client.post("/channels/demo/commands", Self.place)
            #expect(none.status == .unauthorized && none.headers[.wwwAuthenticate] != nil)
            let viewer = try await client.post("/channels/demo/commands", Self.place, fixture.auth("wall"))
            #expect(viewer.status == .forbidden && viewer.error?.field == nil)
            let automation = try await client.post("/channels/demo/commands", Self.place, fixture.auth("auto"))
            #expect(automation.status == .forbidden)
            let otherChannel = try await client.post("/channels/demo/commands", Self.place, fixture.auth("news"))
            #expect(otherChannel.status == .forbidden)
            let allowed = try await client.post(
                "/channels/demo/commands", #"{"command":"cancel_current_event"}"#, fixture.auth("auto"))
            #expect(allowed.status == .unprocessableContent, "no break is on air: \(allowed.text)")
            let unknown = try await client.post("/channels/nope/commands", Self.place, fixture.auth("desk"))
            #expect(unknown.status == .notFound && unknown.error?.message.contains("nope") == true)
            // A channel id off the identifier rule (a channel made under the old rule) takes no commands: 404.
            let offRule = try await client.post("/channels/_news/commands", Self.place, fixture.auth("desk"))
            #expect(
                offRule.status == .notFound && offRule.error?.message == "channel _news does not exist",
                "\(offRule.text)")
            // Nothing was written by any of them.
            #expect(try await fixture.store.version(of: "demo") == 1)
        }
    }

    @Test("503 when the event log cannot take the command: nothing written, retry with the same key")
    func storeDown() async throws {
        let fixture = try await APIFixture()
        fixture.store.down.withLock { $0 = true }
        try await fixture.test { [fixture] client in
            let answer = try await client.post("/channels/demo/commands", Self.place, fixture.auth("desk"))
            #expect(answer.status == .serviceUnavailable, "\(answer.text)")
            #expect(
                answer.error?.message
                    == "the event log is unavailable; nothing was written. Retry with the same Idempotency-Key")
        }
        fixture.store.down.withLock { $0 = false }
        #expect(try await fixture.store.version(of: "demo") == 1)
    }
}
