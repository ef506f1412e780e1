import HTTPTypes
import HummingbirdCore
import Logging
import Metrics
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import Projector

/// Hummingbird's HTTP/1.1 child channel with the server's limits around it: the connection cap
/// (``ConnectionGate``), the header, body and idle timeouts (``ConnectionTimeouts``), and the header and body sizes.
/// Use it as `Application(router:server: GuardedHTTP1Channel.server(limits:))`.
package struct GuardedHTTP1Channel: ServerChildChannel {
    package typealias Value = HTTP1Channel.Value

    let http: HTTP1Channel
    let gate: ConnectionGate
    let limits: ServerLimits
    /// Answers plain media playlist GETs on the event loop (``PlaylistFastPath``); nil: the router answers them.
    let playlists: ChannelFollower?

    /// The server builder for `Application`.
    package static func server(limits: ServerLimits, gate: ConnectionGate, playlists: ChannelFollower? = nil) -> HTTPServerBuilder {
        HTTPServerBuilder { responder in
            var configuration = HTTP1Channel.Configuration(
                httpDecoderConfiguration: .init(
                    maxHeaderFieldSize: limits.maxHeaderBytes, maxHeaderListSize: limits.maxHeaderBytes, maxHeaderFieldCount: 100))
            configuration.idleTimeout = nil  // ConnectionTimeouts does it, with a header timeout besides.
            return GuardedHTTP1Channel(
                http: HTTP1Channel(responder: responder, configuration: configuration), gate: gate, limits: limits, playlists: playlists)
        }
    }

    package func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let admission = gate.admit(channel)
        let id: UInt64
        switch admission {
        case .refused:
            // Every connection is busy: say so and close. The HTTP pipeline below never sees a byte.
            return channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(RefuseConnectionHandler())
            }.flatMap { http.setup(channel: channel, logger: logger) }
        case .admitted(let admitted), .admittedEvicting(let admitted, _):
            id = admitted
        }
        let gate = self.gate
        channel.closeFuture.whenComplete { _ in gate.remove(id) }
        let tracker = ConnectionTracker(
            id: id, gate: gate, limits: limits,
            timeouts: ConnectionTimeouts(
                header: .seconds(Int64(limits.headerTimeoutSeconds)), idle: .seconds(Int64(limits.idleTimeoutSeconds)),
                acceptedAt: .now()))
        var configuration = http.configuration
        let additional = configuration.additionalChannelHandlers
        let playlists = self.playlists
        configuration.additionalChannelHandlers = {
            [HTTPSideHandler(tracker: tracker)] + (playlists.map { [PlaylistFastPath(follower: $0)] } ?? []) + additional()
        }
        let guarded = HTTP1Channel(responder: http.responder, configuration: configuration)
        let sendBuffer = limits.sendBufferBytes
        return channel.eventLoop.makeCompletedFuture {
            try channel.syncOptions?.setOption(ChannelOptions.socketOption(.so_sndbuf), value: SocketOptionValue(sendBuffer))
            let byteSide = ByteSideHandler(tracker: tracker)
            try channel.pipeline.syncOperations.addHandler(byteSide, position: .first)
            // Players' requests answered on raw bytes until a request that is not theirs (``PlaylistRawPath``).
            if let playlists {
                try channel.pipeline.syncOperations.addHandler(PlaylistRawPath(follower: playlists, tracker: tracker), position: .after(byteSide))
            }
        }.flatMap { guarded.setup(channel: channel, logger: logger) }.flatMapThrowing { value in
            // Where the request's HTTP version is still known: below the conversion to HTTP types.
            let pipeline = channel.pipeline.syncOperations
            let decoder = try pipeline.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self)
            try pipeline.addHandler(RequestVersionHandler(), position: .after(decoder))
            return value
        }
    }

    package func handle(value: Value, logger: Logger) async {
        await http.handle(value: value, logger: logger)
    }
}

/// What the two handlers of one connection share. Used only on the connection's event loop (both handlers and
/// the timer run there); `@unchecked Sendable` because Hummingbird builds the HTTP-side handler in a `@Sendable`
/// closure.
final class ConnectionTracker: @unchecked Sendable {
    let id: UInt64
    let gate: ConnectionGate
    let limits: ServerLimits
    var timeouts: ConnectionTimeouts
    /// The byte-side handler's context: raw answers (408, 413, 431) are written there, below the HTTP codec.
    var rawContext: ChannelHandlerContext?
    private var timer: Scheduled<Void>?
    private var timerDeadline: NIODeadline?
    private var wasBusy = false
    private var closing = false

