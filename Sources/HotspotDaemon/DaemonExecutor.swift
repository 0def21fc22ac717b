#if canImport(Glibc)
import Glibc
#endif
// Swift 6.3's interface for custom default executors is experimental (SPI): another
// compiler may change it, so it is used only where it is known, and elsewhere the daemon runs
// on the platform's executor, correct but woken every second (docs/ARCHITECTURE.md).
#if compiler(>=6.3)
@_spi(ExperimentalCustomExecutors) @_spi(ExperimentalScheduling) import _Concurrency
import CGlibcExtensions

/// Swift concurrency's default executor in the daemon (`run`), in place of the platform's.
/// On Linux the platform's runs tasks on libdispatch's thread pool, which is watched by a
/// timer of 1 s (its internal workqueue's monitor, looking for stalled threads to add more)
/// from the start of the pool's first thread to the end of the process: the daemon otherwise
/// sleeps between maintains, and that timer woke it 60 times a minute.
///
/// Here a thread per core (two at least) takes the jobs first come, first served, and sleeps
/// when there are none. A job for later (`Task.sleep`) waits in its clock's list until that
/// clock's timer descriptor says it is due: CLOCK_BOOTTIME for `ContinuousClock`, which
/// counts a suspend (a maintain due meanwhile runs at wake-up), CLOCK_MONOTONIC for
/// `SuspendingClock`. Nothing watches for blocked threads: the daemon blocks only threads of
/// its own (libcurl's, sd-bus's, the sockets'). Task priorities are not kept apart; the
/// daemon sets none.
///
/// Made the default through Swift 6.3's experimental interface for custom executors (SPI),
/// before the process's first task; with an earlier compiler, `install` leaves the platform's.
package final class DaemonExecutor: TaskExecutor, SchedulingExecutor, @unchecked Sendable {  // its state is behind `mutex`
    /// Makes it Swift concurrency's default executor; called before any task exists.
    package static func install() {
        _createExecutors(factory: Factory.self)
    }

    private enum Factory: ExecutorFactory {
        static var mainExecutor: any MainExecutor { PlatformExecutorFactory.mainExecutor }
        static var defaultExecutor: any TaskExecutor { DaemonExecutor.shared }
    }

    private static let shared = DaemonExecutor(threads: max(2, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))))

    /// Jobs for later, of one clock, soonest first, and the timer descriptor set to the soonest.
    private struct Later {
        let timer: Int32
        var jobs: [(due: Int64, job: UnownedJob)] = []
    }

    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let workArrived = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    // Behind `mutex`: the jobs to run, oldest first from `next`, and how many threads wait for one.
    private var ready: [UnownedJob] = []
    private var next = 0
    private var waiting = 0
    // Behind `mutex`: the jobs for later, by clock.
    private var continuous: Later
    private var suspending: Later
    /// Both clocks' timers, for the thread that waits for them.
    private let timers: [Int32]

    private init(threads: Int) {
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(workArrived, nil)
        timers = [hh_timer_create(CLOCK_BOOTTIME), hh_timer_create(CLOCK_MONOTONIC)]
        precondition(!timers.contains(-1), "no timer descriptors for the daemon's tasks")
        continuous = Later(timer: timers[0])
        suspending = Later(timer: timers[1])
        for _ in 0..<threads { startThread(named: "hh-tasks") { $0.runJobs() } }
        startThread(named: "hh-task-timers") { $0.moveDueJobs() }
    }

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        pthread_mutex_lock(mutex)
        ready.append(job)
        if waiting > 0 { pthread_cond_signal(workArrived) }
        pthread_mutex_unlock(mutex)
    }

    package func enqueue<C: Clock>(_ job: consuming ExecutorJob, at instant: C.Instant, tolerance: C.Duration?, clock: C) {
        let job = UnownedJob(job)
        // The daemon sleeps on the standard clocks, whose durations are `Duration`.
        let delay = (clock.now.duration(to: instant) as? Duration) ?? .zero
        let isSuspending = clock is SuspendingClock
        // Rounded up, so nothing runs before its time.
        let nanoseconds = delay.components.seconds * 1_000_000_000 + (delay.components.attoseconds + 999_999_999) / 1_000_000_000
        let due = Self.now(isSuspending ? CLOCK_MONOTONIC : CLOCK_BOOTTIME) + max(0, nanoseconds)
        pthread_mutex_lock(mutex)
        if isSuspending {
            Self.add(job, due: due, to: &suspending)
        } else {
            Self.add(job, due: due, to: &continuous)
        }
        pthread_mutex_unlock(mutex)
    }

    /// Files `job` by its due time, and sets the timer when it is the soonest.
    private static func add(_ job: UnownedJob, due: Int64, to later: inout Later) {
        let index = later.jobs.firstIndex { $0.due > due } ?? later.jobs.endIndex
        later.jobs.insert((due, job), at: index)
        if index == 0 { setTimer(later) }
    }

    private static func setTimer(_ later: Later) {
        hh_timer_set(later.timer, later.jobs.first?.due ?? 0)
    }

    private func runJobs() {
        pthread_mutex_lock(mutex)
        while true {
            guard next < ready.count else {
                ready.removeAll(keepingCapacity: true)
                next = 0
                waiting += 1
                pthread_cond_wait(workArrived, mutex)
                waiting -= 1
                continue
            }
            let job = ready[next]
            next += 1
            // Under a steady load the queue never empties: what has run goes now and then.
            if next >= 1024, next * 2 >= ready.count {
                ready.removeFirst(next)
                next = 0
            }
            pthread_mutex_unlock(mutex)
            job.runSynchronously(on: asUnownedTaskExecutor())
            pthread_mutex_lock(mutex)
        }
    }

    /// Waits for either clock's timer, then makes the jobs due ready to run.
    private func moveDueJobs() {
        var expired = timers.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
        var expirations: UInt64 = 0
        while true {
            guard poll(&expired, 2, -1) > 0 else { continue }  // interrupted
            // They do not block: one set again since poll returned reads as nothing.
            for timer in expired where timer.revents != 0 { _ = read(timer.fd, &expirations, 8) }
            pthread_mutex_lock(mutex)
            let before = ready.count
            moveDue(from: &continuous, now: Self.now(CLOCK_BOOTTIME))
            moveDue(from: &suspending, now: Self.now(CLOCK_MONOTONIC))
            for _ in 0..<min(ready.count - before, waiting) { pthread_cond_signal(workArrived) }
            pthread_mutex_unlock(mutex)
        }
    }

    private func moveDue(from later: inout Later, now: Int64) {
        let due = later.jobs.prefix { $0.due <= now }
        guard !due.isEmpty else { return }
        ready += due.map(\.job)
        later.jobs.removeFirst(due.count)
        Self.setTimer(later)
    }

    private static func now(_ clock: clockid_t) -> Int64 {
        var time = timespec()
        clock_gettime(clock, &time)
        return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
    }

    private func startThread(named name: String, _ body: @escaping (DaemonExecutor) -> Void) {
        final class Start {
            let executor: DaemonExecutor
            let name: String
            let body: (DaemonExecutor) -> Void
            init(_ executor: DaemonExecutor, _ name: String, _ body: @escaping (DaemonExecutor) -> Void) {
                (self.executor, self.name, self.body) = (executor, name, body)
            }
        }
        var thread = pthread_t()
        let created = pthread_create(&thread, nil, { context in
            let start = Unmanaged<Start>.fromOpaque(context!).takeRetainedValue()
            hh_name_thread(start.name)
            start.body(start.executor)
            return nil
        }, Unmanaged.passRetained(Start(self, name, body)).toOpaque())
        precondition(created == 0, "cannot start the daemon's task threads")
        pthread_detach(thread)
    }
}
#else
/// The platform's executor stays: this compiler lacks the interface the daemon's own needs.
package enum DaemonExecutor {
    package static func install() {}
}
#endif
