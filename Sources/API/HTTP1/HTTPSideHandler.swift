import HTTPTypes
import HummingbirdCore
import Logging
import Metrics
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import Projector

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

    /// The request going up holds one of the gate's places for arriving bodies.
    private var receiving = false
    /// The request going up announced a body whose end has not come yet.
    private var bodyToCome = false
    /// The client the last request head named through a trusted proxy (nil: the connection's own address).
    private var client: Substring?

    init(tracker: ConnectionTracker) { self.tracker = tracker }

    /// Whether a request head announces a body.
    static func hasBody(_ head: HTTPRequest) -> Bool {
        if head.headerFields[.transferEncoding] != nil { return true }
        return (head.headerFields[.contentLength].flatMap { Int($0) } ?? 0) > 0
    }

    /// At the end of a read from the socket: a request whose body has not all arrived by now takes one of the places
    /// kept for arriving bodies (per address and in all), so that slow bodies cannot hold every connection; with none
    /// free it is refused 503 at once (a body that came with its head takes no place).
    func channelReadComplete(context: ChannelHandlerContext) {
        if bodyToCome, !receiving, !discarding {
            guard tracker.gate.beginReceiving(tracker.id, client: client) else {
                held.removeAll()
                discarding = true
                bodyToCome = false
                tracker.answerAndClose(
                    .serviceUnavailable,
                    "too many request bodies are arriving at once from this address or in all; retry shortly",
                    retryAfter: 1)
                return
            }
            receiving = true
        }
        context.fireChannelReadComplete()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !discarding else { return }
        switch unwrapInboundIn(data) {
        case .head(let head):
            client =
                tracker.gate.proxies.isEmpty
                ? nil
                : tracker.gate.clientKey(
                    peer: context.channel.remoteAddress,
                    forwardedFor: head.headerFields[values: .xForwardedFor].map { Substring($0) })
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
        // The gate's word for the held reload above goes to it at once, not behind the requests pipelined after it.
        guard !held.isEmpty, !(event is EvictHeldReload) else { return context.fireUserInboundEventTriggered(event) }
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
                // A body still to arrive at the end of this read takes one of the places kept for them (see
                // `channelReadComplete`).
                bodyToCome = Self.hasBody(head)
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
                tracker.timeouts.requestEnded(at: .now())
                bodyToCome = false
                if receiving {
                    receiving = false
                    tracker.gate.endReceiving(tracker.id)
                }
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
        if case .head(let response) = unwrapOutboundIn(data), response.status.code >= 200 {
            tracker.timeouts.responseBegan()
        }
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
            context.eventLoop.assumeIsolatedUnsafeUnchecked().execute { [self] in
                release(context: context, outsideRead: true)
            }
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
                return refuse(
                    .init(statusCode: 431, reasonPhrase: "Request Header Fields Too Large"),
                    "the request head is larger than \(tracker.limits.maxHeaderBytes) bytes")
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

extension HTTPField.Name {
    static let xForwardedFor = HTTPField.Name("X-Forwarded-For")!
}
