import HTTPTypes
import NIOCore
import NIOHTTP1

/// Answers written straight to the socket, under the HTTP codec: the one writer of response heads made by hand. The
/// transport's own refusals (408, 413, 431, 503 at the cap), where no handler above can answer, are complete answers that
/// end their connection; ``PlaylistRawPath`` writes its answers' heads here too.
enum RawAnswer {
    /// `HTTP/1.1 <status>` with a JSON `{"error": message}` body, `Connection: close` and, if given, `Retry-After`.
    /// `message` is the server's own text (no quotes or backslashes).
    static func bytes(_ status: HTTPResponseStatus, _ message: String, retryAfter: Int? = nil) -> ByteBuffer {
        let body = #"{"error":"\#(message)"}"# + "\n"
        var out = ByteBuffer()
        writeHead(code: Int(status.code), reasonPhrase: status.reasonPhrase, into: &out) { field in
            field(.contentType, "application/json")
            if let retryAfter { field(.retryAfter, String(retryAfter)) }
            field(.contentLength, String(body.utf8.count))
            field(.connection, "close")
        }
        out.writeString(body)
        return out
    }

    /// `HTTP/1.1 <code> <reason>`, the fields in the order given, and the blank line: what the HTTP/1.1 encoder writes
    /// for the same head.
    static func writeHead(
        code: Int, reasonPhrase: String, into out: inout ByteBuffer,
        _ fields: ((HTTPField.Name, String) -> Void) -> Void
    ) {
        out.writeStaticString("HTTP/1.1 ")
        out.writeString(String(code))
        out.writeStaticString(" ")
        out.writeString(reasonPhrase)
        out.writeStaticString("\r\n")
        fields { name, value in
            out.writeString(name.rawName)
            out.writeStaticString(": ")
            out.writeString(value)
            out.writeStaticString("\r\n")
        }
        out.writeStaticString("\r\n")
    }

    /// The same for a status of HTTP types and its fields.
    static func writeHead(_ status: HTTPResponse.Status, _ fields: HTTPFields, into out: inout ByteBuffer) {
        writeHead(code: status.code, reasonPhrase: status.reasonPhrase, into: &out) { field in
            for each in fields { field(each.name, each.value) }
        }
    }

    /// Writes `bytes` (nothing: only what was written before) and closes the connection once they are out.
    static func writeThenClose(_ bytes: ByteBuffer = ByteBuffer(), on context: ChannelHandlerContext) {
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.writeAndFlush(NIOAny(IOData.byteBuffer(bytes))).whenComplete { _ in
            bound.value.close(promise: nil)
        }
    }
}
