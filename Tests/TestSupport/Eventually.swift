public import Testing
import Foundation

/// Waits until `condition` holds, checking every 20 ms, for at most `limit`. If it never
/// does, records a failure at the caller naming what it waited for (`awaited`, e.g. "the
/// looper holds the group") and throws, so the test stops there instead of running on
/// with the condition unmet. An error `condition` throws ends the wait and reaches the caller.
public func eventually(
    _ awaited: String, within limit: Duration = .seconds(10),
    sourceLocation: SourceLocation = #_sourceLocation, _ condition: () async throws -> Bool
) async throws {
    guard try await holds(within: limit, condition) else {
        Issue.record("timed out after \(seconds(limit)) waiting for: \(awaited)", sourceLocation: sourceLocation)
        throw TimedOut(awaited: awaited)
    }
}

/// Whether `condition` holds within `limit`, checking every 20 ms: for a caller that says
/// itself what went wrong (with a process's output, say). The one place a task polls.
public func holds(within limit: Duration, _ condition: () async throws -> Bool) async throws -> Bool {
    PoolWatchdog.note()
    let end = ContinuousClock.now + limit
    while !(try await condition()) {
        guard ContinuousClock.now < end else { return false }
        // Real time: what is awaited (a file, a process, another program's state) tells no one.
        try await Task.sleep(for: .milliseconds(20))
    }
    return true
}

/// `holds` for a thread of its own (set-up before a test's tasks, a process being stopped),
/// never for one of Swift concurrency's threads: it blocks. The one place a thread polls.
public func holdsBlocking(within limit: Duration, _ condition: () throws -> Bool) rethrows -> Bool {
    let end = ContinuousClock.now + limit
    while !(try condition()) {
        guard ContinuousClock.now < end else { return false }
        // Real time: what is awaited (a file, a process, another program's state) tells no one.
        usleep(10_000)
    }
    return true
}

/// What `eventually` throws when its condition never held; the failure is recorded already.
public struct TimedOut: Error, CustomStringConvertible {
    public let awaited: String
    public var description: String { "gave up waiting for: \(awaited)" }
}

/// "10 s", "0.5 s".
private func seconds(_ duration: Duration) -> String {
    let (whole, attoseconds) = duration.components
    if attoseconds == 0 { return "\(whole) s" }
    return "\(Double(whole) + Double(attoseconds) / 1e18) s"
}
