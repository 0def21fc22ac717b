import Dispatch
import Foundation
import Testing
import TestSupport

@Suite struct PoolWatchdogTests {
    /// In a process of its own, whose every cooperative thread is blocked on purpose (the very
    /// thing the watchdog is for) for longer than a stall limit made short.
    @Test func aBlockedPoolIsReported() async throws {
        let result = try #require(await #expect(processExitsWith: .exitCode(0), observing: [\.standardErrorContent]) {
            setenv("POOL_WATCHDOG_LIMIT_MS", "300", 1)
            PoolWatchdog.note()
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<ProcessInfo.processInfo.activeProcessorCount + 1 {
                    group.addTask { _ = DispatchSemaphore(value: 0).wait(timeout: .now() + .milliseconds(1500)) }
                }
            }
            exit(0)
        })
        let errors = String(decoding: result.standardErrorContent, as: UTF8.self)
        #expect(errors.contains("pool watchdog: Swift concurrency's threads have run no probe for"), "\(errors)")
        #expect(errors.contains("a test blocks them"), "\(errors)")
    }
}
