import Logging
import Postgres
import Synchronization

/// The one mapping from driver errors to store errors, for every PostgreSQL store of this module.
enum StoreErrors {
    /// Runs `body`; driver errors become store errors an operator can act on, store errors pass through.
    static func map<T>(logger: Logger? = nil, _ body: () async throws -> T) async throws -> T {
        do {
            let value = try await body()
            if outage.isOn { outage.ended(logger: logger) }
            return value
        } catch let error as StoreError {
            throw error
        } catch let error as PostgresError {
            if error.sqlState == "22021" { throw StoreError.invalidValue(error.message) }
            if error.isUnavailable {
                outage.failed(error, logger: logger)
                throw StoreError.unavailable("\(error)")
            }
            logger?.error("database error", metadata: ["error": "\(error)", "statement": "\(error.statement ?? "")"])
            throw StoreError.database("\(error)")
        }
    }
}

/// The database being unreachable, said once when it starts, then once every 10 s with how many calls failed since,
/// and once when a call succeeds again: while the primary is gone every watermark read and command fails (50 a second
/// and more), and an operator needs the three lines, not the thousands.
final class Outage: Sendable {
    private let on = Atomic<Bool>(false)
    private struct State {
        var since: ContinuousClock.Instant?
        var lastLogged: ContinuousClock.Instant?
        var failedSinceLog = 0
        var failed = 0
    }
    private let state = Mutex(State())
    let every: Duration

    init(every: Duration = .seconds(10)) {
        self.every = every
    }

    var isOn: Bool { on.load(ordering: .relaxed) }

    func failed(_ error: PostgresError, logger: Logger?) {
        let now = ContinuousClock.now
        let report = state.withLock { state -> (first: Bool, held: Int)? in
            state.failed += 1
            if state.since == nil { state.since = now }
            // Said by a store that logs (some are given no logger): the others only count.
            if logger == nil || state.lastLogged.map({ now - $0 < every }) == true {
                state.failedSinceLog += 1
                return nil
            }
            defer {
                state.lastLogged = now
                state.failedSinceLog = 0
            }
            return (state.lastLogged == nil, state.failedSinceLog)
        }
        on.store(true, ordering: .relaxed)
        guard let report else { return }
        if report.first {
            logger?.warning("database unavailable", metadata: ["error": "\(error)"])
        } else {
            logger?.warning(
                "database still unavailable (\(report.held) more calls failed in the last \(every))",
                metadata: ["error": "\(error)"])
        }
    }

    func ended(logger: Logger?) {
        let now = ContinuousClock.now
        let report = state.withLock { state -> (Duration, Int)? in
            guard let since = state.since else { return nil }
            defer { state = State() }
            return (now - since, state.failed)
        }
        on.store(false, ordering: .relaxed)
        guard let (lasted, failed) = report else { return }
        logger?.notice(
            "database reachable again after \(lasted.formatted(.units(allowed: [.seconds], fractionalPart: .show(length: 1)))) (\(failed) calls failed meanwhile)"
        )
    }
}

extension StoreErrors {
    /// One per process: every PostgreSQL store of it sees the same database.
    static let outage = Outage()
}
