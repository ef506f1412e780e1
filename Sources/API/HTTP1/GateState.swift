import NIOCore

/// What the connection cap knows of every open connection, and what it decides, as a value: ``ConnectionGate`` keeps
/// it under a lock and carries out the actions it returns (closing, answering); the tests drive it alone.
///
/// Capacity is reserved by class, so that no class of client starves another of connections:
/// - at the cap, a new connection takes the place of a connection with nothing in progress: first one idle between
///   requests for a second or more, then one that has sent no whole request for a second or more (an idle flood, a
///   slowloris), then whichever has had nothing in progress the longest; with none, of the oldest held blocking
///   reload (answered 503, then closed). So neither a keep-alive player polling every few seconds nor a player's new
///   connection whose request is on its way is closed for a flood of connections that send nothing, or for the churn
///   of clients that come back between requests;
/// - held blocking reloads (LL-HLS) and request bodies still arriving are each capped in total and per client
///   address, below the connection cap. Past a per-address cap the new request is refused (503); past a total cap
///   a new blocking reload takes the place of the oldest held one (answered 503), a new body is refused (503).
/// So a flood of held requests or of slow bodies, from any number of connections, leaves room for the players' GETs.
struct GateState {
    struct Limits: Equatable {
        var connections: Int
        var heldReloads: Int
        var heldReloadsPerAddress: Int
        var arrivingBodies: Int
        var arrivingBodiesPerAddress: Int
    }

    enum Admission: Equatable {
        case admitted(UInt64)
        /// Admitted in place of this idle connection, which the caller closes.
        case admittedClosing(UInt64, victim: UInt64)
        /// Admitted in place of this connection's held blocking reload, which the caller answers (503) and closes.
        case admittedEvictingHeld(UInt64, victim: UInt64)
        case refused
    }

    enum HoldDecision: Equatable {
        case hold
        /// Hold it, and answer this other connection's held reload (503) to make room.
        case holdEvicting(victim: UInt64)
        /// The address holds its share already: answer this one 503 at once.
        case refuse
    }

    enum Class: Equatable {
        /// Admitted, its first request not in yet: may be closed to make room once no `idle` one is left.
        case fresh
        /// No request in progress, between two: may be closed to make room.
        case idle
        /// A request is being answered.
        case busy
        /// A blocking reload is held (waiting for its part).
        case holding
        /// A request's body is still arriving.
        case receiving
    }

    private struct Entry {
        /// The connection's own address key (its peer's), fixed when it is admitted.
        var address: Substring
        /// The key its held reload or arriving body is counted under: its own, or the client a trusted proxy named
        /// for that request; set when the place is taken, and the one its count is given back under.
        var countedUnder: Substring = ""
        var kind: Class = .fresh
        /// Whether a request is in progress (what ``setBusy(_:_:)`` last said), whatever the class: a held reload or a
        /// body that ends goes back to busy or idle by it.
        var busy = false
        /// The generation of its place in `idleOrder`, `freshOrder` or `heldOrder`, for the lazy removal of stale places.
        var generation: UInt64 = 0
        /// When it came to have nothing in progress (``now`` then).
        var since: UInt64 = 0
    }

    let limits: Limits
    private var nextID: UInt64 = 1
    private var entries: [UInt64: Entry] = [:]
    /// Connections in the order they became idle, and held reloads in the order they began; places that are stale
    /// (the connection changed class since, or closed) are skipped lazily.
    /// Connections idle between requests, and fresh ones, each in the order they came to have nothing in progress.
    private var idleOrder = CircularBuffer<(id: UInt64, generation: UInt64)>()
    private var freshOrder = CircularBuffer<(id: UInt64, generation: UInt64)>()
    /// The owner's monotonic clock, in nanoseconds, set before each change (``ConnectionGate``: the uptime).
    var now: UInt64 = 0
    /// How long a connection with nothing in progress is "recent": closed to make room only after the others.
    static let recentNanoseconds: UInt64 = 1_000_000_000
    private var heldOrder = CircularBuffer<(id: UInt64, generation: UInt64)>()
    private var generation: UInt64 = 0
    private var held = 0
    private var receiving = 0
    private var heldBy: [Substring: Int] = [:]
    private var receivingBy: [Substring: Int] = [:]
    /// The most connections open at once since ``resetPeak()``.
    private(set) var peak = 0

