import Metrics
import NIOCore
import ServiceLifecycle
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Counts the open connections of the server and decides, for each new one, whether it is served: under the cap
/// it is; at the cap, the connection idle the longest (no request in progress: a keep-alive connection between
/// requests, or one still sending its request head, as a slowloris does) is closed to make room; when every
/// connection is busy, the new one is refused. So idle floods cost new clients nothing, and the cap, not the
/// process's file descriptor limit, decides.
///
/// As a service, it gives memory back to the operating system after a flood of connections has gone: the C
/// allocator keeps freed pages otherwise, and the process would stay at its peak for good.
package final class ConnectionGate: Service, Sendable {
    package enum Admission: Equatable {
        case admitted(UInt64)
        /// Admitted in place of this idle connection, which the caller closes.
        case admittedEvicting(UInt64, victim: UInt64)
        case refused
    }

    private struct Entry {
        var channel: (any Channel)?
        var idleGeneration: UInt64?
    }

    private struct State {
        var nextID: UInt64 = 1
        var entries: [UInt64: Entry] = [:]
        /// Connections in the order they became idle; stale pairs (busy again, or closed) are skipped lazily.
        var idleOrder = CircularBuffer<(id: UInt64, generation: UInt64)>()
        var generation: UInt64 = 0
        /// The most connections open at once since memory was last given back.
        var peak = 0

        mutating func markIdle(_ id: UInt64) {
            guard entries[id] != nil else { return }
            generation += 1
            entries[id]!.idleGeneration = generation
            idleOrder.append((id, generation))
            // Keep the queue proportional to the connections: every request adds a pair.
            if idleOrder.count > 2 * entries.count + 1024 {
                idleOrder = CircularBuffer(idleOrder.filter { entries[$0.id]?.idleGeneration == $0.generation })
            }
        }

        mutating func oldestIdle() -> UInt64? {
            while let first = idleOrder.first {
                idleOrder.removeFirst()
                if let entry = entries[first.id], entry.idleGeneration == first.generation { return first.id }
            }
            return nil
        }
    }

    package let maximum: Int
    private let state = Mutex(State())
    private let open = Gauge(label: "cueline_http_connections")
    private let refused = Counter(label: "cueline_http_connections_refused_total")
    private let evicted = Counter(label: "cueline_http_connections_evicted_total")

    package init(maximum: Int) {
        self.maximum = max(1, maximum)
    }

    package var count: Int { state.withLock { $0.entries.count } }

    /// Decides on a new connection, which starts idle (it has not sent a request head yet).
    package func admit(_ channel: (any Channel)?) -> Admission {
        let (admission, victim, count) = state.withLock { state -> (Admission, (any Channel)?, Int) in
            var victim: (id: UInt64, channel: (any Channel)?)?
            if state.entries.count >= maximum {
                guard let oldest = state.oldestIdle() else { return (.refused, nil, state.entries.count) }
                victim = (oldest, state.entries.removeValue(forKey: oldest)?.channel)
            }
            let id = state.nextID
            state.nextID += 1
            state.entries[id] = Entry(channel: channel)
            state.peak = max(state.peak, state.entries.count)
            state.markIdle(id)
            let admission: Admission = victim.map { .admittedEvicting(id, victim: $0.id) } ?? .admitted(id)
            return (admission, victim?.channel, state.entries.count)
        }
        open.record(count)
        switch admission {
        case .refused: refused.increment()
        case .admittedEvicting: evicted.increment()
        case .admitted: break
        }
        victim?.close(promise: nil)
        return admission
    }

    /// A request is in progress on the connection (it cannot be evicted), or none is any more.
    package func setBusy(_ id: UInt64, _ busy: Bool) {
        state.withLock { state in
            guard state.entries[id] != nil else { return }
            if busy { state.entries[id]!.idleGeneration = nil } else { state.markIdle(id) }
        }
    }

    /// Every 2 s: once the connections open have fallen to a quarter of a peak of at least 512, the allocator's
    /// free memory is returned (`malloc_trim`, glibc only).
    package func run() async throws {
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            try? await Task.sleep(for: .seconds(2))
            let trim = state.withLock { state -> Bool in
                guard state.peak >= 512, state.entries.count <= state.peak / 4 else { return false }
                state.peak = state.entries.count
                return true
            }
            if trim { MemoryTrim.giveBack() }
        }
    }

    package func remove(_ id: UInt64) {
        let count = state.withLock { state in
            state.entries[id] = nil
            return state.entries.count
        }
        open.record(count)
    }
}
