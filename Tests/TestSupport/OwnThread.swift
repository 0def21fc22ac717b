import Foundation

/// Runs blocking work (waiting on a process, a socket, a slow transfer) on a thread of its
/// own. Tests run on Swift concurrency's few shared threads (two on a 2-core machine); a
/// test that blocks one of them stalls every other suite's timers and calls meanwhile.
public func onOwnThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    PoolWatchdog.note()
    return try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try work() }) }.start()
    }
}
