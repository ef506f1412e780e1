import Foundation
import HTTPTypes
import Metrics
import NIOCore
import NIOHTTPTypes
import Projector
import Schedule
import Synchronization

/// The public media playlist GET answered on the connection's event loop, before the router: a lookup of the bytes
/// the follower already rendered (`ChannelFollower.servedMedia`) and four writes, with no task, no middleware and
/// no per-request formatting. It is the request a live channel serves most (every player, every target duration,
/// every rendition), and the one a CDN forwards at each expiry.
///
/// Answered here: `GET` or `HEAD` of `/channels/{channel}/{rendition}.m3u8` with no percent-encoding and no
/// `Connection: close`, for a channel and rendition that have a window, either plain or, on a channel with parts, with
/// valid LL-HLS delivery directives (`_HLS_msn`, `_HLS_part`, `_HLS_skip`): a part already there is answered at once, a
/// part to come is held (`ChannelFollower.whenWindow`) and answered on this event loop when the ticker publishes it,
/// about 15 µs of work instead of a task and the router's middlewares, which matters when a thousand players blocked on
/// one channel's next part fall due at the same instant. Everything else (unknown channels, not started yet,
/// `master.m3u8`, errors, other queries, malformed or out-of-range directives) goes up to the router and is answered
/// there with the same rules (`PlaylistController.media`), the same bytes and headers for the same request.
///
/// Order: HTTP/1.1 answers must follow the order of requests on a connection. While a request passed up to the
/// router has not been answered, later requests go up too (the router answers them in turn), so a pipelined playlist
/// GET never overtakes an earlier command.
final class PlaylistFastPath: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private enum State {
        case idle
        /// This request went up to the router: its parts follow it.
        case forwarding
        /// Answered here once the request has been read to its end (a GET's body, if any, is dropped).
        case answering(ChannelFollower.ServedMedia, maxAge: Int, origin: Bool, head: Bool, started: UInt64)
        /// An LL-HLS blocking reload for a part not there yet: held from the request's end until the ticker publishes it.
        case holding(Held)
    }

    /// A blocking reload held here: what to answer once its part exists (or 503 at its deadline).
    struct Held {
        var channel: ChannelID
        var rendition: Identifier
        var skip: PlaylistBuilder.DeltaUpdate?
        var msn: Int64
        var part: Int64?
        var target: Int64
        var timeoutMilliseconds: Int64
        var origin: Bool
        var head: Bool
        var started: UInt64
        /// A relay rendition waits for its own upstream's parts (the follower releases it per rendition); nil: a clock
        /// channel's windows, shared by its renditions.
        var waitOn: Identifier?

        /// What is left of its 3 target durations (none left: 503).
        var millisecondsLeft: Int64 {
            timeoutMilliseconds - Int64(clamping: (DispatchTime.now().uptimeNanoseconds &- started) / 1_000_000)
        }
    }

    /// A request is held: what follows it on this connection (request parts, and events such as a half-close) waits
    /// here, in order, until it is answered.
    private var holdingRequest = false
    private var queued: [Inbound] = []
    /// The held request's registration with the follower (dropped if the connection closes first).
    private var registration: (channel: ChannelID, rendition: Identifier?, id: UInt64)?

    private enum Inbound {
        case read(NIOAny)
        case event(Any)
    }

    let follower: ChannelFollower
    private var state = State.idle
    private var quiescing = false
    /// Requests passed up to the router whose answer has not ended yet.
    private var upstream = 0
    private var date = HTTPDateText()

    static let requests = Counter(label: "cueline_playlist_fast_requests_total")

    /// The series Hummingbird's MetricsMiddleware keeps for the same route, method and status, so that a dashboard's
    /// request rate and duration by route count the playlists answered here with those the router answered.
    struct RouteMetrics {
        let counter: Counter
        let timer: Timer

        init(method: String) {
            let dimensions = [
                ("http.route", "/channels/{channel}/{playlist}"), ("http.request.method", method),
                ("http.response.status_code", "200"),
            ]
            counter = Counter(label: "hb.requests", dimensions: dimensions)
            timer = Timer(label: "http.server.request.duration", dimensions: dimensions, preferredDisplayUnit: .seconds)
        }

        func record(since started: UInt64) {
            counter.increment()
            timer.recordNanoseconds(Int64(clamping: DispatchTime.now().uptimeNanoseconds &- started))
        }
    }

    static let servedGET = RouteMetrics(method: "GET")
    static let servedHEAD = RouteMetrics(method: "HEAD")
    static func served(head: Bool) -> RouteMetrics { head ? servedHEAD : servedGET }

    /// The connection's tracker, whose gate keeps the places for held reloads (nil in tests without a gate).
    let tracker: ConnectionTracker?
    /// The held request has one of the gate's places for held reloads.
    private var counted = false

    init(follower: ChannelFollower, tracker: ConnectionTracker? = nil) {
        self.follower = follower
        self.tracker = tracker
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // HTTP/1.1 answers in order: nothing after a held request is read until it is answered.
        if holdingRequest {
            // A client pipelining more than a few requests behind a held one is not a player: not buffered without end.
            guard queued.count < 64 else { return context.close(promise: nil) }
            queued.append(.read(data))
            return
        }
        let part = unwrapInboundIn(data)
        switch (state, part) {
        case (.idle, .head(let request)):
            if upstream == 0, !quiescing, let answer = answer(request) {
                state = answer
            } else {
                state = .forwarding
                upstream += 1
                context.fireChannelRead(data)
            }
        case (.answering(let served, let maxAge, let origin, let head, let started), .end):
            state = .idle
            respond(context: context, served: served, maxAge: maxAge, origin: origin, head: head)
            Self.served(head: head).record(since: started)
        case (.answering, _):
            break
        case (.holding(let held), .end):
            hold(context: context, held)
        case (.holding, _):
            break
        case (.forwarding, .end):
            state = .idle
            context.fireChannelRead(data)
        default:
            context.fireChannelRead(data)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let eviction = event as? EvictHeldReload {
            // The gate needs this connection's place: the held request is answered 503, then the connection ends.
            guard holdingRequest else { return context.fireUserInboundEventTriggered(event) }
            eviction.handled = true
            queued = []
            release(context: context, ready: false, instead: Self.notHeld(evicted: true))
            tracker?.closeAfterWrites()
            return
        }
        if event is ChannelShouldQuiesceEvent {
            // Shutting down: nothing more is held here (a request read from now on goes to the router, which answers it
            // before the connection closes).
            quiescing = true
        }
        if holdingRequest {
            if event is ChannelShouldQuiesceEvent {
                // Shutting down: the held request is answered now (503, retry) rather than cut off with the connection.
                release(context: context, ready: false)
            } else {
                // A half-close and the like take their turn after the held answer.
                queued.append(.event(event))
                return
            }
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if let registration {
            follower.cancelWindow(registration.channel, rendition: registration.rendition, id: registration.id)
        }
        registration = nil
        if let tracker, counted {
            counted = false
            tracker.gate.endHold(tracker.id)
        }
        holdingRequest = false
        queued = []
        context.fireChannelInactive()
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        // The router's answers pass here on their way out; their end frees the path for the next request.
        if case .end = unwrapOutboundIn(data) { upstream = max(0, upstream - 1) }
        context.write(data, promise: promise)
    }

    /// What to answer here for this request head, or nil to pass it to the router.
    private func answer(_ request: HTTPRequest) -> State? {
        guard request.method == .get || request.method == .head, let path = request.path else { return nil }
        if let connection = request.headerFields[.connection], connection.lowercased().contains("close") { return nil }
        let origin = request.headerFields[.origin] != nil, head = request.method == .head
        let started = DispatchTime.now().uptimeNanoseconds
        switch Self.decide(follower: follower, path: path, origin: origin, head: head, started: started) {
        case .answer(let served, let maxAge)?:
            return .answering(served, maxAge: maxAge, origin: origin, head: head, started: started)
        case .hold(let held)?: return .holding(held)
        case nil: return nil
        }
    }

    /// What both paths before the router (this one and ``PlaylistRawPath``) do with a media playlist request.
    enum Decision {
        /// Answer at once with this window.
        case answer(ChannelFollower.ServedMedia, maxAge: Int)
        /// A blocking reload for a part not there yet.
        case hold(Held)
    }

    /// What to do with a `GET` or `HEAD` of `path` answered before the router, or nil to leave it to the router.
    static func decide(follower: ChannelFollower, path: String, origin: Bool, head: Bool, started: UInt64) -> Decision?
    {
        let (plain, query) = split(path)
        guard let (channel, rendition) = mediaPlaylistPath(plain) else { return nil }
        return decide(
            follower: follower, channel: channel, rendition: rendition, query: query, origin: origin, head: head,
            started: started)
    }

    /// The same for a path already split into its channel, rendition and query.
    static func decide(
        follower: ChannelFollower, channel: ChannelID, rendition: Identifier, query: Substring?, origin: Bool,
        head: Bool, started: UInt64
    ) -> Decision? {
        guard let query else {
            guard let served = try? follower.servedMedia(channel, rendition: rendition) else { return nil }
            return .answer(served, maxAge: max(1, served.targetDuration / 2))
        }
        // LL-HLS delivery directives, in their valid forms, on a channel with parts (its own, or a relay's upstream's);
        // the router answers the rest (and every error) with the same rules (`PlaylistController.media`).
        guard let directives = DeliveryDirectives(query: query),
            let served = try? follower.servedMedia(channel, rendition: rendition, skip: directives.skip),
            served.partsPerSegment != nil || served.relayParts != nil
        else { return nil }
        let plan: DeliveryDirectives.Plan?
        do {
            plan = try directives.plan(served)
        } catch {
            return nil  // refused (400): the router refuses it, with its message
        }
        guard let msn = directives.msn, case .hold(let target)? = plan else {
            // Only _HLS_skip, or the part is there already: at once.
            return .answer(served, maxAge: max(1, served.targetDuration / 2))
        }
        return .hold(
            Held(
                channel: channel, rendition: rendition, skip: directives.skip, msn: msn, part: directives.part,
                target: target,
                timeoutMilliseconds: Int64(3 * served.targetDuration) * 1000, origin: origin, head: head,
                started: started,
                waitOn: served.relayParts != nil ? rendition : nil))
    }

    /// What a held request's wake-up from the follower comes to.
    enum Release {
        /// Its part is there (lateness recorded for a clock channel), or a relay's upstream has no parts any more.
        case answer(ChannelFollower.ServedMedia)
        /// A relay's upstream went back (a restart) after the wake-up: hold it again for what is left of its time.
        case wait
        /// Its deadline passed, or the server is shutting down: 503.
        case timedOut
        /// The window cannot be served any more (the router's answer for the same lookup: a relay's upstream that no
        /// longer renders, 500; a rendition gone, 404).
        case failed(APIError)

        /// The error to answer `held` with, if this is one.
        func error(_ held: Held) -> APIError? {
            switch self {
            case .answer, .wait: nil
            case .timedOut: PlaylistFastPath.timedOut(held)
            case .failed(let error): error
            }
        }
    }

    /// What the follower's word `ready` on a held request comes to (the router's loop in `PlaylistController.media`).
    ///
    /// - Parameter memo: the loop's answers (`HeldWakeups.responses`): within one batch of the loop's wake-up, a window
    ///   found for one held request is reused for the others on the same channel, rendition and delta form that it
    ///   satisfies.
    static func released(follower: ChannelFollower, _ held: Held, ready: Bool, memo: LoopResponses? = nil) -> Release {
        guard ready else { return .timedOut }
        let served: ChannelFollower.ServedMedia
        do {
            if let known = memo?.servedInWakeup(held), known.blockingPosition >= held.target {
                served = known
            } else {
                served = try follower.servedMedia(held.channel, rendition: held.rendition, skip: held.skip)
                memo?.keepInWakeup(served, for: held)
            }
        } catch {
            return .failed(APIError(error))
        }
        if held.waitOn != nil {
            if served.relayParts == nil || served.blockingPosition >= held.target { return .answer(served) }
            return held.millisecondsLeft > 0 ? .wait : .timedOut
        }
        guard served.completedTicks >= held.target, let partMilliseconds = served.partMilliseconds else {
            return .timedOut
        }
        let boundary = served.tickBoundary.adding(
            milliseconds: -(served.completedTicks - held.target) * partMilliseconds)
        PlaylistController.blockedLateness.recordNanoseconds(
            max(0, follower.clock().milliseconds(since: boundary)) * 1_000_000)
        return .answer(served)
    }

    /// Registers a held request with the follower for what is left of its time; `release` is called once, on the
    /// connection's event loop, with the follower's word. Nil: the follower takes no more (shutting down).
    static func register<Handler: AnyObject>(
        follower: ChannelFollower, _ held: Held, handler: Handler, context: ChannelHandlerContext,
        wakeups: HeldWakeups? = nil, release: @escaping (Handler, ChannelHandlerContext, Bool) -> Void
    ) -> UInt64? {
        let bound = NIOLoopBound((handler, context, release), eventLoop: context.eventLoop)
        let wakeups = wakeups ?? HeldWakeups.on(context.eventLoop)
        return follower.whenWindow(
            held.channel, rendition: held.waitOn, completedTicks: held.target,
            timeoutMilliseconds: max(1, held.millisecondsLeft),
            batch: wakeups
        ) { ready in
            wakeups.add {
                let (handler, context, release) = bound.value
                release(handler, context, ready)
            }
        }
    }

    /// The 503 of a blocking reload the gate keeps no place for (``GateState``): its client address holds its share of
    /// held reloads already, or (`evicted`) a newer request took its place.
    static func notHeld(evicted: Bool) -> APIError {
        let message =
            evicted
            ? "this server holds as many blocking playlist reloads as it keeps places for, and a newer request took this one's place; retry"
            : "this client address holds as many blocking playlist reloads at once as it may (max_held_reloads_per_address); retry shortly"
        return APIError(.unavailable, message).with(.retryAfter, "1").with(.connection, "close")
    }

    /// The 503 of a held request whose part did not come within 3 target durations.
    static func timedOut(_ held: Held) -> APIError {
        APIError(
            .unavailable,
            "segment \(held.msn)\(held.part.map { " part \($0)" } ?? "") of channel \(held.channel) did not appear within 3 target durations"
        )
    }

    /// An error answer to a held request: its status, headers (the router's JSON answer's, CORS for a request with an
    /// Origin, Date and Server) and body.
    static func errorAnswer(_ error: APIError, origin: Bool, date: String) -> (
        HTTPResponse.Status, HTTPFields, ByteBuffer
    ) {
        let body = ByteBuffer(bytes: encodeJSON(ErrorBody(error: error.message, field: error.field)))
        var fields = HTTPFields()
        fields[.contentType] = "application/json"
        fields[.cacheControl] = "no-cache"
        for field in error.headers { fields.append(field) }
        fields[.contentLength] = String(body.readableBytes)
        if origin { fields[.accessControlAllowOrigin] = "*" }
        fields[.date] = date
        fields[.server] = "cueline"
        return (error.status, fields, body)
    }

    /// The path and its query (nil without `?`).
    static func split(_ path: String) -> (String, Substring?) {
        guard let mark = path.utf8.firstIndex(of: UInt8(ascii: "?")) else { return (path, nil) }
        return (String(path[..<mark]), path[path.utf8.index(after: mark)...])
    }

    /// Registers a held request with the follower; its answer is written on this connection's event loop when the
    /// ticker publishes the part (or 503 at the deadline), and the requests queued behind it are read then.
    private func hold(context: ChannelHandlerContext, _ held: Held) {
        holdingRequest = true
        if let tracker, !counted {
            guard tracker.gate.beginHold(tracker.id) else {
                // Refused, and the connection ends with the answer (see `PlaylistRawPath.hold`).
                queued = []
                release(context: context, ready: false, instead: Self.notHeld(evicted: false))
                tracker.closeAfterWrites()
                return
            }
            counted = true
        }
        let id = Self.register(follower: follower, held, handler: self, context: context) {
            $0.release(context: $1, ready: $2)
        }
        guard let id else { return release(context: context, ready: false) }
        registration = (held.channel, held.waitOn, id)
    }

    /// Answers the held request (its part, or 503; `instead`: that error), then lets what queued behind it through.
    private func release(context: ChannelHandlerContext, ready: Bool, instead: APIError? = nil) {
        guard holdingRequest, case .holding(let held) = state else { return }
        holdingRequest = false
        // Answered before its wake-up (shutting down): the follower forgets it, so no late wake-up answers a later one.
        if let registration {
            follower.cancelWindow(registration.channel, rendition: registration.rendition, id: registration.id)
        }
        registration = nil
        state = .idle
        guard context.channel.isActive else {
            queued = []
            return
        }
        let release = instead.map { Release.failed($0) } ?? Self.released(follower: follower, held, ready: ready)
        var heldAgain = false
        if case .wait = release { heldAgain = true }
        if let tracker, counted, !heldAgain {
            counted = false
            tracker.gate.endHold(tracker.id)
        }
        switch release {
        case .answer(let served):
            respond(
                context: context, served: served, maxAge: 6 * served.targetDuration, origin: held.origin,
                head: held.head)
            Self.served(head: held.head).record(since: held.started)
        case .wait:
            state = .holding(held)
            return hold(context: context, held)
        case .timedOut, .failed:
            let (status, fields, body) = Self.errorAnswer(release.error(held)!, origin: held.origin, date: date.now())
            context.write(wrapOutboundOut(.head(HTTPResponse(status: status, headerFields: fields))), promise: nil)
            if !held.head { context.write(wrapOutboundOut(.body(body)), promise: nil) }
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }
        let waiting = queued
        queued = []
        for item in waiting {
            switch item {
            case .read(let data): channelRead(context: context, data: data)
            case .event(let event): userInboundEventTriggered(context: context, event: event)
            }
        }
        // Outside a read from the socket: what went up to the router is delivered at the end of a read.
        if !waiting.isEmpty { context.fireChannelReadComplete() }
    }

    /// `/channels/{channel}/{rendition}.m3u8` split, when the path is exactly that plain form (no query, no `%`,
    /// nothing empty, not the multivariant playlist).
    static func mediaPlaylistPath(_ path: String) -> (channel: ChannelID, rendition: Identifier)? {
        let prefix = "/channels/"
        guard path.hasPrefix(prefix), path.hasSuffix(".m3u8"), path.utf8.count <= 200 else { return nil }
        let rest = path.utf8.dropFirst(prefix.utf8.count)
        guard !rest.contains(UInt8(ascii: "?")), !rest.contains(UInt8(ascii: "%")),
            let slash = rest.firstIndex(of: UInt8(ascii: "/"))
        else { return nil }
        let channel = Substring(rest[rest.startIndex..<slash])
        let file = Substring(rest[rest.index(after: slash)...])
        guard !channel.isEmpty, !file.utf8.contains(UInt8(ascii: "/")), !file.utf8.elementsEqual("master.m3u8".utf8)
        else { return nil }
        let rendition = file.dropLast(5)
        // A segment that is no id names no channel: the router answers it (404).
        guard let id = ChannelID(stored: channel), let name = Identifier(stored: rendition) else { return nil }
        return (id, name)
    }

    private func respond(
        context: ChannelHandlerContext, served: ChannelFollower.ServedMedia, maxAge: Int, origin: Bool, head: Bool
    ) {
        Self.requests.increment()
        let fields = headers(for: served, maxAge: maxAge, origin: origin)
        context.write(wrapOutboundOut(.head(HTTPResponse(status: .ok, headerFields: fields))), promise: nil)
        if !head { context.write(wrapOutboundOut(.body(served.body)), promise: nil) }
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }

    /// The headers the router's answer carries (`Responses.playlist`, CORS for a request with an Origin, and the
    /// Date and Server headers Hummingbird adds), in the same order. A player polls the same playlist on its
    /// connection: the last answer's headers are kept and reused while the window and the second are the same.
    private func headers(for served: ChannelFollower.ServedMedia, maxAge: Int, origin: Bool) -> HTTPFields {
        let date = date.now()
        let key = KeptHeaders.Key(
            tick: served.tickText, length: served.body.readableBytes, maxAge: maxAge, origin: origin)
        if let kept, kept.key == key, kept.date == date { return kept.fields }
        var fields = HTTPFields()
        fields.reserveCapacity(7)
        Self.playlistFields(served, maxAge: maxAge, origin: origin, date: date) { fields[$0] = $1 }
        kept = KeptHeaders(key: key, date: date, fields: fields)
        return fields
    }

    /// The headers of a playlist answer, in order: the router's (`Responses.playlist`, CORS for a request with an
    /// Origin, and the Date and Server headers Hummingbird adds). Both paths before the router write these.
    static func playlistFields(
        _ served: ChannelFollower.ServedMedia, maxAge: Int, origin: Bool, date: String,
        _ field: (HTTPField.Name, String) -> Void
    ) {
        field(.contentType, Responses.playlistContentType)
        field(.cacheControl, Responses.maxAge(maxAge))
        field(.cuelineTick, served.tickText)
        field(.contentLength, String(served.body.readableBytes))
        if origin { field(.accessControlAllowOrigin, "*") }
        field(.date, date)
        field(.server, "cueline")
    }

    private struct KeptHeaders {
        struct Key: Equatable {
            var tick: String
            var length: Int
            var maxAge: Int
            var origin: Bool
        }
        var key: Key
        var date: String
        var fields: HTTPFields
    }

    private var kept: KeptHeaders?
}

/// The `Date` header's text (RFC 9110 IMF-fixdate), formatted once per second per connection.
struct HTTPDateText {
    private var second = -1
    private var text = ""

    mutating func now() -> String {
        var now = time(nil)
        guard now != second else { return text }
        second = now
        var parts = tm()
        gmtime_r(&now, &parts)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        text =
            "\(days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(parts.tm_year + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
        return text
    }
}

/// Wake-ups of held requests, gathered per event loop. The ticker releases the thousand requests held on a part
/// boundary channel by channel; each loop takes its share in one task, which answers them back to back and takes those
/// gathered meanwhile until none is left (before reading the requests those answers bring), instead of one task, lock
/// and wake of the loop per request, interleaved with reads.
final class HeldWakeups: WakeupBatch {
    private let loop: any EventLoop
    /// The work gathered (run on `loop` only), and whether a task to run it is on the loop's queue or running.
    private let state = Mutex<(pending: [@Sendable () -> Void], scheduled: Bool)>(([], false))

    /// Whole answers made on this loop (touched on it only).
    let responses = LoopResponses()

    private init(loop: any EventLoop) {
        self.loop = loop
    }

    /// One per event loop (a server has a few, for its life; kept, so an identifier is never reused).
    private static let loops = Mutex<[ObjectIdentifier: HeldWakeups]>([:])

    static func on(_ loop: any EventLoop) -> HeldWakeups {
        loops.withLock { loops in
            if let known = loops[ObjectIdentifier(loop)] { return known }
            let made = HeldWakeups(loop: loop)
            loops[ObjectIdentifier(loop)] = made
            return made
        }
    }

    /// Gathers `work`, run on the loop at the next `wake()`.
    func add(_ work: @escaping @Sendable () -> Void) {
        state.withLock { $0.pending.append(work) }
    }

    /// Runs what gathered on the loop, in one task (none queued twice: a task on its way or running takes what gathers).
    func wake() {
        let schedule = state.withLock { state in
            guard !state.scheduled, !state.pending.isEmpty else { return false }
            state.scheduled = true
            return true
        }
        guard schedule else { return }
        loop.execute { self.drain() }
    }

    /// At most this many answers in one task while more keep gathering: then the loop's other work (reads, timers,
    /// other connections) takes its turn, and a task queued behind it goes on.
    static let perTask = 1024

    /// Runs what gathered, and what gathers meanwhile (the ticker releases a boundary's channels one after another),
    /// until nothing is left or `perTask` have run: `wake()` queues no task while this one runs.
    private func drain() {
        var ran = 0
        while true {
            let batch = state.withLock { state in
                defer { state.pending = [] }
                if state.pending.isEmpty { state.scheduled = false }
                return state.pending
            }
            if batch.isEmpty { return }
            run(batch)
            ran += batch.count
            if ran >= Self.perTask {
                // Still scheduled: what gathers until the queued task runs is its.
                loop.execute { self.drain() }
                return
            }
        }
    }

    private func run(_ batch: [@Sendable () -> Void]) {
        responses.beginWakeup()
        defer { responses.endWakeup() }
        for work in batch { work() }
    }
}

/// Whole playlist answers (head and body in one buffer) kept on one event loop, by the window's body and the variant
/// (cache lifetime, CORS, HEAD) and for the second of their `Date`: the requests a part boundary releases on a loop
/// are mostly the same few windows, each then one write of bytes already made.
///
/// Touched on its event loop only (hence unchecked): `HeldWakeups.on(loop).responses`.
final class LoopResponses: @unchecked Sendable {
    private struct Key: Hashable {
        /// The body's bytes, by address: a window's bodies are never written again, and the entry keeps the body alive,
        /// so an address is not reused while it is a key.
        var body: UInt
        var length: Int
        var maxAge: Int
        var origin: Bool
        var head: Bool
    }

    private var date = ""
    private var kept: [Key: (body: ByteBuffer, response: ByteBuffer)] = [:]
    /// The `Date` header's text, once per second for the whole loop (not per connection: a thousand connections
    /// answered four times a second would each format it once a second).
    private var dateText = HTTPDateText()

    /// The `Date` header's text now.
    func dateNow() -> String { dateText.now() }

    private struct Wanted: Hashable {
        var channel: ChannelID
        var rendition: Identifier
        var skip: PlaylistBuilder.DeltaUpdate?
    }

    /// Windows looked up during the current batch of the loop's wake-up (`HeldWakeups.run`), by what was asked: the requests
    /// a part boundary releases are mostly the same few windows. Empty, and not kept, outside a wake-up.
    private var servedNow: [Wanted: ChannelFollower.ServedMedia] = [:]
    private var inWakeup = false

    func beginWakeup() { inWakeup = true }

    func endWakeup() {
        inWakeup = false
        servedNow.removeAll(keepingCapacity: true)
    }

    func servedInWakeup(_ held: PlaylistFastPath.Held) -> ChannelFollower.ServedMedia? {
        guard inWakeup else { return nil }
        return servedNow[Wanted(channel: held.channel, rendition: held.rendition, skip: held.skip)]
    }

    func keepInWakeup(_ served: ChannelFollower.ServedMedia, for held: PlaylistFastPath.Held) {
        guard inWakeup else { return }
        servedNow[Wanted(channel: held.channel, rendition: held.rendition, skip: held.skip)] = served
    }
    /// The bytes of the answers kept (their bodies are the windows', shared with the follower while current).
    private var bytes = 0
    /// At most this many bytes of answers are kept (a loop busy with more windows than that starts again more often).
    static let limit = 8 << 20

    func response(for body: ByteBuffer, maxAge: Int, origin: Bool, head: Bool, date: String, make: () -> ByteBuffer)
        -> ByteBuffer
    {
        if date != self.date || bytes >= Self.limit {
            // A new second (the Date header), or many windows: start again.
            self.date = date
            kept.removeAll(keepingCapacity: bytes < Self.limit)
            bytes = 0
        }
        let address = body.withUnsafeReadableBytes { UInt(bitPattern: $0.baseAddress) }
        let key = Key(body: address, length: body.readableBytes, maxAge: maxAge, origin: origin, head: head)
        if let known = kept[key] { return known.response }
        let made = make()
        kept[key] = (body, made)
        bytes += made.readableBytes
        return made
    }
}
