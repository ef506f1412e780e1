import HTTPTypes
import HummingbirdCore
import Logging
import Metrics
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import Projector

/// What the two handlers of one connection share. Used only on the connection's event loop (both handlers and
/// the loop's ``ConnectionSweep`` run there); `@unchecked Sendable` because Hummingbird builds the HTTP-side handler
/// in a `@Sendable` closure.
final class ConnectionTracker: @unchecked Sendable {
    let id: UInt64
    let gate: ConnectionGate
    let limits: ServerLimits
    var timeouts: ConnectionTimeouts
    /// The byte-side handler's context: raw answers (408, 413, 431) are written there, below the HTTP codec.
    var rawContext: ChannelHandlerContext?
    /// The loop's sweep this connection's deadlines are checked by, once registered.
    private var sweep: ConnectionSweep?
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

    /// After every change: tells the gate whether the connection may be evicted. Its deadlines are checked by its
    /// loop's sweep (four times a second), not by a timer of its own: NIO cancels a scheduled task by searching its
    /// queue, and cancelling one per request took a tenth of the server's time with 4,000 connections open.
    func changed() {
        let busy = timeouts.isBusy
        if busy != wasBusy {
            wasBusy = busy
            gate.setBusy(id, busy)
        }
        if sweep == nil, let context = rawContext, !closing {
            let loopSweep = ConnectionSweep.on(context.eventLoop)
            loopSweep.add(self)
            sweep = loopSweep
        }
    }

    /// The sweep's look at the connection: what its deadlines say at `now`.
    func check(at now: NIODeadline) {
        guard let deadline = timeouts.deadline, now >= deadline else { return }
        switch timeouts.timeoutFired(at: now) {
        case .nothing, .wait: break
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

    /// The connection has ended: the sweep forgets it.
    func cancelTimer() {
        sweep?.remove(self)
        sweep = nil
    }

    /// Ends the connection once what was written before is out (an answer in an unwritable socket is not dropped).
    func closeAfterWrites() {
        guard !closing, let context = rawContext else { return }
        closing = true
        RawAnswer.writeThenClose(on: context)
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
        RawAnswer.writeThenClose(RawAnswer.bytes(status, message, retryAfter: retryAfter), on: context)
    }
}