    static let timeouts = Counter(label: "cueline_http_timeouts_total")
    static let oversized = Counter(label: "cueline_http_oversized_requests_total")

    init(id: UInt64, gate: ConnectionGate, limits: ServerLimits, timeouts: ConnectionTimeouts) {
        self.id = id
        self.gate = gate
        self.limits = limits
        self.timeouts = timeouts
    }

    /// After every change: tells the gate whether the connection may be evicted, and keeps one timer at the
    /// earliest deadline.
    func changed() {
        let busy = timeouts.isBusy
        if busy != wasBusy {
            wasBusy = busy
            gate.setBusy(id, busy)
        }
        guard let context = rawContext, let deadline = timeouts.deadline else { return }
        if let scheduled = timerDeadline, scheduled <= deadline { return }
        timer?.cancel()
        schedule(at: deadline, context: context)
    }

    private func schedule(at deadline: NIODeadline, context: ChannelHandlerContext) {
        timerDeadline = deadline
        timer = context.eventLoop.assumeIsolatedUnsafeUnchecked().scheduleTask(deadline: deadline) { [self] in
            timer = nil
            timerDeadline = nil
            switch timeouts.timeoutFired(at: .now()) {
            case .nothing: break
            case .wait(let until): schedule(at: until, context: context)
            case .close:
                Self.timeouts.increment()
                close()
            case .closeWithRequestTimeout:
                Self.timeouts.increment()
                answerAndClose(.init(statusCode: 408, reasonPhrase: "Request Timeout"), "the request did not arrive in time")
            }
        }
    }

    func cancelTimer() {
        timer?.cancel()
        timer = nil
        timerDeadline = nil
    }

    func close() {
        guard !closing, let context = rawContext else { return }
        closing = true
        context.close(promise: nil)
    }

    /// Writes a complete response straight to the socket, under the HTTP codec, and closes. Only when no other
    /// response is in progress on the connection; else it just closes.
    func answerAndClose(_ status: HTTPResponseStatus, _ message: String) {
        guard !closing, let context = rawContext else { return }
        guard timeouts.requestsInProgress == 0 else { return close() }
        closing = true
        let body = #"{"error":"\#(message)"}"# + "\n"
        let text = "HTTP/1.1 \(status.code) \(status.reasonPhrase)\r\nContent-Type: application/json\r\n"
            + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body
        context.writeAndFlush(NIOAny(IOData.byteBuffer(ByteBuffer(string: text)))).whenComplete { _ in
            context.close(promise: nil)
        }
    }
}

/// First in the pipeline, on raw bytes: notes when request bytes arrive and when the client stops reading.
final class ByteSideHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

    let tracker: ConnectionTracker

    init(tracker: ConnectionTracker) { self.tracker = tracker }

    func handlerAdded(context: ChannelHandlerContext) {
        tracker.rawContext = context
        tracker.changed()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        tracker.cancelTimer()
        tracker.rawContext = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        tracker.timeouts.bytesRead(at: .now())
        tracker.changed()
        context.fireChannelRead(data)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        tracker.timeouts.writabilityChanged(writable: context.channel.isWritable, at: .now())
        tracker.changed()
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        tracker.cancelTimer()
        context.fireChannelInactive()
    }
}

