import NIOCore
import NIOHTTP1

/// A complete answer written straight to the socket, under the HTTP codec, that ends its connection: the one form of
/// the refusals the transport makes itself (408, 413, 431, 503 at the cap), where no handler above can answer.
enum RawAnswer {
    /// `HTTP/1.1 <status>` with a JSON `{"error": message}` body, `Connection: close` and, if given, `Retry-After`.
    /// `message` is the server's own text (no quotes or backslashes).
    static func bytes(_ status: HTTPResponseStatus, _ message: String, retryAfter: Int? = nil) -> ByteBuffer {
        let body = #"{"error":"\#(message)"}"# + "\n"
        return ByteBuffer(
            string: "HTTP/1.1 \(status.code) \(status.reasonPhrase)\r\nContent-Type: application/json\r\n"
                + (retryAfter.map { "Retry-After: \($0)\r\n" } ?? "")
                + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body)
    }

    /// Writes `bytes` (nothing: only what was written before) and closes the connection once they are out.
    static func writeThenClose(_ bytes: ByteBuffer = ByteBuffer(), on context: ChannelHandlerContext) {
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.writeAndFlush(NIOAny(IOData.byteBuffer(bytes))).whenComplete { _ in
            bound.value.close(promise: nil)
        }
    }
}
