// Counts heap allocations: this executable defines `malloc`, `calloc`, `realloc`, `posix_memalign`, `aligned_alloc`
// and `memalign`, so the dynamic linker binds every call in the process (the Swift runtime's `swift_slowAlloc`
// included) to these, which count and forward to glibc's own entry points (`__libc_malloc`, ...). `free` is left to
// glibc. Counting is one non-atomic increment: the benchmark measures on one thread.
//
// Release builds only: in a debug build the counter is a lazily initialised global whose first access could itself
// allocate, and the debug build is what `swift build --build-tests` makes.
#if canImport(Glibc) && !DEBUG
    import Glibc

    @_silgen_name("__libc_malloc") private func libcMalloc(_ size: Int) -> UnsafeMutableRawPointer?
    @_silgen_name("__libc_calloc") private func libcCalloc(_ count: Int, _ size: Int) -> UnsafeMutableRawPointer?
    @_silgen_name("__libc_realloc") private func libcRealloc(_ pointer: UnsafeMutableRawPointer?, _ size: Int)
        -> UnsafeMutableRawPointer?
    @_silgen_name("__libc_memalign") private func libcMemalign(_ alignment: Int, _ size: Int)
        -> UnsafeMutableRawPointer?

    nonisolated(unsafe) private var allocationCount = 0
    nonisolated(unsafe) private var allocationSink = 0

    @_cdecl("malloc") public func countingMalloc(_ size: Int) -> UnsafeMutableRawPointer? {
        allocationCount &+= 1
        return libcMalloc(size)
    }

    @_cdecl("calloc") public func countingCalloc(_ count: Int, _ size: Int) -> UnsafeMutableRawPointer? {
        allocationCount &+= 1
        return libcCalloc(count, size)
    }

    @_cdecl("realloc") public func countingRealloc(_ pointer: UnsafeMutableRawPointer?, _ size: Int)
        -> UnsafeMutableRawPointer?
    {
        allocationCount &+= 1
        return libcRealloc(pointer, size)
    }

    @_cdecl("memalign") public func countingMemalign(_ alignment: Int, _ size: Int) -> UnsafeMutableRawPointer? {
        allocationCount &+= 1
        return libcMemalign(alignment, size)
    }

    @_cdecl("aligned_alloc") public func countingAlignedAlloc(_ alignment: Int, _ size: Int) -> UnsafeMutableRawPointer?
    {
        allocationCount &+= 1
        return libcMemalign(alignment, size)
    }

    @_cdecl("posix_memalign") public func countingPosixMemalign(
        _ result: UnsafeMutablePointer<UnsafeMutableRawPointer?>, _ alignment: Int, _ size: Int
    ) -> Int32 {
        allocationCount &+= 1
        guard let pointer = libcMemalign(alignment, size) else { return ENOMEM }
        result.pointee = pointer
        return 0
    }

    /// Heap allocations made by `body`, per call, over `iterations` calls; nil where they cannot be counted.
    func allocations(iterations: Int, _ body: () -> Int) -> Double? {
        var checksum = body()  // warm: lazily created state is not the render's
        let before = allocationCount
        for _ in 0..<iterations { checksum &+= body() }
        let after = allocationCount
        allocationSink = checksum
        return Double(after - before) / Double(iterations)
    }
#else
    func allocations(iterations: Int, _ body: () -> Int) -> Double? { nil }
#endif
