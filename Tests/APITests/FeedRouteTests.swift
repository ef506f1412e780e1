import API
import Foundation
import HTTPTypes
import Hummingbird
import Testing

@Suite("SCTE-35 and feed hook routes, in process")
struct FeedRouteTests {
    /// splice_insert, out of network, event 0x4800008f, with a break duration (SCTE 35 sample 14.2).
    static let spliceInsertOut = "/DAvAAAAAAAA///wFAVIAACPf+/+c2nALv4AUsz1AAAAAAAKAAhDVUVJAAABNWLbowo="

    static func cue(_ section: String) -> String {
        #"{"section":"\#(section)","asset_list":"https://ads.example/list"}"#
    }

    @Test(
        "POST scte35: an out places scte35-<event>, a repeat is the same command again, splice_null is kept and ignored; 401, 403 before the cue is read, 422 naming section or body, 404"
    )
    func scte35() async throws {
        let fixture = try await APIFixture()
        try await fixture.test { [fixture] client in
            #expect(
                try await client.post("/channels/demo/scte35", Self.cue(Self.spliceInsertOut)).status == .unauthorized)
            // A viewer may read the channel but send none of the commands an out can become.
            let viewer = try await client.post(
                "/channels/demo/scte35", Self.cue(Self.spliceInsertOut), fixture.auth("wall"))
            #expect(viewer.status == .forbidden)
            // A token for another channel learns nothing, not even whether the body is good.
            let other = try await client.post("/channels/demo/scte35", "{", fixture.auth("news"))
            #expect(other.status == .forbidden && other.error?.message == "token news is not allowed on channel demo")
            let placed = try await client.post(
                "/channels/demo/scte35", Self.cue(Self.spliceInsertOut), fixture.auth("desk"))
            #expect(placed.status == .created, "\(placed.text)")
            let events = try #require(placed.json["events"] as? [[String: Any]])
            // The section as received first, then what it did.
            #expect(
                events.map { $0["type"] as? String } == ["SCTE35Received", "BreakPlaced"]
                    && placed.text.contains("scte35-1207959695"), "\(placed.text)")
            #expect((placed.json["note"] as? String)?.hasPrefix("SCTE-35: splice_insert out for splice event") == true)
            // An encoder repeats a cue until its splice point: the same bytes for the same break are the placing
            // command again, answered as it was, and nothing more is written.
            let repeated = try await client.post(
                "/channels/demo/scte35", Self.cue(Self.spliceInsertOut), fixture.auth("desk"))
            #expect(repeated.status == .created && repeated.json["replayed"] as? Bool == true, "\(repeated.text)")
            // A section the policy ignores is kept in the log all the same, and the answer says why.
            let null = try await client.post(
                "/channels/demo/scte35", Self.cue("/DARAAAAAAAAAP/wAAAAAHpPv/8="), fixture.auth("desk"))
            #expect(null.status == .created, "\(null.text)")
            #expect((null.json["events"] as? [[String: Any]])?.map { $0["type"] as? String } == ["SCTE35Received"])
            #expect(null.json["note"] as? String == "SCTE-35: ignored: splice_null", "\(null.text)")
            let body = try await client.post("/channels/demo/scte35", "[]", fixture.auth("desk"))
            #expect(body.status == .unprocessableContent && body.error?.field == "body")
            // A typo'd asset key is named, not dropped (the cue would otherwise be refused for a missing asset).
            let typo = try await client.post(
                "/channels/demo/scte35",
                #"{"section":"\#(Self.spliceInsertOut)","asset_url":"https://ads.example/list"}"#, fixture.auth("desk"))
            #expect(typo.status == .unprocessableContent && typo.error?.field == "asset_url", "\(typo.text)")
            var corrupt = Array(Data(base64Encoded: Self.spliceInsertOut)!)
            corrupt[corrupt.count - 1] ^= 0xFF
            let crc = try await client.post(
                "/channels/demo/scte35", Self.cue(Data(corrupt).base64EncodedString()), fixture.auth("desk"))
            #expect(crc.status == .unprocessableContent && crc.error?.field == "section")
            let unknown = try await client.post(
                "/channels/nope/scte35", Self.cue(Self.spliceInsertOut), fixture.auth("desk"))
            #expect(unknown.status == .notFound)
            let offRule = try await client.post(
                "/channels/-x/scte35", Self.cue(Self.spliceInsertOut), fixture.auth("desk"))
            #expect(
                offRule.status == .notFound && offRule.error?.message == "channel -x does not exist", "\(offRule.text)")
        }
    }

    @Test(
        "POST hooks: a signed delivery applies its rule once; no match is 200 ignored; 401 for bad or stale signatures; 404; 422"
    )
    func hooks() async throws {
        let fixture = try await APIFixture()
        try await fixture.test { [fixture] client in
            let timeout = #"{"event":"timeout","break":"feed-1","seconds":30}"#
            let applied = try await client.post("/hooks/scores", timeout, fixture.signed(timeout))
            #expect(applied.status == .created, "\(applied.text)")
            #expect((applied.json["events"] as? [[String: Any]])?.first?["actor"] as? String == "hook:scores")
            // The same signed delivery again, whatever Idempotency-Key it carries, is the same command.
            var again = fixture.signed(timeout)
            again[HTTPField.Name("Idempotency-Key")!] = "other"
            let replayed = try await client.post("/hooks/scores", timeout, again)
            #expect(replayed.status == .created && replayed.json["replayed"] as? Bool == true)
            let nothing = #"{"event":"corner"}"#
            let ignored = try await client.post("/hooks/scores", nothing, fixture.signed(nothing))
            #expect(
                ignored.status == .ok
                    && ignored.json["ignored"] as? String == "no rule of hook scores matches this payload")

            let unsigned = try await client.post("/hooks/scores", timeout)
            #expect(unsigned.status == .unauthorized && unsigned.error?.field == "X-Cueline-Signature")
            let forged = try await client.post(
                "/hooks/scores", timeout, fixture.signed(timeout, secret: "another-secret-of-enough-bytes"))
            #expect(forged.status == .unauthorized && forged.error?.message.contains("does not match") == true)
            let stale = try await client.post("/hooks/scores", timeout, fixture.signed(timeout, at: 1_000_000))
            #expect(stale.status == .unauthorized && stale.error?.message.contains("replay protection") == true)
            #expect(stale.error?.field == "X-Cueline-Timestamp" && forged.error?.field == "X-Cueline-Signature")
            var undated = fixture.signed(timeout)
            undated[HTTPField.Name("X-Cueline-Timestamp")!] = "noon"
            let noTime = try await client.post("/hooks/scores", timeout, undated)
            #expect(noTime.status == .unauthorized && noTime.error?.field == "X-Cueline-Timestamp", "\(noTime.text)")
            let tampered = try await client.post(
                "/hooks/scores", #"{"event":"timeout","break":"feed-2","seconds":30}"#, fixture.signed(timeout))
            #expect(tampered.status == .unauthorized)

            #expect(try await client.post("/hooks/nope", timeout, fixture.signed(timeout)).status == .notFound)
            let offRule = try await client.post("/hooks/_scores", timeout, fixture.signed(timeout))
            #expect(
                offRule.status == .notFound && offRule.error?.message == "no hook is named _scores", "\(offRule.text)")
            let notJSON = try await client.post("/hooks/scores", "goal!", fixture.signed("goal!"))
            #expect(notJSON.status == .unprocessableContent && notJSON.error?.field == "body")
            let missing = #"{"event":"timeout","break":"feed-3"}"#
            let unfilled = try await client.post("/hooks/scores", missing, fixture.signed(missing))
            #expect(
                unfilled.status == .unprocessableContent && unfilled.error?.field == "$.seconds", "\(unfilled.text)")
            let wrong = #"{"event":"timeout","break":"feed-4","seconds":"long"}"#
            let undecodable = try await client.post("/hooks/scores", wrong, fixture.signed(wrong))
            #expect(
                undecodable.status == .unprocessableContent && undecodable.error?.field == "body", "\(undecodable.text)"
            )
            // A key given twice, at the top or deeper: refused naming it, as the command API does (issue 34).
            for (twice, field) in [
                (#"{"event":"timeout","break":"feed-5","seconds":30,"seconds":5}"#, "seconds"),
                (
                    #"{"event":"timeout","break":"feed-6","seconds":30,"game":{"clock":[{"q":1,"q":2}]}}"#,
                    "game.clock[0].q"
                ),
            ] {
                let refused = try await client.post("/hooks/scores", twice, fixture.signed(twice))
                #expect(refused.status == .unprocessableContent && refused.error?.field == field, "\(refused.text)")
                #expect(refused.error?.message.contains("is given twice") == true, "\(refused.text)")
            }
        }
    }
}
