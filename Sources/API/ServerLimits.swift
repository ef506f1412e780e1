/// What one `cueline serve` instance lets clients hold: connections, how long a request may take to arrive,
/// request sizes, and live event streams. Every value is configurable on `cueline serve`; the defaults are in the
/// README ("Limits").
public struct ServerLimits: Sendable, Equatable {
    /// Open connections at most. A new connection beyond it closes the connection that has been idle longest (no
    /// request in progress); when every connection is busy, the new one is answered 503 and closed.
    public var maxConnections = 4096
    /// The request head must arrive within this many seconds of its first byte (of the accept, for a new
    /// connection) (slowloris).
    public var headerTimeoutSeconds = 10
    /// A request's body must have arrived within this many seconds of its head: 408 beyond.
    public var bodyTimeoutSeconds = 5
    /// LL-HLS blocking reloads held at once (nil: three quarters of `maxConnections`). Beyond, a new one takes the
    /// place of the oldest, which is answered 503.
    public var maxHeldReloads: Int?
    /// Blocking reloads held at once for one client address (an IPv6 /64; nil: a quarter of `maxConnections`).
    /// Beyond, the new one is answered 503 at once.
    public var maxHeldReloadsPerAddress: Int?
    /// Requests whose body is still arriving, at once (nil: an eighth of `maxConnections`, at least 4): 503 beyond.
    public var maxArrivingBodies: Int?
    /// Requests whose body is still arriving, at once, from one client address (nil: a quarter of
    /// `maxArrivingBodies`, at least 2): 503 beyond.
    public var maxArrivingBodiesPerAddress: Int?
    /// A connection with no request in progress is closed after this many seconds; so is one whose client has not
    /// read what was written to it for as long.
    public var idleTimeoutSeconds = 60
    /// The request line and headers together, at most (431 beyond).
    public var maxHeaderBytes = 16 * 1024
    /// A request body, at most (413 beyond).
    public var maxBodyBytes = 64 * 1024
    /// Each connection's kernel send buffer (`SO_SNDBUF`; Linux reserves twice this). A client that sends requests and
    /// never reads the answers fills it, then the server's own buffer, and its connection is no longer written to (then
    /// closed: `idleTimeoutSeconds`, or its unread requests past 4 times `maxHeaderBytes`). Left to the kernel's
    /// auto-tuning it grows to 4 MiB per connection: a thousand such clients made the host queue 1.5 GB of answers,
    /// and every other client waited seconds.
    public var sendBufferBytes = 64 * 1024
    /// Live event streams (`GET …/events` as Server-Sent Events) per token at once (429 beyond).
    public var maxStreamsPerToken = 16
    /// Live event streams on this instance at once (503 beyond).
    public var maxStreams = 256
    /// Proxies (a CDN's edge, a load balancer) whose `X-Forwarded-For` names the client a request counts against in
    /// the per-address shares and the audit-read line (none: every request counts against its connection's address).
    public var trustedProxies = TrustedProxies.none

    public init() {}

    /// The classes' shares of the connections, each below the cap.
    var gateLimits: GateState.Limits {
        let connections = max(1, maxConnections)
        let below = max(1, connections - 1)
        let bodies = min(below, max(1, maxArrivingBodies ?? max(4, connections / 8)))
        let held = min(below, max(1, maxHeldReloads ?? connections * 3 / 4))
        return GateState.Limits(
            connections: connections,
            heldReloads: held,
            heldReloadsPerAddress: min(held, max(1, maxHeldReloadsPerAddress ?? max(1, connections / 4))),
            arrivingBodies: bodies,
            arrivingBodiesPerAddress: min(bodies, max(1, maxArrivingBodiesPerAddress ?? max(2, bodies / 4))))
    }

    /// The classes' shares, for the start-up log line.
    public var sharesDescription: String {
        let shares = gateLimits
        return "held reloads \(shares.heldReloads) (\(shares.heldReloadsPerAddress) per address), arriving bodies "
            + "\(shares.arrivingBodies) (\(shares.arrivingBodiesPerAddress) per address)"
    }
}
