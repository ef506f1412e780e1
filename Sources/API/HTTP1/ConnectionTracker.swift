import HTTPTypes
import HummingbirdCore
import Logging
import Metrics
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import Projector

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
                let message =
                    timeouts.isReadingBody
                    ? "the request body did not arrive within \(limits.bodyTimeoutSeconds) s of its head"
                    : "the request head did not arrive within \(limits.headerTimeoutSeconds) s"
                answerAndClose(.init(statusCode: 408, reasonPhrase: "Request Timeout"), message)
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
    /// response is in progress on the connection (or the one request in progress is still arriving, unanswered);
    /// else it just closes.
    func answerAndClose(_ status: HTTPResponseStatus, _ message: String, retryAfter: Int? = nil) {
        guard !closing, let context = rawContext else { return }
        guard timeouts.mayAnswerRaw else { return close() }
        closing = true
        let body = #"{"error":"\#(message)"}"# + "\n"
        let text = "HTTP/1.1 \(status.code) \(status.reasonPhrase)\r\nContent-Type: application/json\r\n"
            + (retryAfter.map { "Retry-After: \($0)\r\n" } ?? "")
            + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body
        context.writeAndFlush(NIOAny(IOData.byteBuffer(ByteBuffer(string: text)))).whenComplete { _ in
            context.close(promise: nil)
        }
    }
}
