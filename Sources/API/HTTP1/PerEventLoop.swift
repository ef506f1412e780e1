import NIOCore
import Synchronization

/// One value per event loop, made on first use and kept (a server has a few loops, for its life: kept, an
/// identifier is never reused). The registry of the per-loop helpers (``ConnectionSweep``, ``HeldWakeups``).
final class PerEventLoop<Value: AnyObject & Sendable>: Sendable {
    private let values = Mutex<[ObjectIdentifier: Value]>([:])
    private let make: @Sendable (any EventLoop) -> Value

    init(_ make: @escaping @Sendable (any EventLoop) -> Value) { self.make = make }

    func on(_ loop: any EventLoop) -> Value {
        values.withLock { values in
            if let known = values[ObjectIdentifier(loop)] { return known }
            let made = make(loop)
            values[ObjectIdentifier(loop)] = made
            return made
        }
    }
}
