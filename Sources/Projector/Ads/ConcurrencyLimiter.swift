import Synchronization

/// At most `limit` holders per key; others wait in order until a slot frees or their deadline passes.
final class ConcurrencyLimiter: Sendable {
    private struct Waiter {
        var id: UInt64
        var continuation: CheckedContinuation<Bool, Never>
    }

    private struct Slots {
        var inFlight = 0
        var waiters: [Waiter] = []
    }

    private let state = Mutex<(next: UInt64, slots: [String: Slots])>((0, [:]))

    /// True with a slot held (release it), false when none came before `until` or `waiting` were waiting already.
    func acquire(_ key: String, limit: Int, waiting: Int, until deadline: ContinuousClock.Instant) async -> Bool {
        // A free slot is taken at once, without a waiter or an expiry task (the usual case, once per request).
        let id: UInt64? = state.withLock { state in
            var slots = state.slots[key] ?? Slots()
            if slots.inFlight < limit {
                slots.inFlight += 1
                state.slots[key] = slots
                return nil
            }
            state.next += 1
            return state.next
        }
        guard let id else { return true }
        let expiry = Task {
            try? await Task.sleep(until: deadline, clock: .continuous)
            if !Task.isCancelled { self.expire(key, id) }
        }
        defer { expiry.cancel() }
        return await withCheckedContinuation { continuation in
            let now: Bool? = state.withLock { state in
                var slots = state.slots[key] ?? Slots()
                defer { state.slots[key] = slots }
                if slots.inFlight < limit {
                    slots.inFlight += 1
                    return true
                }
                // Past the deadline the expiry may have run already and would never find this waiter.
                if slots.waiters.count >= waiting || ContinuousClock.now >= deadline { return false }
                slots.waiters.append(Waiter(id: id, continuation: continuation))
                return nil
            }
            if let now { continuation.resume(returning: now) }
        }
    }

    /// Hands the slot to the first waiter, or frees it.
    func release(_ key: String) {
        let next: Waiter? = state.withLock { state in
            guard var slots = state.slots[key] else { return nil }
            var handed: Waiter?
            if slots.waiters.isEmpty {
                slots.inFlight -= 1
            } else {
                handed = slots.waiters.removeFirst()
            }
            state.slots[key] = slots.inFlight == 0 && slots.waiters.isEmpty ? nil : slots
            return handed
        }
        next?.continuation.resume(returning: true)
    }

    private func expire(_ key: String, _ id: UInt64) {
        let expired: Waiter? = state.withLock { state in
            guard var slots = state.slots[key], let index = slots.waiters.firstIndex(where: { $0.id == id }) else {
                return nil
            }
            let waiter = slots.waiters.remove(at: index)
            state.slots[key] = slots
            return waiter
        }
        expired?.continuation.resume(returning: false)
    }

    /// Holders and waiters of `key` (tests).
    func counts(_ key: String) -> (inFlight: Int, waiting: Int) {
        state.withLock { ($0.slots[key]?.inFlight ?? 0, $0.slots[key]?.waiters.count ?? 0) }
    }
}
