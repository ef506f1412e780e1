import EventStore
import Foundation
import HLS
import Schedule
import TestSupport
import Testing

@Test("the database tests run when the test script asks for them")
func databaseIsConfiguredWhenRequired() {
    // scripts/test.sh sets CUELINE_REQUIRE_DB=1: then a missing DATABASE_URL must fail, not skip quietly.
    if ProcessInfo.processInfo.environment["CUELINE_REQUIRE_DB"] == "1" {
        #expect(TestDatabase.isConfigured, "DATABASE_URL is not set; run scripts/test.sh")
    }
}

/// The stores every contract test runs against.
enum StoreKind: String, CustomStringConvertible, Sendable {
    case memory, postgres

    static var available: [StoreKind] { TestDatabase.isConfigured ? [.memory, .postgres] : [.memory] }

    func make() -> any EventStore {
        switch self {
        case .memory: return InMemoryEventStore()
        case .postgres: return TestDatabase.makeStore()
        }
    }

    var description: String { rawValue }
}

/// A channel name no other test uses.
func uniqueChannel(_ prefix: String = "ch") -> ChannelID {
    ChannelID(prefix + "-" + UUID().uuidString.prefix(8).lowercased())!
}

func makeRequest(
    channel: ChannelID, expected: ExpectedVersion, events: [NewEvent] = [NewEvent(type: "Noted", payload: #"{"n":1}"#)],
    commandID: String = UUID().uuidString, request: String? = nil, actor: String = "alice", reason: String? = nil,
    at milliseconds: Int64? = nil
) -> AppendRequest {
    // The database refuses a decision time that is not ahead of its clock when the append takes the log head
    // (Migrations/0005), and allows at most 30 s ahead: 15 s leaves room for a loaded machine.
    let milliseconds = milliseconds ?? wallClockMilliseconds() + 15_000
    return AppendRequest(
        channel: channel, expectedVersion: expected, events: events,
        command: CommandMetadata(
            commandID: commandID, request: request ?? events.map(\.payload).joined(separator: ","), actor: actor,
            source: "test", reason: reason, decidedAt: Timestamp(milliseconds: milliseconds)))
}

func wallClockMilliseconds() -> Int64 {
    Int64((Date().timeIntervalSince1970 * 1000).rounded(.down))
}
