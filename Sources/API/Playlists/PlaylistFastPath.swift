import Foundation
import HTTPTypes
import Metrics
import NIOCore
import NIOHTTPTypes
import Projector
import Schedule

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
/// there with the same rules (``MediaPlaylistAnswer``), the same bytes and headers for the same request.
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
        case holding(HeldReload)
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

    /// The connection's tracker, whose gate keeps the places for held reloads (nil in tests without a gate).
    let tracker: ConnectionTracker?
    /// The held request has one of the gate's places for held reloads.
    private var counted = false
    /// The client a trusted proxy names for the request (``TrustedProxies``; nil: the connection's own address).
    private var client: Substring?

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
            if let tracker, !tracker.gate.proxies.isEmpty {
                client = tracker.gate.clientKey(
                    peer: context.channel.remoteAddress,
                    forwardedFor: request.headerFields[values: .xForwardedFor].map { Substring($0) })
            }
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
            PlaylistRouteMetrics.served(head: head).record(since: started)
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
            release(context: context, ready: false, instead: MediaPlaylistAnswer.notHeld(evicted: true))
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
        switch PlaylistLookup.decide(follower: follower, path: path, origin: origin, head: head, started: started) {
        case .answer(let served, let maxAge)?:
            return .answering(served, maxAge: maxAge, origin: origin, head: head, started: started)
        case .hold(let held)?: return .holding(held)
        case nil: return nil
        }
    }

    /// Registers a held request with the follower; its answer is written on this connection's event loop when the
    /// ticker publishes the part (or 503 at the deadline), and the requests queued behind it are read then.
    private func hold(context: ChannelHandlerContext, _ held: HeldReload) {
        holdingRequest = true
        if let tracker, !counted {
            guard tracker.gate.beginHold(tracker.id, client: client) else {
                // Refused, and the connection ends with the answer (see `PlaylistRawPath.hold`).
                queued = []
                release(context: context, ready: false, instead: MediaPlaylistAnswer.notHeld(evicted: false))
                tracker.closeAfterWrites()
                return
            }
            counted = true
        }
        let id = PlaylistLookup.register(follower: follower, held, handler: self, context: context) {
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
        let wakeup = PlaylistLookup.wakeup(instead: instead, tracker: tracker, counted: &counted) {
            PlaylistLookup.released(follower: follower, held, ready: ready)
        }
        switch wakeup {
        case .playlist(let served, let maxAge, _):
            respond(context: context, served: served, maxAge: maxAge, origin: held.origin, head: held.head)
            PlaylistRouteMetrics.served(head: held.head).record(since: held.started)
        case .wait:
            state = .holding(held)
            return hold(context: context, held)
        case .refuse(let error):
            let (status, fields, body) = MediaPlaylistAnswer.errorAnswer(error, origin: held.origin, date: date.now())
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
        MediaPlaylistAnswer.playlistFields(served, maxAge: maxAge, origin: origin, date: date) { fields[$0] = $1 }
        kept = KeptHeaders(key: key, date: date, fields: fields)
        return fields
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
