import NIOCore

/// The timeouts of one HTTP/1.1 connection, as a value-type state machine fed with what the pipeline sees; the
/// handlers act on the deadline it gives. Three rules:
/// - the request head must arrive within `header` of its first byte (of the accept, for a new connection), and
///   its body within `body` of the head (slowloris); either late is answered 408 when nothing else has been;
/// - with no request in progress, the connection is closed after `idle`;
/// - a client that reads nothing of what is written to it for `idle` is dropped (a stalled event stream).
struct ConnectionTimeouts {
    enum Phase: Equatable {
        /// Waiting for the rest of a request head whose first byte came at `since`.
        case awaitingHead(since: NIODeadline)
        /// The head came at `since`; its body is still arriving.
        case readingBody(since: NIODeadline)
        /// The request is in; the response is being produced and written.
        case responding
        /// Nothing in progress since `since`.
        case idle(since: NIODeadline)
    }

    let header: TimeAmount
    let body: TimeAmount
    let idle: TimeAmount
    private(set) var phase: Phase
    /// Requests whose head was read and whose response has not been written to its end (HTTP/1.1 pipelining).
    private(set) var requestsInProgress = 0
    /// When bytes of a further request started to arrive while a response was being written.
    private var pendingBytesSince: NIODeadline?
    private var unwritableSince: NIODeadline?
    /// Whether any byte of the awaited request head has come (a connection that sent nothing is closed silently).
    private var headStarted = false
    /// Whether the answer to the request in progress has begun (its head written).
    private(set) var responseStarted = false

    init(header: TimeAmount, body: TimeAmount, idle: TimeAmount, acceptedAt now: NIODeadline) {
        self.header = header
        self.body = body
        self.idle = idle
        phase = .awaitingHead(since: now)
    }

    /// Whether a request is in progress: such a connection is never closed to make room for another.
    var isBusy: Bool { requestsInProgress > 0 }

    /// When the connection is to be closed, if nothing happens before.
    var deadline: NIODeadline? {
        let own: NIODeadline? =
            switch phase {
            case .awaitingHead(let since): since + header
            case .readingBody(let since): since + body
            case .idle(let since): since + idle
            case .responding: nil
            }
        let stalled = unwritableSince.map { $0 + idle }
        switch (own, stalled) {
        case (let a?, let b?): return min(a, b)
        case (let a, nil): return a
        case (nil, let b): return b
        }
    }

    mutating func bytesRead(at now: NIODeadline) {
        switch phase {
        case .idle: phase = .awaitingHead(since: now)
        case .responding: if pendingBytesSince == nil { pendingBytesSince = now }
        case .awaitingHead, .readingBody: break
        }
        if case .awaitingHead = phase { headStarted = true }
    }

    mutating func headRead(at now: NIODeadline) {
        requestsInProgress += 1
        pendingBytesSince = nil
        headStarted = false
        phase = .readingBody(since: now)
    }

    /// Whether a complete answer may be written under the codec, and the connection closed: nothing is being
    /// answered, or the one request in progress is still arriving and nothing of its answer has been written.
    var mayAnswerRaw: Bool {
        // A request whose body is still arriving may have been answered already (an early 401 or 404): then it gets
        // no second answer.
        if case .readingBody = phase { return requestsInProgress == 1 && !responseStarted }
        return requestsInProgress == 0
    }

    /// Whether the request in progress is still sending its body.
    var isReadingBody: Bool {
        if case .readingBody = phase { return true }
        return false
    }

    mutating func responseBegan() {
        responseStarted = true
    }

    mutating func requestEnded(at now: NIODeadline) {
        guard case .readingBody = phase else { return }
        phase = .responding
        // Answered before its body had all come (an early 401 or 404): the connection is between requests now.
        if requestsInProgress == 0 { settle(at: now) }
    }

    mutating func responseEnded(at now: NIODeadline) {
        requestsInProgress = max(0, requestsInProgress - 1)
        responseStarted = false
        guard requestsInProgress == 0, phase == .responding else { return }
        settle(at: now)
    }

    /// Nothing in progress any more: idle, or awaiting the head whose bytes came meanwhile.
    private mutating func settle(at now: NIODeadline) {
        if let since = pendingBytesSince {
            phase = .awaitingHead(since: since)
            headStarted = true
            pendingBytesSince = nil
        } else {
            phase = .idle(since: now)
        }
    }

    mutating func writabilityChanged(writable: Bool, at now: NIODeadline) {
        unwritableSince = writable ? nil : (unwritableSince ?? now)
    }

    enum TimeoutAction: Equatable {
        /// Answer 408 (nothing else is being written) and close.
        case closeWithRequestTimeout
        case close
        case wait(until: NIODeadline)
        case nothing
    }

    func timeoutFired(at now: NIODeadline) -> TimeoutAction {
        guard let deadline else { return .nothing }
        guard now >= deadline else { return .wait(until: deadline) }
        if case .awaitingHead = phase, headStarted, requestsInProgress == 0, unwritableSince == nil {
            return .closeWithRequestTimeout
        }
        if case .readingBody(let since) = phase, now >= since + body, mayAnswerRaw, unwritableSince == nil {
            return .closeWithRequestTimeout
        }
        return .close
    }
}
