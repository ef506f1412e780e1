import EventStore
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Projector
import Schedule
import Wire

/// What a channel holds and held: the schedule, the log (a JSON page or a live Server-Sent Events stream), an exact
/// replay of any playlist served, and the as-run report. Every route reads one channel, so the caller must be
/// allowed to read it; the expensive ones run as ``AuditReads``.
struct AuditController {
    let follower: ChannelFollower
    let store: any EventStore
    let eventStreams: EventStreams
    let auditReads: AuditReads

    func addRoutes(to group: RouterGroup<APIRequestContext>) {
        group.get("/channels/{channel}/schedule", use: schedule)
        group.get("/channels/{channel}/events", use: events)
        group.get("/channels/{channel}/replay", use: replay)
        group.get("/channels/{channel}/as-run", use: asRun)
    }

    /// A page of the schedule (``SchedulePage``): the breaks starting in [`from`, `to`) after the cursor `after`,
    /// at most `limit` (100 by default, 1000 at most) and 1 MiB of them, with `next` when more follow. A page of up to
    /// the default 100 breaks is a binary search and the encoding of those breaks in memory: it runs at once. A longer
    /// one waits its turn among the audit reads.
    @Sendable func schedule(_ request: Request, context: APIRequestContext) async throws -> Response {
        let channel = try context.storedChannelID()
        _ = try context.caller(for: .read(channel: channel))
        let window = try Self.scheduleWindow(request)
        guard follower.state(of: channel)?.config != nil else { throw APIError(.unknownChannel(channel)) }
        // The state when the page's turn comes (a queued one may wait a while).
        let follower = follower
        @Sendable func page() throws -> Response {
            guard let state = follower.state(of: channel), let config = state.config else {
                throw APIError(.unknownChannel(channel))
            }
            let liveEdge = Timeline(config).liveEdge(at: follower.clock())
            return jsonResponse(encoded: SchedulePage(state: state, liveEdge: liveEdge, window: window).json)
        }
        guard window.limit > SchedulePage.defaultLimit else { return try page() }
        return try await auditReads.run(caller: auditReads.caller(request, context), channel: channel) { try page() }
    }

    /// `from`, `to`, `after` and `limit` of a schedule page; 422 naming the one that is wrong.
    static func scheduleWindow(_ request: Request) throws(APIError) -> SchedulePage.Window {
        let from = try Edge.instant(request, "from")
        let to = try Edge.instant(request, "to")
        if let from, let to, to < from {
            throw APIError.invalid("to", "must not be before from (\(from.iso8601))")
        }
        let after = try request.uri.queryParameters["after"].map { text throws(APIError) in
            guard let cursor = ScheduleCursor(String(text)) else {
                throw APIError.invalid(
                    "after",
                    "must be the next of an earlier page (an instant and a break id: 2026-03-01T20:15:00.000Z,brk-42)")
            }
            return cursor
        }
        let limit = try Edge.limit(request, default: SchedulePage.defaultLimit, maximum: SchedulePage.maximumLimit)
        return SchedulePage.Window(from: from, to: to, after: after, limit: limit)
    }

    /// A JSON page of the log, or, with `Accept: text/event-stream` (or `?stream`), a live stream of it.
    @Sendable func events(_ request: Request, context: APIRequestContext) async throws -> Response {
        let channel = try context.storedChannelID()
        let caller = try context.caller(for: .read(channel: channel))
        let (after, limit) = try Edge.eventPage(request)
        guard follower.state(of: channel) != nil else { throw APIError(.unknownChannel(channel)) }
        if request.headers[.accept]?.contains("text/event-stream") == true
            || request.uri.queryParameters["stream"] != nil
        {
            let ticket = try eventStreams.admit(
                key: caller.token.map { "token \($0.name)" } ?? "an unauthenticated caller")
            return Self.eventStream(
                channel: channel, after: after, streams: eventStreams, ticket: ticket,
                stillAuthorized: caller.recheck(.read(channel: channel)))
        }
        let store = store
        return try await auditReads.run(caller: auditReads.caller(request, context), channel: channel) {
            try await Self.eventPage(channel, after: after, limit: limit, from: store)
        }
    }

    @Sendable func replay(_ request: Request, context: APIRequestContext) async throws -> Response {
        let channel = try context.storedChannelID()
        _ = try context.caller(for: .read(channel: channel))
        let at = try Edge.instant(request, "at", required: true)!
        // A later instant was never served, and commands still to come may change it: answering it would hand out,
        // cacheable for a year, a playlist that no player was given. The clock, not the serving time: another
        // instance's tick is replayed here at once (`fault-two-instances.sh`), when this one's known log may lag it.
        let now = follower.clock()
        // An unknown channel is that, whatever the instant (worded as the replay itself words it, as the CLI does).
        guard follower.state(of: channel) != nil else {
            throw APIError(.notFound, Replay.Failure.channelDidNotExist(channel: channel, at: min(at, now)).description)
        }
        guard at <= now else {
            throw APIError.invalid(
                "at", "is after this instance's clock (\(now.iso8601)): a replay answers instants already served")
        }
        let rendition = try request.uri.queryParameters["rendition"].map { text in
            guard let id = Identifier(stored: text) else {
                throw APIError.invalid("rendition", "must be a rendition name: \(Identifier.rule)")
            }
            return id
        }
        let multivariant = request.uri.queryParameters["multivariant"] != nil
        let skip = try request.uri.queryParameters["skip"].map { text in
            guard let update = PlaylistBuilder.DeltaUpdate(rawValue: String(text)) else {
                throw APIError.invalid("skip", "must be YES or v2")
            }
            return update
        }
        let store = store
        // Reads and folds the log from its latest checkpoint in effect at `at` (migration 0007): one of the audit reads.
        return try await auditReads.run(caller: auditReads.caller(request, context), channel: channel) {
            do {
                let text = try await Replay.playlist(
                    channel, store: store, at: at, rendition: rendition, multivariant: multivariant, skip: skip)
                var response = Responses.playlist(text, maxAge: 31_536_000)
                response.headers[.cuelineTick] = at.iso8601
                return response
            } catch let failure as Replay.Failure {
                if case .channelDidNotExist = failure { throw APIError(.notFound, failure.description) }
                throw APIError(.invalid, failure.description)
            } catch {
                throw Self.logUnreachable(error, channel: channel)
            }
        }
    }

