import Dispatch
import Schedule
import Synchronization

/// One turn at a time per channel, in the order asked, without a task of its own. A wait for a turn is bounded: a
/// command stuck on the log (a database that does not answer, a row lock held open) answers the ones behind it
/// "unavailable, nothing written" at the limit instead of holding them all in line.
final class ChannelTurns: Sendable {
    private struct Lines {
        /// The channels whose turn is taken, with who waits for it next.
        var waiting: [ChannelID: [(id: UInt64, continuation: CheckedContinuation<Bool, Never>)]] = [:]
        var nextID: UInt64 = 0
    }

    private let lines = Mutex(Lines())

    /// Whether the turn was taken within `limit` (then `pass` must follow).
    func take(_ channel: ChannelID, within limit: Duration) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let id = lines.withLock { lines -> UInt64? in
                guard lines.waiting[channel] != nil else {
                    lines.waiting[channel] = []
                    return nil
                }
                lines.nextID += 1
                lines.waiting[channel]!.append((lines.nextID, continuation))
                return lines.nextID
            }
            guard let id else { return continuation.resume(returning: true) }
            let seconds = Double(limit.components.seconds) + Double(limit.components.attoseconds) / 1e18
            DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { [self] in
                let expired = lines.withLock { lines -> CheckedContinuation<Bool, Never>? in
                    guard let index = lines.waiting[channel]?.firstIndex(where: { $0.id == id }) else { return nil }
                    return lines.waiting[channel]!.remove(at: index).continuation
                }
                expired?.resume(returning: false)
            }
        }
    }

    func pass(_ channel: ChannelID) {
        let next = lines.withLock { lines -> CheckedContinuation<Bool, Never>? in
            guard var queue = lines.waiting[channel], !queue.isEmpty else {
                lines.waiting[channel] = nil
                return nil
            }
            let next = queue.removeFirst()
            lines.waiting[channel] = queue
            return next.continuation
        }
        next?.resume(returning: true)
    }
}