/// After the HTTP codec: notes request heads, request ends and response ends; refuses oversized requests; and
/// takes pipelined requests one at a time.
///
/// A client may send many requests without reading the answers (1,000 `GET /openapi.json` in one 39 KB write): the
/// router would answer them all into the connection's outbound buffer (28 MB for that one connection; 200 such
/// connections took 2.7 GB and stalled every other request). So a request goes up only once the previous one has been
/// answered and the socket takes what is written (the channel is writable); until then the parts read are held
/// here, and no more is read from the socket while any are. A connection then costs its send buffer, one answer and
/// what one read brought in.
final class HTTPSideHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    let tracker: ConnectionTracker
    private var bodyBytes = 0
    /// After a refused request, what is still read of it is dropped.
    private var discarding = false
    /// A request has gone up whose answer has not ended yet.
    private var answering = false
    /// The request going up is not complete yet: its body and end follow it.
    private var forwarding = false
    /// Parts read but not gone up yet (pipelined requests), oldest first, with the events that came after them (a
    /// half-close: it follows the requests sent before it, which are answered, as without holding).
    private var held = CircularBuffer<Held>()

    private enum Held {
        case part(NIOAny)
        case event(Any)
    }
    /// A read asked for while requests are held: done once they have gone up.
    private var readPending = false
    /// What to do once the answer in progress has ended, for a request refused (or bytes that are not HTTP) behind
    /// it: the answer is not cut off; then the refusal (nil: none, the connection just ends) and the close.
    private var afterAnswer: (status: HTTPResponseStatus, message: String)??

    init(tracker: ConnectionTracker) { self.tracker = tracker }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !discarding else { return }
        switch unwrapInboundIn(data) {
        case .head(let head):
            let length = head.headerFields[.contentLength].flatMap { Int($0) } ?? 0
            guard length <= tracker.limits.maxBodyBytes else {
                return refuse(.payloadTooLarge, "the request body is larger than \(tracker.limits.maxBodyBytes) bytes")
            }
            bodyBytes = 0
        case .body(let buffer):
            bodyBytes += buffer.readableBytes
            guard bodyBytes <= tracker.limits.maxBodyBytes else {
                // The head went up already: a response may be on its way, so no second one; just close.
                Self.oversized()
                discarding = true
                return tracker.close()
            }
        case .end:
            break
        }
        tracker.changed()
        held.append(.part(data))
        // Far ahead of its answers (a client that sends its socket buffer full of requests, then half-closes: the
        // socket is read to its end whatever reads are held): not a player, not buffered without end.
        if held.count > 256 {
            held.removeAll()
            discarding = true
            return tracker.close()
        }
        release(context: context, outsideRead: false)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard !held.isEmpty else { return context.fireUserInboundEventTriggered(event) }
        if event is ChannelShouldQuiesceEvent {
            // Shutting down: the answer in progress ends the connection (HTTP lets a server close a persistent
            // connection; clients send the requests it did not answer again). Held ones are not started.
            held.removeAll()
            return context.fireUserInboundEventTriggered(event)
        }
        held.append(.event(event))
    }

    /// Sends up what may go: the rest of the request going up, then the next request once the previous answer has
    /// ended and the socket takes more; then a read that was held, once nothing is. `outsideRead`: not within a read
    /// of the socket, whose read-complete event would tell the handlers above that parts arrived (Hummingbird's
    /// request stream hands them over on it), so one is sent here.
    private func release(context: ChannelHandlerContext, outsideRead: Bool) {
        var released = false
        while let next = held.first {
            guard case .part(let part) = next else {
                // Everything before it has gone up (Hummingbird's stream delivers those parts before it ends).
                held.removeFirst()
                if case .event(let event) = next { context.fireUserInboundEventTriggered(event) }
                continue
            }
            if case .head(let head) = unwrapInboundIn(part) {
                guard !answering, context.channel.isWritable else { break }
                answering = true
                forwarding = true
                // The request's clocks start when it goes up, not when it was read: held behind a slow answer (a
                // blocking playlist reload), its body, which may wait for the 100 below, is not late.
                tracker.timeouts.headRead(at: .now())
                // The client waits for this before it sends the body (curl does for bodies over 1 KB, a second at
                // most; others until their own timeout). Sent only now, when no other answer is on its way: a request
                // held behind another gets it once its turn comes. Refusing the body later (401, 413) is allowed.
                if head.headerFields[.expect]?.lowercased() == "100-continue" {
                    context.writeAndFlush(wrapOutboundOut(.head(HTTPResponse(status: .continue))), promise: nil)
                }
            } else if !forwarding {
                break
            }
            held.removeFirst()
            if case .end = unwrapInboundIn(part) {
                forwarding = false
                tracker.timeouts.requestEnded()
            }
            context.fireChannelRead(part)
            released = true
        }
        if released { tracker.changed() }
        if released, outsideRead { context.fireChannelReadComplete() }
        if held.isEmpty, readPending {
            readPending = false
            context.read()
        }
    }

    /// Held only while requests are: the raw path below reads on (and closes a client that pipelines too far ahead).
    func read(context: ChannelHandlerContext) {
        // Nor once the connection is to end after the answer in progress (which may be a long event stream): what
        // the client sends meanwhile is not read at all.
        guard held.isEmpty, afterAnswer == nil else {
            readPending = true
            return
        }
        context.read()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { release(context: context, outsideRead: true) }
        context.fireChannelWritabilityChanged()
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let ended: Bool
        if case .end = unwrapOutboundIn(data) {
            tracker.timeouts.responseEnded(at: .now())
            tracker.changed()
            ended = true
        } else {
            ended = false
        }
        context.write(data, promise: promise)
        if ended, let refusal = afterAnswer {
            // The answer in progress is out; now what came after it is refused (or the connection just ends).
            context.flush()
            if let refusal { tracker.answerAndClose(refusal.status, refusal.message) } else { tracker.close() }
            return
        }
        if ended {
            answering = false
            // The next request goes up after this write has returned, not inside it.
            context.eventLoop.assumeIsolatedUnsafeUnchecked().execute { [self] in release(context: context, outsideRead: true) }
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // The decoder's refusals: headers too large, or not HTTP at all. Answered here, since nothing above sees them.
        if let parserError = error as? HTTPParserError {
            discarding = true
            // Bytes after a request that ends the connection (`Connection: close`, HTTP/1.0): its answer still goes
            // out, then the connection ends, as that request asked.
            if parserError == .closedConnection { return finishAnswer(then: nil) }
            if parserError == .headerOverflow {
                return refuse(.init(statusCode: 431, reasonPhrase: "Request Header Fields Too Large"), "the request head is larger than \(tracker.limits.maxHeaderBytes) bytes")
            }
            return refuse(.badRequest, "the request is not valid HTTP/1.1")
        }
        context.fireErrorCaught(error)
    }

    private func refuse(_ status: HTTPResponseStatus, _ message: String) {
        Self.oversized()
        discarding = true
        finishAnswer(then: (status, message))
    }

    /// Ends the connection with `refusal` (or without an answer): once the answer in progress has been written, when
    /// its request is all in; else at once (the refusal only if nothing was answered yet). Nothing more is read or
    /// sent up meanwhile.
    private func finishAnswer(then refusal: (status: HTTPResponseStatus, message: String)?) {
        held.removeAll()
        guard answering, !forwarding else {
            if let refusal { tracker.answerAndClose(refusal.status, refusal.message) } else { tracker.close() }
            return
        }
        afterAnswer = .some(refusal)
    }

    private static func oversized() { ConnectionTracker.oversized.increment() }
}

