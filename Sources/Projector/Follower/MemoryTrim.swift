import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Gives freed heap memory back to the operating system after a burst (a connection flood, a run of audit reads):
/// glibc keeps it otherwise, and the resident size stays at the burst's peak.
public enum MemoryTrim {
    public static func giveBack() {
        _ = mallocTrim?(0)
    }

    private static let requested = Atomic<Bool>(false)

    /// Asks for a `giveBack()` at the next `giveBackIfRequested()`: from code that just let go of much memory under a
    /// lock (the follower after a long catch-up), so the trim runs outside it.
    static func request() { requested.store(true, ordering: .relaxed) }

    static func giveBackIfRequested() {
        guard requested.exchange(false, ordering: .relaxed) else { return }
        giveBack()
    }

    /// glibc's `malloc_trim`, looked up at run time (the Glibc module does not declare it); nil elsewhere.
    private static let mallocTrim: (@convention(c) (Int) -> Int32)? = {
        #if canImport(Glibc)
            guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") else { return nil }
            return unsafeBitCast(symbol, to: (@convention(c) (Int) -> Int32).self)
        #else
            return nil
        #endif
    }()
}
