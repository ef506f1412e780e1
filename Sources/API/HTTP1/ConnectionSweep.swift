import NIOCore
import Synchronization

/// The deadlines of one event loop's connections, checked four times a second by one repeated task on the loop: a
/// connection's clocks move on every request, and a timer of its own would be cancelled and scheduled again each
/// time (NIO cancels a scheduled task by a linear search of the loop's queue).
///
/// Used on its loop only, but for the registry that finds it; `@unchecked Sendable` for that registry.
final class ConnectionSweep: @unchecked Sendable {
    private static let loops = PerEventLoop { ConnectionSweep(loop: $0) }
    /// How often the deadlines are looked at: a timeout fires up to this late.
    static let interval = TimeAmount.milliseconds(250)

    private let loop: any EventLoop
    private var trackers: [ObjectIdentifier: ConnectionTracker] = [:]
    private var task: RepeatedTask?

    private init(loop: any EventLoop) {
        self.loop = loop
    }

    /// The sweep of `loop`, made on first use (and kept: loops live as long as the server).
    static func on(_ loop: any EventLoop) -> ConnectionSweep { loops.on(loop) }

    /// On the loop: `tracker`'s deadlines are checked from now on.
    func add(_ tracker: ConnectionTracker) {
        loop.preconditionInEventLoop()
        trackers[ObjectIdentifier(tracker)] = tracker
        guard task == nil else { return }
        task = loop.scheduleRepeatedTask(initialDelay: Self.interval, delay: Self.interval) { [self] _ in
            let now = NIODeadline.now()
            for tracker in Array(trackers.values) { tracker.check(at: now) }
            if trackers.isEmpty {
                task?.cancel()
                task = nil
            }
        }
    }

    /// On the loop: the connection has ended.
    func remove(_ tracker: ConnectionTracker) {
        trackers[ObjectIdentifier(tracker)] = nil
    }
}