    init(limits: Limits) {
        self.limits = limits
    }

    var count: Int { entries.count }
    var heldCount: Int { held }
    var receivingCount: Int { receiving }

    func kind(of id: UInt64) -> Class? { entries[id]?.kind }

    /// Decides on a new connection from `address` (see ``addressKey(_:)``), which starts idle: it has not sent a
    /// request head yet.
    mutating func admit(address: Substring) -> Admission {
        var admission = Admission.admitted(0)
        if entries.count >= limits.connections {
            if let oldest = quietest() {
                remove(oldest)
                admission = .admittedClosing(0, victim: oldest)
            } else if let oldest = oldestHeld() {
                remove(oldest)
                admission = .admittedEvictingHeld(0, victim: oldest)
            } else {
                return .refused
            }
        }
        let id = nextID
        nextID += 1
        entries[id] = Entry(address: address)
        peak = max(peak, entries.count)
        mark(id, .fresh)
        switch admission {
        case .admittedClosing(_, let victim): return .admittedClosing(id, victim: victim)
        case .admittedEvictingHeld(_, let victim): return .admittedEvictingHeld(id, victim: victim)
        default: return .admitted(id)
        }
    }

    /// A request is in progress on the connection, or none is any more. A held or receiving connection stays in its
    /// class until it leaves it (``endHold(_:)``, ``endReceiving(_:)``).
    mutating func setBusy(_ id: UInt64, _ busy: Bool) {
        guard let entry = entries[id] else { return }
        entries[id]!.busy = busy
        switch (entry.kind, busy) {
        case (.idle, true), (.fresh, true): mark(id, .busy)
        case (.busy, false): mark(id, .idle)
        default: break
        }
    }

    /// A blocking reload is to be held on the connection.
    /// - Parameter client: the request's client address key when a trusted proxy names it (``TrustedProxies``);
    ///   nil: the connection's own.
    mutating func beginHold(_ id: UInt64, client: Substring? = nil) -> HoldDecision {
        guard let entry = entries[id] else { return .refuse }
        if entry.kind == .holding { return .hold }
        let key = client ?? entry.address
        guard heldBy[key, default: 0] < limits.heldReloadsPerAddress else { return .refuse }
        var decision = HoldDecision.hold
        if held >= limits.heldReloads {
            guard let oldest = oldestHeld() else { return .refuse }
            mark(oldest, .busy)  // answered now: a request in progress until its answer ends
            decision = .holdEvicting(victim: oldest)
        }
        mark(id, .holding, under: key)
        return decision
    }

    /// The held reload was answered (or the connection is closing): the connection is busy with its answer.
    mutating func endHold(_ id: UInt64) {
        guard let entry = entries[id], entry.kind == .holding else { return }
        mark(id, entry.busy ? .busy : .idle)
    }

    /// A request whose body is still to arrive; false: the address (or the instance) has its share arriving already.
    mutating func beginReceiving(_ id: UInt64, client: Substring? = nil) -> Bool {
        guard let entry = entries[id] else { return false }
        if entry.kind == .receiving { return true }
        let key = client ?? entry.address
        guard receiving < limits.arrivingBodies, receivingBy[key, default: 0] < limits.arrivingBodiesPerAddress else {
            return false
        }
        mark(id, .receiving, under: key)
        return true
    }

    /// The body has arrived (or the connection is closing).
    mutating func endReceiving(_ id: UInt64) {
        guard let entry = entries[id], entry.kind == .receiving else { return }
        // Answered before its body had come (an early 401 or 404): idle, between requests, from now.
        mark(id, entry.busy ? .busy : .idle)
    }

    mutating func remove(_ id: UInt64) {
        guard entries[id] != nil else { return }
        leave(id)
        entries[id] = nil
    }

    mutating func resetPeak() { peak = entries.count }