    @Sendable func asRun(_ request: Request, context: APIRequestContext) async throws -> Response {
        let channel = try context.storedChannelID()
        _ = try context.caller(for: .read(channel: channel))
        let from = try Edge.instant(request, "from")
        let to = try Edge.instant(request, "to")
        if let from, let to, to < from {
            throw APIError.invalid("to", "must not be before from (\(from.iso8601))")
        }
        let csv: Bool
        switch request.uri.queryParameters["format"]?.lowercased() {
        case nil, "json": csv = false
        case "csv": csv = true
        default: throw APIError.invalid("format", "must be csv or json")
        }
        guard follower.state(of: channel) != nil else { throw APIError(.unknownChannel(channel)) }
        let now = follower.clock()
        return try await auditReads.run(caller: auditReads.caller(request, context), channel: channel) { [store] in
            // The follower holds the hot schedule (aired breaks leave it): the report folds every break from the log.
            let entries = AsRun.entries(
                state: try await ChannelLoader.load(channel, from: store), from: from, to: to, at: now)
            if csv { return Responses.text(AsRun.csv(entries), contentType: "text/csv") }
            return jsonResponse(AsRunReport(channel: channel, entries: entries, totals: AsRun.totals(entries)))
        }
    }

    /// Server-Sent Events: every event of the channel after `after` (or `Last-Event-ID`), then each new one as this
    /// instance folds it in. The event id is the stream version, so a reconnecting client resumes where it left off.
    /// A stream ends after 10 minutes and at shutdown; EventSource clients reconnect by themselves. See `EventStreams`
    /// for how many there may be and how they share the work.
    static func eventStream(
        channel: ChannelID, after: Int64, streams: EventStreams, ticket: EventStreams.Ticket,
        stillAuthorized: (@Sendable () async -> Bool)?
    ) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "text/event-stream"
        headers[.cacheControl] = "no-cache"
        let body = ResponseBody { writer in
            try await streams.stream(
                channel, after: max(0, after), ticket: ticket, stillAuthorized: stillAuthorized, to: &writer)
        }
        return Response(status: .ok, headers: headers, body: body)
    }

    /// A JSON page of events holds at most this many bytes, unless its one event is larger.
    static let eventPageBytes = 1024 * 1024

    /// `{"channel", "events", "next"}`: the events after `after`, at most `limit` of them and, past the first, at most
    /// ``eventPageBytes`` in all; `next` is the last version in the page (the `after` of the next page), absent when
    /// the page is empty. The log is read in batches sized by what its events weigh, so a page of big events never
    /// holds more than about a page's worth of them in memory.
    static func eventPage(_ channel: ChannelID, after: Int64, limit: Int, from store: any EventStore)
        async throws(APIError) -> Response
    {
        var events: [EventView] = []
        // `{"channel":…,"events":[`, `]`, `,"next":` and 19 digits, `}`: what the page adds to its events.
        var bytes = 64 + channel.rawValue.utf8.count
        var count = 0
        var next: Int64?
        var batchSize = min(limit, 100)
        do {
            reading: while count < limit {
                let requested = min(batchSize, limit - count)
                let batch = try await store.readStream(channel, after: next ?? after, limit: requested)
                for event in batch {
                    let view = EventView(event)
                    let size = encodeJSON(view).count + 1
                    if count > 0 && bytes + size > eventPageBytes { break reading }
                    events.append(view)
                    bytes += size
                    count += 1
                    next = event.version
                }
                if batch.count < requested { break }
                let average = max(1, bytes / max(1, count))
                batchSize = max(1, min(100, (eventPageBytes - bytes) / average + 1))
            }
        } catch {
            throw Self.logUnreachable(error, channel: channel)
        }
        return jsonResponse(EventPage(channel: channel, events: events, next: next))
    }
}

extension AuditController {
    private static let logger = Logger(label: "cueline.audit")

    /// 503 for a log that could not be read: the details (host, port, database) go to the server's log, not to the
    /// caller.
    static func logUnreachable(_ error: any Error, channel: ChannelID) -> APIError {
        logger.error(
            "audit read failed: the event log is unreachable", metadata: ["channel": "\(channel)", "error": "\(error)"])
        return APIError(
            .unavailable, "the event log is unreachable; retry shortly (the details are in the server's log)")
    }
}
