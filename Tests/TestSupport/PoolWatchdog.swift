import Dispatch
import Foundation
import Locking
import Testing

/// Notices a test that blocks Swift concurrency's cooperative threads (two on a two-core
/// machine), which stalls every other test's timers and calls meanwhile (whole-process
/// stalls of 11-15 s have failed runs), and names the tests that were running.
///
/// A timer on a queue of its own (libdispatch's threads, not the cooperative ones) hands the
/// pool a probe task every quarter second; when none has run for `stallLimit`, it writes to
/// standard error the tests that called the test support (a wait, a thread of their own, a
/// process, a scratch file) during the stall, and once the pool runs again, for how long it
/// was stalled. Started by the first such call.
public enum PoolWatchdog {
    /// How long the pool may run nothing before it counts as blocked: longer than any
    /// scheduling delay of a loaded machine, shorter than the stalls that failed runs;
    /// POOL_WATCHDOG_LIMIT_MS sets another (a slower machine, the watchdog's own test).
    static let stallLimit = ProcessInfo.processInfo.environment["POOL_WATCHDOG_LIMIT_MS"].flatMap(Int.init)
        .map { Duration.milliseconds($0) } ?? .seconds(5)

    private struct State {
        var lastProbeRun = ContinuousClock.now
        /// A probe handed to the pool has not run yet: no other is handed while it waits.
        var probePending = false
        var stalledSince: ContinuousClock.Instant?
        /// When each test last called the test support.
        var seen: [String: ContinuousClock.Instant] = [:]
    }

    private static let state = PlainLock(State())
    /// Made once, and never changed after: not Sendable only because a source could be.
    nonisolated(unsafe) private static let timer: any DispatchSourceTimer = {
        let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "pool-watchdog"))
        timer.schedule(deadline: .now(), repeating: .milliseconds(250))
        timer.setEventHandler(handler: check)
        timer.resume()
        return timer
    }()

    /// Starts the watchdog once, and notes the test this runs in (if any) as running now.
    public static func note() {
        _ = timer
        guard let test = Test.current else { return }
        let name = String(describing: test.id)
        state.withLock { $0.seen[name] = .now }
    }

    private static func check() {
        let now = ContinuousClock.now
        let (report, probe) = state.withLock { state -> (String?, Bool) in
            defer { state.probePending = true }
            return (describe(&state, now: now), !state.probePending)
        }
        if let report { FileHandle.standardError.write(Data((report + "\n").utf8)) }
        if probe {
            Task.detached {
                state.withLock { state in
                    state.lastProbeRun = .now
                    state.probePending = false
                }
            }
        }
    }

    /// What to report of the pool now, if anything.
    private static func describe(_ state: inout State, now: ContinuousClock.Instant) -> String? {
        let idle = now - state.lastProbeRun
        if idle < stallLimit {
            guard let since = state.stalledSince else { return nil }
            state.stalledSince = nil
            return "pool watchdog: Swift concurrency's threads ran again after \(since.duration(to: now)) blocked"
        }
        guard state.stalledSince == nil else { return nil }
        state.stalledSince = state.lastProbeRun
        let suspects = state.seen.filter { $0.value >= state.lastProbeRun - stallLimit }.keys.sorted()
        return "pool watchdog: Swift concurrency's threads have run no probe for \(idle): a test blocks them "
            + "(a wait, a process, a socket or seconds of CPU on one of them rather than on a thread of its own), "
            + "or the machine gives them too little CPU. Tests running: "
            + (suspects.isEmpty ? "none that called the test support" : suspects.joined(separator: ", "))
    }
}
