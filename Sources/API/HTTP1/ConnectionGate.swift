import Metrics
import Projector
import NIOCore
import ServiceLifecycle
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Counts the open connections of the server and decides, for each new one, whether it is served, and for each held
/// blocking reload and each request body still arriving, whether it may take its place: the rules are
/// ``GateState``'s, carried out here (closing a connection to make room, answering a held reload 503).
///
/// As a service, it gives memory back to the operating system after a flood of connections has gone: the C
/// allocator keeps freed pages otherwise, and the process would stay at its peak for good.
package final class ConnectionGate: Service, Sendable {
    package enum Admission: Equatable {
        case admitted(UInt64)
        /// Admitted in place of another connection, which is closed (answered first if it held a reload).
        case admittedEvicting(UInt64, victim: UInt64)
        case refused
    }

    /// What the gate can do to a connection on its event loop: close it, or answer its held reload 503 and close it.
    package struct Peer: Sendable {
        let channel: (any Channel)?
        /// Answers the connection's held reload 503; `close`: and ends the connection whether or not one was held
        /// (it has lost its place in the gate already).
        var evictHeld: (@Sendable (_ close: Bool) -> Void)?
    }

    private struct State {
        var rules: GateState
        var peers: [UInt64: Peer] = [:]
    }

    package let maximum: Int
    /// Whose `X-Forwarded-For` names the client of a request, for the per-address shares.
    package let proxies: TrustedProxies
    private let state: Mutex<State>
    private let open = Gauge(label: "cueline_http_connections")
    private let refused = Counter(label: "cueline_http_connections_refused_total")
    private let evicted = Counter(label: "cueline_http_connections_evicted_total")
    private let heldGauge = Gauge(label: "cueline_http_held_reloads")
    private let heldRefused = Counter(label: "cueline_http_held_reloads_refused_total")
    private let heldEvicted = Counter(label: "cueline_http_held_reloads_evicted_total")
    private let bodiesRefused = Counter(label: "cueline_http_arriving_bodies_refused_total")

    package convenience init(maximum: Int) {
        var limits = ServerLimits()
        limits.maxConnections = maximum
        self.init(limits: limits)
    }

    package init(limits: ServerLimits) {
        maximum = max(1, limits.maxConnections)
        proxies = limits.trustedProxies
        state = Mutex(State(rules: GateState(limits: limits.gateLimits)))
    }

    package var count: Int { state.withLock { $0.rules.count } }
    /// The gate's clock (``GateState/now``).
    private static var uptime: UInt64 { NIODeadline.now().uptimeNanoseconds }
    var heldCount: Int { state.withLock { $0.rules.heldCount } }
    var receivingCount: Int { state.withLock { $0.rules.receivingCount } }

    /// Decides on a new connection, which starts idle (it has not sent a request head yet).
    package func admit(_ channel: (any Channel)?) -> Admission {
        let address = GateState.addressKey(channel?.remoteAddress)
        let (admission, victim, count) = state.withLock { state -> (GateState.Admission, Peer?, Int) in
            state.rules.now = Self.uptime
            let admission = state.rules.admit(address: address)
            var victim: Peer?
            switch admission {
            case .admitted(let id): state.peers[id] = Peer(channel: channel)
            case .admittedClosing(let id, let old), .admittedEvictingHeld(let id, let old):
                state.peers[id] = Peer(channel: channel)
                victim = state.peers.removeValue(forKey: old)
            case .refused: break
            }
            return (admission, victim, state.rules.count)
        }
        open.record(count)
        switch admission {
        case .refused:
            refused.increment()
            return .refused
        case .admitted(let id):
            return .admitted(id)
        case .admittedClosing(let id, let old):
            evicted.increment()
            victim?.channel?.close(promise: nil)
            return .admittedEvicting(id, victim: old)
        case .admittedEvictingHeld(let id, let old):
            evicted.increment()
            heldEvicted.increment()
            if let evict = victim?.evictHeld { evict(true) } else { victim?.channel?.close(promise: nil) }
            return .admittedEvicting(id, victim: old)
        }
    }

    /// How the connection's held reload is answered and the connection closed when the gate needs its place (run
    /// from any thread: it hops to the connection's event loop).
    package func setEviction(_ id: UInt64, _ evict: @escaping @Sendable (_ close: Bool) -> Void) {
        state.withLock { $0.peers[id]?.evictHeld = evict }
    }

    /// A request is in progress on the connection (it cannot be evicted), or none is any more.
    package func setBusy(_ id: UInt64, _ busy: Bool) {
        state.withLock { state in
            state.rules.now = Self.uptime
            state.rules.setBusy(id, busy)
        }
    }

    /// May the connection hold a blocking reload? False: answer it 503 at once (its address holds its share).
    /// - Parameter client: the request's client when a trusted proxy names it (``clientKey(peer:forwardedFor:)``).
    package func beginHold(_ id: UInt64, client: Substring? = nil) -> Bool {
        let (decision, victim, held) = state.withLock { state -> (GateState.HoldDecision, Peer?, Int) in
            state.rules.now = Self.uptime
            let decision = state.rules.beginHold(id, client: client)
            var victim: Peer?
            if case .holdEvicting(let old) = decision { victim = state.peers[old] }
            return (decision, victim, state.rules.heldCount)
        }
        heldGauge.record(held)
        switch decision {
        case .hold: return true
        case .holdEvicting:
            heldEvicted.increment()
            // Its place goes to the new one; if it was answered meanwhile, the connection goes on.
            victim?.evictHeld?(false)
            return true
        case .refuse:
            heldRefused.increment()
            return false
        }
    }

    package func endHold(_ id: UInt64) {
        let held = state.withLock { state in
            state.rules.now = Self.uptime
            state.rules.endHold(id)
            return state.rules.heldCount
        }
        heldGauge.record(held)
    }

    /// May the connection's request body arrive? False: answer it 503 and close (its address, or the instance, has
    /// its share of bodies arriving).
    package func beginReceiving(_ id: UInt64, client: Substring? = nil) -> Bool {
        let admitted = state.withLock { $0.rules.beginReceiving(id, client: client) }
        if !admitted { bodiesRefused.increment() }
        return admitted
    }

    /// The client a request counts against: nil (the connection's own address) unless the connection comes from a
    /// trusted proxy whose `X-Forwarded-For` names another.
    package func clientKey(peer: SocketAddress?, forwardedFor: [Substring]) -> Substring? {
        guard !proxies.isEmpty, !forwardedFor.isEmpty else { return nil }
        return proxies.clientKey(peer: peer, forwardedFor: forwardedFor)
    }

    package func endReceiving(_ id: UInt64) {
        state.withLock { state in
            state.rules.now = Self.uptime
            state.rules.endReceiving(id)
        }
    }

    /// Every 2 s: once the connections open have fallen to a quarter of a peak of at least 512, the allocator's
    /// free memory is returned (`malloc_trim`, glibc only).
    package func run() async throws {
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            try? await Task.sleep(for: .seconds(2))
            let trim = state.withLock { state -> Bool in
                guard state.rules.peak >= 512, state.rules.count <= state.rules.peak / 4 else { return false }
                state.rules.resetPeak()
                return true
            }
            if trim { MemoryTrim.giveBack() }
        }
    }

    package func remove(_ id: UInt64) {
        let (count, held) = state.withLock { state in
            state.rules.remove(id)
            state.peers[id] = nil
            return (state.rules.count, state.rules.heldCount)
        }
        open.record(count)
        heldGauge.record(held)
    }
}
