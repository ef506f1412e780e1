import Foundation
import Hummingbird
import Logging
import NIOCore
import NIOPosix

/// The server's event loops: NIO's shared group (one thread per core, placed by the kernel), or with
/// `pin_event_loops` one thread pinned to each CPU the process may run on (Linux).
///
/// Why pin: at an LL-HLS part boundary every held request of every channel is answered at once, about half on each
/// loop. Measured on the 2-core machine with 1,000 blocked clients (2026-11-27), the kernel often woke both loops onto
/// the same CPU, where they took turns in 4 ms slices while the other CPU ran the clients: p99 after the boundary
/// 21.6–22.4 ms; with each loop on a CPU of its own, 16.2–16.9 ms (clients at idle priority in both). A pinned loop
/// still shares its CPU with whatever else runs there (PostgreSQL on the same host, say); it only no longer moves.
/// Off by default: on a host that runs other busy work, leave the placement to the kernel.
enum EventLoops {
    /// The CPUs this process may run on (`Cpus_allowed_list` in /proc/self/status, e.g. `0-3,8`): a container's
    /// cpuset narrows it. Nil where it cannot be read (not Linux).
    static func allowedCPUs(status: String? = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) -> [Int]? {
        guard let status,
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Cpus_allowed_list:") })
        else { return nil }
        return parseCPUList(String(line.dropFirst("Cpus_allowed_list:".count)))
    }

    /// `0-3,8,10-11` → [0, 1, 2, 3, 8, 10, 11]; nil if malformed.
    static func parseCPUList(_ text: String) -> [Int]? {
        var cpus: [Int] = []
        for item in text.trimmingCharacters(in: .whitespaces).split(separator: ",") {
            let bounds = item.split(separator: "-", omittingEmptySubsequences: false)
            guard (1...2).contains(bounds.count), let low = Int(bounds[0]), let high = Int(bounds[bounds.count - 1]), low >= 0,
                low <= high, high < 65_536
            else { return nil }
            cpus.append(contentsOf: low...high)
        }
        return cpus.isEmpty ? nil : cpus
    }

    /// The group to serve on, and whether it is the server's own (to shut down after it).
    static func group(pinned: Bool, logger: Logger) -> (provider: EventLoopGroupProvider, own: MultiThreadedEventLoopGroup?) {
        guard pinned else { return (.singleton, nil) }
        #if os(Linux)
        guard let allowed = allowedCPUs() else {
            logger.warning("pin_event_loops: the CPUs this process may use could not be read; event loops not pinned")
            return (.singleton, nil)
        }
        // As many loops as NIO would run (it counts a CPU quota too), each on one of the allowed CPUs.
        let cpus = Array(allowed.prefix(max(1, min(System.coreCount, allowed.count))))
        // Logged before the threads pin themselves: a system-call filter that denies sched_setaffinity stops the
        // process there (the systemd unit in deploy/ allows that one call).
        logger.notice("event loops pinned", metadata: [
            "cpus": "\(cpus.map(String.init).joined(separator: ","))", "needs": "the sched_setaffinity system call",
        ])
        let group = MultiThreadedEventLoopGroup(pinnedCPUIDs: cpus)
        return (.shared(group), group)
        #else
        logger.warning("pin_event_loops: only on Linux; event loops not pinned")
        return (.singleton, nil)
        #endif
    }
}
