import EventStore
import Hummingbird
import Logging
import Projector
import Schedule
import Wire

/// `GET /channels/{channel}/refusals`: the refused commands of a channel (who tried what, when, from which door, and
/// why not), the part of the audit trail the event log does not hold. Read like the log: the same scope as
/// `GET …/events` (a token allowed to read the channel), a page at a time (`after` cursor, `limit` 1…1000, 100 by
/// default, `next` in the answer), because a hostile client can record many refusals; `break` keeps those that named
/// one break.
struct RefusalController {
    let follower: ChannelFollower
    /// Where the server records refusals; nil: it records none, and every page is empty.
    let refusals: (any RefusalStore)?
    /// A page filtered by break can read every refusal of the channel to find its matches (the filter looks inside
    /// each stored request), so it is one of the audit reads, limited like replays and event pages.
    let auditReads: AuditReads

    static let defaultLimit = 100
    static let maximumLimit = 1000
    private static let logger = Logger(label: "cueline.audit")

    func addRoutes(to group: RouterGroup<APIRequestContext>) {
        group.get("/channels/{channel}/refusals", use: list)
    }

    @Sendable func list(_ request: Request, context: APIRequestContext) async throws -> Response {
        let channel = try context.storedChannelID()
        _ = try context.caller(for: .read(channel: channel))
        let query = request.uri.queryParameters
        let after =
            try Self.number(query["after"], "after", 0...Int64.max, "a whole number from 0 to 9223372036854775807") ?? 0
        let limit =
            try Self.number(
                query["limit"], "limit", 1...Int64(Self.maximumLimit), "a whole number from 1 to \(Self.maximumLimit)"
            )
            .map(Int.init) ?? Self.defaultLimit
        var breakID: BreakID?
        if let text = query["break"] {
            guard let id = BreakID(text) else {
                throw APIError.invalid("break", "must be a break id: \(Identifier.rule)")
            }
            breakID = id
        }
        guard follower.state(of: channel) != nil else { throw APIError(.unknownChannel(channel)) }
        guard let refusals else {
            return jsonResponse(RefusalPage(channel: channel, breakId: breakID, refusals: [], next: nil))
        }
        let filter = breakID
        return try await auditReads.run(caller: auditReads.caller(request, context), channel: channel) {
            let batch: RefusalBatch
            do {
                batch = try await refusals.refusals(of: channel, breakID: filter, after: after, limit: limit)
            } catch {
                Self.logger.error("refusals read failed", metadata: ["channel": "\(channel)", "error": "\(error)"])
                throw APIError(
                    .unavailable, "the audit trail is unreachable; retry shortly (the details are in the server's log)")
            }
            return jsonResponse(
                RefusalPage(
                    channel: channel, breakId: filter, refusals: batch.refusals.map(RefusalView.init), next: batch.next)
            )
        }
    }

    /// An optional whole-number query parameter within `range`; 422 naming it otherwise.
    private static func number(_ text: Substring?, _ field: String, _ range: ClosedRange<Int64>, _ rule: String)
        throws(APIError) -> Int64?
    {
        guard let text else { return nil }
        guard let value = Int64(text.trimmingCharacters(in: .whitespaces)), range.contains(value) else {
            throw APIError.invalid(field, "must be \(rule)")
        }
        return value
    }
}
