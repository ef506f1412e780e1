import HTTPTypes
import HummingbirdCore
import Logging
import Metrics
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import Projector

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
