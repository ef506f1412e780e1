import Foundation
#if canImport(Glibc)
    import Glibc
#endif
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
/// Off by default: on a host that runs other busy work, leave the placement to the kernel. Not under a CPU quota
/// narrower than the CPUs allowed (see `group`).
enum EventLoops {
    /// The CPUs this process may run on (`Cpus_allowed_list` in /proc/self/status, e.g. `0-3,8`): a container's
    /// cpuset narrows it. Nil where it cannot be read (not Linux).
    static func allowedCPUs(status: String? = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8))
        -> [Int]?
    {
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
            guard (1...2).contains(bounds.count), let low = Int(bounds[0]), let high = Int(bounds[bounds.count - 1]),
                low >= 0,
                low <= high, high < 1024
            else { return nil }
            cpus.append(contentsOf: low...high)
        }
        return cpus.isEmpty ? nil : cpus
    }

    /// The group to serve on, and whether it is the server's own (to shut down after it). A loop that cannot be pinned
    /// (the call refused, a CPU gone from the set) runs unpinned, with a warning: pinning never stops the server.
    static func group(pinned: Bool, logger: Logger) async -> (
        provider: EventLoopGroupProvider, own: MultiThreadedEventLoopGroup?
    ) {
        guard pinned else { return (.singleton, nil) }
        #if os(Linux)
            guard let allowed = allowedCPUs() else {
                logger.warning(
                    "pin_event_loops: the CPUs this process may use could not be read; event loops not pinned")
                return (.singleton, nil)
            }
            // A CPU quota narrower than the CPUs allowed (a container limited to 2 cores of 16): every replica would pin to
            // the same first CPUs. Pinning is for a process with CPUs of its own (a cpuset, or the whole host).
            guard System.coreCount >= allowed.count else {
                logger.warning(
                    "pin_event_loops: event loops not pinned",
                    metadata: [
                        "reason":
                            "the CPU quota (\(System.coreCount) cores) is narrower than the \(allowed.count) CPUs the process may use; give it a cpuset of its own"
                    ])
                return (.singleton, nil)
            }
            let group = MultiThreadedEventLoopGroup(numberOfThreads: allowed.count)
            var pinnedTo: [Int] = []
            for (loop, cpu) in zip(group.makeIterator(), allowed) {
                // On the loop's own thread: sched_setaffinity(0, …) pins the calling thread.
                let failure = try? await loop.submit { pinCurrentThread(to: cpu) }.get()
                if let failure {
                    logger.warning(
                        "pin_event_loops: an event loop could not be pinned; it runs unpinned",
                        metadata: [
                            "cpu": "\(cpu)", "error": "\(String(cString: strerror(failure)))",
                        ])
                } else {
                    pinnedTo.append(cpu)
                }
            }
            if !pinnedTo.isEmpty {
                logger.notice(
                    "event loops pinned", metadata: ["cpus": "\(pinnedTo.map(String.init).joined(separator: ","))"])
            }
            return (.shared(group), group)
        #else
            logger.warning("pin_event_loops: only on Linux; event loops not pinned")
            return (.singleton, nil)
        #endif
    }

    #if os(Linux)
        /// sched_setaffinity(2), looked up at run time: Swift's Glibc module does not declare it (a GNU extension).
        private static let setAffinity: (@convention(c) (pid_t, Int, UnsafeRawPointer) -> Int32)? = {
            guard let symbol = dlsym(nil, "sched_setaffinity") else { return nil }
            return unsafeBitCast(symbol, to: (@convention(c) (pid_t, Int, UnsafeRawPointer) -> Int32).self)
        }()

        /// Pins the calling thread to `cpu` (below 1,024, a `cpu_set_t`'s size); nil, or the error number.
        static func pinCurrentThread(to cpu: Int) -> Int32? {
            guard let setAffinity else { return ENOSYS }
            guard (0..<1024).contains(cpu) else { return EINVAL }
            var mask = [UInt64](repeating: 0, count: 16)
            mask[cpu / 64] |= 1 << UInt64(cpu % 64)
            let result = mask.withUnsafeBytes { setAffinity(0, $0.count, $0.baseAddress!) }
            return result == 0 ? nil : errno
        }
    #endif
}
