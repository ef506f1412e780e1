import EventStore
import Foundation
import HLS
import Schedule
import TestSupport
import Testing

@Suite("RefusalStore pages (in-memory and PostgreSQL)")
struct RefusalPageContractTests {
    @Test(
        "pages in recording order after a cursor, at most the limit, next is the last cursor; break filter on the stored request",
        arguments: AuditStoreKind.available)
    func pages(kind: AuditStoreKind) async throws {
        let store = kind.refusals()
        let channel = uniqueChannel()
        let now = wallClockMilliseconds()
        func refusal(_ id: String, _ request: String) -> Refusal {
            Refusal(
                channel: channel, commandID: id, command: "cancel-break", request: request, actor: "desk",
                source: "http",
                reason: "refused \(id)", decidedAt: Timestamp(milliseconds: now))
        }
        let all = [
            refusal("c1", #"{"cancelBreak":{"id":"brk-1"}}"#),
            refusal("c2", #"{"cancelCurrentEvent":{}}"#),
            refusal("c3", #"{"placeBreak":{"_0":{"duration":30000,"id":"brk-1"}}}"#),
            refusal("c4", #"{"setPlayoutLimit":{"id":"brk-2","limitMilliseconds":1000}}"#),
            refusal("c5", #"{"cancelBreak":{"id":"brk-1' OR '1'='1"}}"#),
        ]
        for (index, item) in all.enumerated() {
            try await store.recordRefusal(item)
            if index == 1 {  // another channel's refusal between them is not in this channel's pages
                try await store.recordRefusal(
                    Refusal(
                        channel: uniqueChannel(), commandID: "x", command: "cancel-break",
                        request: #"{"cancelBreak":{"id":"brk-1"}}"#,
                        actor: "a", source: "http", reason: "elsewhere", decidedAt: Timestamp(milliseconds: now)))
            }
        }
        #expect(all.compactMap(\.breakID) == ["brk-1", "brk-1", "brk-2", "brk-1' OR '1'='1"])

        // Two at a time, following next, gives every refusal once, in order.
        var read: [Refusal] = []
        var cursor: Int64 = 0
        var pages = 0
        while true {
            let page = try await store.refusals(of: channel, breakID: nil, after: cursor, limit: 2)
            #expect(page.refusals.count <= 2)
            guard let next = page.next else {
                #expect(page.refusals.isEmpty)
                break
            }
            #expect(next > cursor)
            read += page.refusals
            cursor = next
            pages += 1
        }
        #expect(read == all && pages == 3)

        let first = try await store.refusals(of: channel, breakID: nil, after: 0, limit: 1)
        #expect(first.refusals == [all[0]])
        let rest = try await store.refusals(of: channel, breakID: nil, after: try #require(first.next), limit: 1000)
        #expect(rest.refusals == Array(all.dropFirst()))

        let brk1 = try await store.refusals(of: channel, breakID: "brk-1", after: 0, limit: 10)
        #expect(brk1.refusals == [all[0], all[2]])
        let brk1Later = try await store.refusals(
            of: channel, breakID: "brk-1", after: try #require(first.next), limit: 10)
        #expect(brk1Later.refusals == [all[2]] && brk1Later.next == brk1.next)
        #expect(try await store.refusals(of: channel, breakID: "brk-2", after: 0, limit: 10).refusals == [all[3]])
        // The filter is a break id: the injection-shaped text recorded above cannot even be asked for.
        let injection = "brk-1' OR '1'='1"
        #expect(BreakID(injection) == nil)
        let none = try await store.refusals(of: channel, breakID: "brk-3", after: 0, limit: 10)
        #expect(none.refusals.isEmpty && none.next == nil)
        #expect(try await store.refusals(of: uniqueChannel(), breakID: nil, after: 0, limit: 10).refusals.isEmpty)
    }
}
