import Foundation
import HTTPTypes
import Metrics
import NIOCore
import Projector
import Schedule

/// A player's connection answered on raw bytes, under the HTTP codec: a media playlist `GET` or `HEAD` (plain, or an
/// LL-HLS blocking reload) is read from the bytes, answered with the follower's window and a head written straight
/// into a buffer, and never decoded into HTTP types, converted, routed or encoded. Half of the server's time under a
/// thousand blocked players was the HTTP/1.1 decoder and encoder of requests that are all alike; this path skips both.
///
/// It takes only the forms it reads completely and strictly, the same ones ``PlaylistFastPath`` answers:
/// `GET|HEAD /channels/{channel}/{rendition}.m3u8[?directives] HTTP/1.1`, header lines of a token, a colon and
/// visible ASCII, no body (`Content-Length`, `Transfer-Encoding`, `Expect` or `Upgrade`), no `Connection` other than
/// `keep-alive`, at most 100 fields in `ServerLimits.maxHeaderBytes`. At the first request it does not take (a command,
/// the multivariant playlist, an unknown channel, a directive to refuse, anything malformed), it hands that request and
/// every byte after it to the HTTP codec and leaves the pipeline: the connection is the codec's from then on, and
/// ``PlaylistFastPath`` and the router answer with the same rules (``MediaPlaylistAnswer``), bytes and headers. So nothing it does not
/// understand is ever answered here, and no byte is both answered here and decoded there.
///
/// Order: requests are taken one at a time from the front of what was read; a held request (blocking reload) holds
/// every byte behind it until it is answered, as on the HTTP path, and so does a client that does not read its answers
/// (no request is taken while the connection is not writable). A client that sends more than 4 × `maxHeaderBytes`
/// ahead of what it reads is closed. Timeouts and the connection cap see these requests as they see the codec's
/// (`ConnectionTracker`).
final class PlaylistRawPath: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    let follower: ChannelFollower
    let tracker: ConnectionTracker
    /// Bytes read and not taken yet (the rest of a request, or requests queued behind a held one).
    private var pending: ByteBuffer?
    /// The blocking reload being held, and its registration with the follower.
    private var held: HeldReload?
    private var registration: (channel: ChannelID, rendition: Identifier?, id: UInt64)?
    /// Events (a half-close) that came while a request was held: they follow its answer.
    private var events: [Any] = []
    /// Handed to the codec: everything passes.
    private var passing = false
    /// The last media playlist path asked for on this connection, with its channel and rendition.
    private var lastPath: (plain: String, channel: ChannelID, rendition: Identifier)?
    /// This connection's event loop's wake-ups and kept answers (looked up once, not per answer).
    private var loopShared: HeldWakeups?
    /// The held request has one of the gate's places for held reloads.
    private var counted = false

    /// This connection's event loop's shared state, found on the first use.
    private func loopState(_ context: ChannelHandlerContext) -> HeldWakeups {
        if let loopShared { return loopShared }
        let found = HeldWakeups.on(context.eventLoop)
        loopShared = found
        return found
    }

    /// Answers written here (they count in `cueline_playlist_fast_requests_total` too).
    static let requests = Counter(label: "cueline_playlist_raw_requests_total")

    init(follower: ChannelFollower, tracker: ConnectionTracker) {
        self.follower = follower
        self.tracker = tracker
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !passing else { return context.fireChannelRead(data) }
        var bytes = unwrapInboundIn(data)
        if var before = pending {
            pending = nil
            before.writeBuffer(&bytes)
            pending = before
        } else {
            pending = bytes
        }
        // A client pipelining far ahead of what it reads (behind a held request, or not reading) is not a player: not
        // buffered without end.
        if (pending?.readableBytes ?? 0) > 4 * tracker.limits.maxHeaderBytes {
            pending = nil
            return context.close(promise: nil)
        }
        process(context: context, inRead: true)
    }

    /// Goes up only once the connection is the codec's (the handlers above have nothing to deliver before: bytes go up
    /// only in `passThrough`, which then leaves the pipeline, and a player's every request would walk them all).
    func channelReadComplete(context: ChannelHandlerContext) {
        guard passing else { return }
        context.fireChannelReadComplete()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        context.fireChannelWritabilityChanged()
        // The client read what was waiting: take the requests it sent meanwhile.
        if !passing, held == nil, context.channel.isWritable, pending != nil {
            process(context: context, inRead: false)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard !passing else { return context.fireUserInboundEventTriggered(event) }
        if let eviction = event as? EvictHeldReload {
            // The gate needs this connection's place: the held request is answered 503, then the connection ends.
            guard held != nil else { return }
            eviction.handled = true
            answerHeld(context: context, ready: false, instead: MediaPlaylistAnswer.notHeld(evicted: true))
            tracker.closeAfterWrites()
            return
        }
        if held != nil {
            guard event is ChannelShouldQuiesceEvent else {
                // A half-close and the like take their turn after the held answer.
                events.append(event)
                return
            }
            // Shutting down: the held request is answered now (503, retry); what follows goes to the codec, and then
            // the event, so that the codec closes the connection once it has answered what it was given.
            answerHeld(context: context, ready: false)
            return passThrough(context: context, inRead: false, then: event)
        }
        // Bytes of a request not complete yet go to the codec before the event (which answers a request cut short
        // by a half-close as it does for any other).
        if pending != nil { return passThrough(context: context, inRead: false, then: event) }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if let registration {
            follower.cancelWindow(registration.channel, rendition: registration.rendition, id: registration.id)
        }
        registration = nil
        if counted {
            counted = false
            tracker.gate.endHold(tracker.id)
        }
        held = nil
        pending = nil
        events = []
        context.fireChannelInactive()
    }

    /// Takes the requests at the front of `pending` while they are ours, until one is held, the bytes run out, or one
    /// is not ours (then the connection goes to the codec).
    private func process(context: ChannelHandlerContext, inRead: Bool) {
        var wrote = false
        defer { if wrote { context.flush() } }
        while held == nil, !passing, context.channel.isWritable, var buffer = pending, buffer.readableBytes > 0 {
            let request: RawPlaylistRequest
            switch RawPlaylistRequest.parse(buffer, maxHeadBytes: tracker.limits.maxHeaderBytes) {
            case .incomplete: return
            case .other: return passThrough(context: context, inRead: inRead)
            case .request(let parsed): request = parsed
            }
            let started = DispatchTime.now().uptimeNanoseconds
            // A player asks for the same playlist on its connection: the path's channel and rendition are kept.
            let (plain, query) = MediaPlaylistTarget.split(request.target)
            if lastPath?.plain != plain {
                lastPath = MediaPlaylistTarget.mediaPlaylistPath(plain).map { (plain, $0.channel, $0.rendition) }
            }
            guard let path = lastPath,
                let decision = PlaylistLookup.decide(
                    follower: follower, channel: path.channel, rendition: path.rendition, query: query,
                    origin: request.origin,
                    head: request.head, started: started)
            else { return passThrough(context: context, inRead: inRead) }
            buffer.moveReaderIndex(forwardBy: request.length)
            pending = buffer.readableBytes > 0 ? buffer : nil
            tracker.timeouts.headRead(at: .now())
            tracker.timeouts.requestEnded(at: .now())
            tracker.changed()
            switch decision {
            case .answer(let served, let maxAge):
                respond(context: context, served: served, maxAge: maxAge, origin: request.origin, head: request.head)
                PlaylistRouteMetrics.served(head: request.head).record(since: started)
                wrote = true
            case .hold(let toHold):
                // Answered at once (503) when the follower takes no more waiters.
                if !hold(context: context, toHold, forwardedFor: request.forwardedFor) { wrote = true }
            }
        }
    }

    /// The connection is the codec's from here: what this path wrote is flushed, what is pending (starting at a
    /// request's first byte), the events queued and `event` go up, and this handler leaves (after which its context
    /// reaches nothing: everything is sent on before).
    private func passThrough(context: ChannelHandlerContext, inRead: Bool, then event: Any? = nil) {
        passing = true
        context.flush()
        let rest = pending, queued = events
        pending = nil
        events = []
        if let rest {
            context.fireChannelRead(wrapInboundOut(rest))
            // Outside a read from the socket, the codec is told the read ended (it delivers what it decoded then).
            if !inRead { context.fireChannelReadComplete() }
        }
        for queuedEvent in queued { context.fireUserInboundEventTriggered(queuedEvent) }
        if let event { context.fireUserInboundEventTriggered(event) }
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }

    /// Registers a held request with the follower; false: refused (the follower is closing, or the gate keeps no
    /// place for it) and answered 503 at once, unflushed.
    ///
    /// - Parameter forwardedFor: the request's `X-Forwarded-For`: from a trusted proxy, the client the hold counts
    ///   against (``TrustedProxies``).
    private func hold(context: ChannelHandlerContext, _ toHold: HeldReload, forwardedFor: [Substring] = []) -> Bool {
        held = toHold
        if !counted {
            let client = tracker.gate.clientKey(peer: context.channel.remoteAddress, forwardedFor: forwardedFor)
            guard tracker.gate.beginHold(tracker.id, client: client) else {
                // Refused, and the connection ends with the answer: a client past its share would otherwise come back
                // on it at once, and its idle connections churn the cap's places that new players need.
                answerHeld(context: context, ready: false, instead: MediaPlaylistAnswer.notHeld(evicted: false))
                pending = nil
                tracker.closeAfterWrites()
                return false
            }
            counted = true
        }
        let id = PlaylistLookup.register(
            follower: follower, toHold, handler: self, context: context, wakeups: loopState(context)
        ) {
            $0.release(context: $1, ready: $2)
        }
        if let id {
            registration = (toHold.channel, toHold.waitOn, id)
            return true
        }
        answerHeld(context: context, ready: false)
        return false
    }

    /// The follower's word on the held request: answer it, then take what queued behind it.
    private func release(context: ChannelHandlerContext, ready: Bool) {
        guard held != nil, !passing else { return }
        registration = nil
        guard context.channel.isActive else {
            held = nil
            pending = nil
            events = []
            return
        }
        guard answerHeld(context: context, ready: ready) else { return }
        context.flush()
        process(context: context, inRead: false)
        if held == nil, !passing, !events.isEmpty {
            // Events that came behind the held request (a half-close): the rest of an unfinished request goes to the
            // codec before them.
            if pending != nil { return passThrough(context: context, inRead: false) }
            let queued = events
            events = []
            for event in queued { context.fireUserInboundEventTriggered(event) }
        }
    }

    /// Writes the held request's answer (its window, or 503 past its deadline; `instead`: that error), unflushed.
    /// False: held again (a relay's upstream went back after the wake-up), nothing written.
    @discardableResult
    private func answerHeld(context: ChannelHandlerContext, ready: Bool, instead: APIError? = nil) -> Bool {
        guard let toAnswer = held else { return true }
        held = nil
        if let registration {
            follower.cancelWindow(registration.channel, rendition: registration.rendition, id: registration.id)
        }
        registration = nil
        let wakeup = PlaylistLookup.wakeup(instead: instead, tracker: tracker, counted: &counted) {
            PlaylistLookup.released(follower: follower, toAnswer, ready: ready, memo: loopState(context).responses)
        }
        switch wakeup {
        case .playlist(let served, let maxAge, _):
            respond(context: context, served: served, maxAge: maxAge, origin: toAnswer.origin, head: toAnswer.head)
            PlaylistRouteMetrics.served(head: toAnswer.head).record(since: toAnswer.started)
        case .wait:
            if hold(context: context, toAnswer) { return false }
            context.flush()  // refused: answered 503 at once
        case .refuse(let error):
            let (status, fields, body) = MediaPlaylistAnswer.errorAnswer(
                error, origin: toAnswer.origin, date: loopState(context).responses.dateNow())
            var out = context.channel.allocator.buffer(capacity: 256 + body.readableBytes)
            RawAnswer.writeHead(status, fields, into: &out)
            if !toAnswer.head { out.writeImmutableBuffer(body) }
            context.write(NIOAny(IOData.byteBuffer(out)), promise: nil)
            ended()
        }
        return true
    }

    private func respond(
        context: ChannelHandlerContext, served: ChannelFollower.ServedMedia, maxAge: Int, origin: Bool, head: Bool
    ) {
        PlaylistFastPath.requests.increment()
        Self.requests.increment()
        let date = loopState(context).responses.dateNow()
        // The whole answer, head and body, in one buffer made once per window, variant and second on this event loop:
        // the clients blocked on a channel's part, and players polling the same playlist, are answered with its bytes.
        let response = loopState(context).responses.response(
            for: served.body, maxAge: maxAge, origin: origin, head: head, date: date
        ) {
            var out = context.channel.allocator.buffer(capacity: 320 + (head ? 0 : served.body.readableBytes))
            RawAnswer.writeHead(code: 200, reasonPhrase: "OK", into: &out) { field in
                MediaPlaylistAnswer.playlistFields(served, maxAge: maxAge, origin: origin, date: date, field)
            }
            if !head { out.writeImmutableBuffer(served.body) }
            return out
        }
        context.write(NIOAny(IOData.byteBuffer(response)), promise: nil)
        ended()
    }

    private func ended() {
        tracker.timeouts.responseEnded(at: .now())
        tracker.changed()
    }
}
