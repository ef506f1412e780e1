#if canImport(Glibc)
    import Glibc
#endif

/// Gives freed heap memory back to the operating system after a burst (a connection flood, a run of audit reads):
/// glibc keeps it otherwise, and the resident size stays at the burst's peak.
enum MemoryTrim {
    static func giveBack() {
        _ = mallocTrim?(0)
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
