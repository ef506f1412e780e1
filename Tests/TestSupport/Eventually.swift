/// Polls `condition` every 5 ms until it holds or `timeout` passes: for tests that wait on another task or process
/// reaching a state, instead of sleeping a fixed time that a loaded machine may not honour. Returns whether it held.
public func eventually(within timeout: Duration = .seconds(5), _ condition: () -> Bool) async throws -> Bool {
    let deadline = ContinuousClock.now + timeout
    while !condition() {
        guard ContinuousClock.now < deadline else { return false }
        try await Task.sleep(for: .milliseconds(5))
    }
    return true
}
