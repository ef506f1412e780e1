import API
import EventStore
import Foundation
import HTTPTypes
import Hummingbird
import Testing

@Suite("Subscriptions routes (/subscriptions), in process")
struct SubscriptionRouteTests {
    @Test(
        "an admin (operator token for every channel) creates, lists and deletes; others 401/403; mistakes 422/409/404")
    func lifecycle() async throws {
        let fixture = try await APIFixture()
        try await fixture.test { [fixture] client in
            let body =
                #"{"name":"traffic","url":"https://traffic.example/hook","channels":["demo"],"events":["on-air","aired"]}"#
            #expect(try await client.post("/subscriptions", body).status == .unauthorized)
            for name in ["wall", "auto", "news"] {
                #expect(try await client.post("/subscriptions", body, fixture.auth(name)).status == .forbidden)
                #expect(try await client.get("/subscriptions", fixture.auth(name)).status == .forbidden)
            }
            let created = try await client.post("/subscriptions", body, fixture.auth("desk"))
            #expect(created.status == .created)
            let secret = try #require(created.json["secret"] as? String)
            #expect(secret.hasPrefix("whsec_"))
            let subscription = try #require(created.json["subscription"] as? [String: Any])
            #expect(subscription["events"] as? [String] == ["on-air", "aired"])
            #expect(subscription["created_by"] as? String == "desk" && subscription["secret"] == nil)
            #expect(try await fixture.subscriptions.list().map(\.secret) == [secret])

            let listed = try await client.get("/subscriptions", fixture.auth("desk"))
            #expect(listed.status == .ok && !listed.text.contains(secret))
            #expect((listed.json["subscriptions"] as? [[String: Any]])?.first?["name"] as? String == "traffic")

            #expect(try await client.post("/subscriptions", body, fixture.auth("desk")).status == .conflict)
            let badKind = try await client.post(
                "/subscriptions", #"{"name":"x","url":"https://x.example/","events":["aired","played"]}"#,
                fixture.auth("desk"))
            #expect(badKind.status == .unprocessableContent && badKind.error?.field == "events[1]")
            let badURL = try await client.post(
                "/subscriptions", #"{"name":"x","url":"ftp://x.example/"}"#, fixture.auth("desk"))
            #expect(badURL.status == .unprocessableContent && badURL.error?.field == "url")
            let extra = try await client.post(
                "/subscriptions", #"{"name":"x","url":"https://x.example/","secret":"mine"}"#, fixture.auth("desk"))
            #expect(extra.status == .unprocessableContent && extra.error?.field == "secret")

            #expect(
                try await client.execute(uri: "/subscriptions/traffic", method: .delete, headers: fixture.auth("news"))
                    .status == .forbidden)
            #expect(
                try await client.execute(uri: "/subscriptions/traffic", method: .delete, headers: fixture.auth("desk"))
                    .status == .noContent)
            #expect(
                try await client.execute(uri: "/subscriptions/traffic", method: .delete, headers: fixture.auth("desk"))
                    .status == .notFound)
            #expect(try await fixture.subscriptions.list().isEmpty)
        }
    }
}