    /// Moves a connection into `kind`, out of the class it was in.
    /// - Parameter key: for `.holding` and `.receiving`, the key the place is counted under (the connection's own
    ///   address unless given).
    private mutating func mark(_ id: UInt64, _ kind: Class, under key: Substring? = nil) {
        leave(id)
        generation += 1
        entries[id]!.kind = kind
        entries[id]!.generation = generation
        entries[id]!.since = now
        let address = key ?? entries[id]!.address
        entries[id]!.countedUnder = address
        switch kind {
        case .idle:
            idleOrder.append((id, generation))
            // Keep the queues proportional to the connections: every request adds a place.
            if idleOrder.count > 2 * entries.count + 1024 { idleOrder = compacted(idleOrder, .idle) }
        case .fresh:
            freshOrder.append((id, generation))
            if freshOrder.count > 2 * entries.count + 1024 { freshOrder = compacted(freshOrder, .fresh) }
        case .holding:
            held += 1
            heldBy[address, default: 0] += 1
            heldOrder.append((id, generation))
            if heldOrder.count > 2 * entries.count + 1024 { heldOrder = compacted(heldOrder, .holding) }
        case .receiving:
            receiving += 1
            receivingBy[address, default: 0] += 1
        case .busy:
            break
        }
    }

    /// Takes a connection out of its class's counts (its place in an order goes stale).
    private mutating func leave(_ id: UInt64) {
        guard let entry = entries[id] else { return }
        switch entry.kind {
        case .holding:
            held -= 1
            Self.decrement(&heldBy, entry.countedUnder)
        case .receiving:
            receiving -= 1
            Self.decrement(&receivingBy, entry.countedUnder)
        case .idle, .fresh, .busy:
            break
        }
        entries[id]!.kind = .busy
    }

    private static func decrement(_ counts: inout [Substring: Int], _ key: Substring) {
        let left = counts[key, default: 1] - 1
        counts[key] = left > 0 ? left : nil
    }

    /// The connection longest held (its place taken off the order).
    private mutating func oldestHeld() -> UInt64? {
        Self.take(&heldOrder, .holding, entries)
    }

    /// The connection with nothing in progress to close first (see the type's rules), its place taken off its order.
    private mutating func quietest() -> UInt64? {
        let idle = Self.head(&idleOrder, .idle, entries)
        let fresh = Self.head(&freshOrder, .fresh, entries)
        func quiet(_ id: UInt64?) -> Bool { id.map { now &- entries[$0]!.since >= Self.recentNanoseconds } ?? false }
        let chosen: UInt64?
        if quiet(idle) {
            chosen = idle
        } else if quiet(fresh) {
            chosen = fresh
        } else if let idle, let fresh {
            chosen = entries[idle]!.since <= entries[fresh]!.since ? idle : fresh
        } else {
            chosen = idle ?? fresh
        }
        if chosen != nil, chosen == idle { idleOrder.removeFirst() }
        if chosen != nil, chosen == fresh { freshOrder.removeFirst() }
        return chosen
    }

    /// The first live place of `order` (stale ones dropped), left in it.
    private static func head(
        _ order: inout CircularBuffer<(id: UInt64, generation: UInt64)>, _ kind: Class, _ entries: [UInt64: Entry]
    ) -> UInt64? {
        while let first = order.first {
            if let entry = entries[first.id], entry.generation == first.generation, entry.kind == kind {
                return first.id
            }
            order.removeFirst()
        }
        return nil
    }

    private static func take(
        _ order: inout CircularBuffer<(id: UInt64, generation: UInt64)>, _ kind: Class, _ entries: [UInt64: Entry]
    ) -> UInt64? {
        while let first = order.popFirst() {
            if let entry = entries[first.id], entry.kind == kind, entry.generation == first.generation {
                return first.id
            }
        }
        return nil
    }

    private func compacted(_ order: CircularBuffer<(id: UInt64, generation: UInt64)>, _ kind: Class)
        -> CircularBuffer<(id: UInt64, generation: UInt64)>
    {
        CircularBuffer(
            order.filter { place in
                guard let entry = entries[place.id], entry.generation == place.generation else { return false }
                return entry.kind == kind
            })
    }

    /// The key per-address limits count by: an IPv4 address, or an IPv6 address's /64 (one host's usual share; an
    /// IPv4 client of a dual-stack listener, `::ffff:a.b.c.d`, counts as its IPv4 address); a Unix socket or an
    /// unknown peer is one key.
    static func addressKey(_ address: SocketAddress?) -> Substring {
        TrustedProxies.bytes(of: address).map(TrustedProxies.key) ?? "local"
    }
}