/// What the HTTP version of a request means for its connection, said in the fields the handlers above read (the
/// conversion to HTTP types drops the version). Hummingbird ends a connection after the answer to a request whose
/// `Connection` is exactly `close`, and keeps every other one open:
/// - an HTTP/1.0 request without `Connection: keep-alive` ends its connection (RFC 9112 §9.3): a 1.0 client, a
///   health check, may read the answer to the end of the connection, and would wait out the idle timeout; with
///   `keep-alive`, the answer says `Connection: keep-alive` (a 1.0 client keeps the connection only when told so);
/// - `close` among the tokens of any request's `Connection`, in any case, is made the exact `close`;
/// - a `CONNECT` (never a route here) ends its connection: NIO's encoder sends an answer to `CONNECT` without its
///   length, as for a tunnel, so only the close can end it for the client;
/// - `Expect` is dropped from HTTP/1.0 requests, which must not get `100 Continue` (`HTTPSideHandler` sends it).
final class RequestVersionHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    /// For each request read and not answered yet, oldest first (pipelining): whether its answer must say
    /// `Connection: keep-alive`.
    private var keepAliveAnswers = CircularBuffer<Bool>()

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .head(var head) = unwrapInboundIn(data) else { return context.fireChannelRead(data) }
        let old = head.version.major < 1 || (head.version.major == 1 && head.version.minor < 1)
        let tokens = head.headers[canonicalForm: "connection"].map { $0.lowercased() }
        let closes = !head.isKeepAlive || tokens.contains("close") || head.method == .CONNECT
        if closes { head.headers.replaceOrAdd(name: "connection", value: "close") }
        if old { head.headers.remove(name: "expect") }
        keepAliveAnswers.append(old && !closes)
        context.fireChannelRead(wrapInboundOut(.head(head)))
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .head(var response) = unwrapOutboundIn(data), !(100..<200).contains(response.status.code) else {
            return context.write(data, promise: promise)
        }
        guard keepAliveAnswers.popFirst() == true else { return context.write(data, promise: promise) }
        response.headers.replaceOrAdd(name: "connection", value: "keep-alive")
        context.write(wrapOutboundOut(.head(response)), promise: promise)
    }
}

/// The whole pipeline of a connection refused at the cap: a 503 with Retry-After, then close.
final class RefuseConnectionHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    private var answered = false

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { answer(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        answer(context)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}

    private func answer(_ context: ChannelHandlerContext) {
        guard !answered else { return }
        answered = true
        let body = #"{"error":"the server is at its connection limit; retry shortly"}"# + "\n"
        let text = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\n"
            + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body
        context.writeAndFlush(NIOAny(IOData.byteBuffer(ByteBuffer(string: text)))).whenComplete { _ in
            context.close(promise: nil)
        }
    }
}
