/// Waits until `condition` holds, checking every 20 ms, for at most `limit`; the caller's
/// expectations then say what is wrong if it never did.
public func eventually(within limit: Duration = .seconds(10), _ condition: () async -> Bool) async throws {
    let end = ContinuousClock.now + limit
    while !(await condition()), ContinuousClock.now < end {
        try await Task.sleep(for: .milliseconds(20))
    }
}
