#if canImport(Glibc)
import Glibc
#endif
internal import CLuaSandbox

/// Runs a worker's jobs (loads and calls of its scripts) on about as many threads as the
/// machine has cores, each script's jobs one at a time and in order.
///
/// Calls cost the same as with a thread per script (round trip and arbitration in paired
/// runs, docs/PERFORMANCE.md, "What keeps a burst of calls cheap"), and a batch of 100
/// evaluates needs no 100 threads. When scripts wait for room, a job that has run for a
/// whole `slice` (a Lua loop, a slow portal, a sleep) stops counting against the width and
/// another thread takes the next script, so a long job never holds up the rest: it goes on
/// beside them. Scripts waiting for their group, whose state a job holds, get it after
/// `groupSlice`.
final class ScriptScheduler: @unchecked Sendable {
    /// One script's queue of jobs. Touched only with the scheduler's lock held.
    final class Lane: @unchecked Sendable {
        /// The lanes of a group share a Lua state, which runs one of them at a time.
        let group: Int
        fileprivate var jobs = FirstInFirstOut<() -> Void>()
        /// In `ready`, or its job running.
        fileprivate var scheduled = false
        /// When it was last made ready, in the scheduler's count, so the lane that has
        /// waited longest runs first whichever group it is in.
        fileprivate var readyAt: UInt64 = 0

        init(group: Int) { self.group = group }
    }

    /// A thread of the scheduler and the job it runs.
    private final class Runner {
        /// When its current job started; 0 while it has none.
        var startedAt: Int64 = 0
        /// Its current job has run longer than a slice and no longer counts as running.
        var demoted = false
        var group = 0
        /// It ran a job since it last called `beforeWaiting`.
        var ranSinceWaiting = false
    }

    /// Where work for the quiet moments stands: more to do, done, or unable to go on until
    /// a job has run.
    enum IdleProgress { case more, done, blocked }

    let width: Int
    let slice: Duration
    /// How long a job keeps its group while other lanes of the group wait: as long as a
    /// script keeps a shared state another script waits for (the count hook hands it over
    /// after 1 ms), and a job waiting in a host call has let the state go anyway.
    let groupSlice: Duration
    /// Work for the quiet moments (the worker's tidying, `SandboxGroup.tidyStep`): called
    /// step after step on a runner thread once nothing has run for `idleDelay` after a job,
    /// until it is done or blocked or a job is queued. Jobs then start within one step.
    private let idleWork: (() -> IdleProgress)?
    let idleDelay: Duration
    /// Called on a runner that finds no job to take, before it waits (the worker writes the
    /// answers its runners left queued).
    private let beforeWaiting: (() -> Void)?
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let workArrived = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private let congested = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    // The rest is touched only with `mutex` held.
    /// The lanes with jobs waiting, by group.
    private var ready: [FirstInFirstOut<Lane>]
    private var readyCount = 0
    private var readyOrder: UInt64 = 0
    private var runners: [Runner] = []
    /// Jobs running that count against `width`, in all and by group. A thread never takes a
    /// lane of a group whose state another counted job holds: it would only sleep until
    /// that job ends, and the two would then take turns, each turn a wake-up.
    private var running = 0
    private var occupied: [Int]
    /// Threads waiting for work, those of them signalled and not yet awake, and threads
    /// started that have not looked for work yet.
    private var idle = 0
    private var signalled = 0
    private var starting = 0
    private var monitorStarted = false
    /// The monitor waits, untimed, until scripts wait for room or for their group.
    private var monitorAsleep = false
    /// A job ran since the idle work was last done or blocked; and whether a runner is
    /// waiting out the delay or doing the idle work.
    private var idleWorkDue = false
    private var idleWorker = false

    /// Lanes of `width` groups (`Lane.group` in `0..<width`) run on up to `width` threads.
    init(width: Int = Int(sbx_available_cores()), slice: Duration = .milliseconds(5),
         groupSlice: Duration = .milliseconds(1), idleDelay: Duration = .milliseconds(5),
         idleWork: (() -> IdleProgress)? = nil, beforeWaiting: (() -> Void)? = nil) {
        self.width = max(1, width)
        self.beforeWaiting = beforeWaiting
        self.slice = slice
        self.groupSlice = groupSlice
        self.idleDelay = idleDelay
        self.idleWork = idleWork
        ready = Array(repeating: FirstInFirstOut(), count: self.width)
        occupied = Array(repeating: 0, count: self.width)
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(workArrived, &attributes)
        pthread_cond_init(congested, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    // The worker's scheduler lives as long as its process; nothing deinitializes it.

    /// Whether idle work is due or a runner is on it. Tests wait on it for the idle work to
    /// have stopped before they count its steps, since a sleep only hopes it has.
    package var idleWorkPending: Bool { locked { idleWorkDue || idleWorker } }

    /// Starts every runner thread and the monitor now instead of when work first needs them,
    /// for a process about to load a library in the background: glibc holds its TLS lock for
    /// the whole of a `dlopen`, so a thread created meanwhile waits for the load.
    func startThreads() {
        let (runnersToStart, startsMonitor) = locked { () -> (Int, Bool) in
            let missing = width - runners.count - starting
            starting += missing
            defer { monitorStarted = true }
            return (missing, !monitorStarted)
        }
        if startsMonitor { startThread { $0.demoteLongJobs() } }
        for _ in 0..<runnersToStart { startThread { $0.runJobs() } }
    }

    /// Queues `job` behind the other jobs of `lane`.
    func enqueue(_ job: @escaping () -> Void, on lane: Lane) {
        precondition(lane.group >= 0 && lane.group < width, "a lane's group must be below the scheduler's width")
        let wakes = locked { () -> Wakes in
            lane.jobs.append(job)
            guard !lane.scheduled else { return Wakes() }
            lane.scheduled = true
            makeReady(lane)
            return wakeRunners()
        }
        wake(wakes)
    }

    /// Lock held.
    private func makeReady(_ lane: Lane) {
        readyOrder += 1
        lane.readyAt = readyOrder
        ready[lane.group].append(lane)
        readyCount += 1
    }

    /// Lock held: the lane that has waited longest among the groups no counted job holds.
    private func takeLane() -> Lane? {
        var chosen: (group: Int, readyAt: UInt64)?
        for group in 0..<width where occupied[group] == 0 {
            guard let head = ready[group].first else { continue }
            if chosen.map({ head.readyAt < $0.readyAt }) ?? true { chosen = (group, head.readyAt) }
        }
        guard let chosen else { return nil }
        readyCount -= 1
        return ready[chosen.group].removeFirst()
    }

    private func locked<Result>(_ body: () -> Result) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return body()
    }

    /// Threads to wake or start, once the lock is released: a thread woken while the
    /// lock is held would only wake to wait for the lock.
    private struct Wakes {
        var runners = 0
        var newRunners = 0
        var monitor = false
    }

    /// Lock held: counts as woken (or started) as many threads as there are groups with a
    /// lane ready and none of their jobs running, less those already on their way, within
    /// the room under the width; and the monitor when lanes are left waiting.
    private func wakeRunners() -> Wakes {
        var wakes = Wakes()
        let takeable = (0..<width).reduce(0) { $0 + (occupied[$1] == 0 && ready[$1].count > 0 ? 1 : 0) }
        let wanted = min(takeable - signalled - starting, width - running - signalled - starting)
        wakes.monitor = readyCount > max(0, wanted) && monitorAsleep
        for _ in 0..<max(0, wanted) {
            if idle > signalled {
                signalled += 1
                wakes.runners += 1
            } else {
                starting += 1
                wakes.newRunners += 1
            }
        }
        return wakes
    }

    /// Lock not held.
    private func wake(_ wakes: Wakes) {
        if wakes.monitor { pthread_cond_signal(congested) }
        for _ in 0..<wakes.runners { pthread_cond_signal(workArrived) }
        for _ in 0..<wakes.newRunners { startThread { $0.runJobs() } }
    }

    private func startThread(_ body: @escaping (ScriptScheduler) -> Void) {
        final class Start {
            let scheduler: ScriptScheduler
            let body: (ScriptScheduler) -> Void
            init(_ scheduler: ScriptScheduler, _ body: @escaping (ScriptScheduler) -> Void) {
                self.scheduler = scheduler
                self.body = body
            }
        }
        var thread = pthread_t()
        let start = Unmanaged.passRetained(Start(self, body)).toOpaque()
        let created = pthread_create(&thread, nil, { context in
            let start = Unmanaged<Start>.fromOpaque(context!).takeRetainedValue()
            start.body(start.scheduler)
            return nil
        }, start)
        precondition(created == 0, "the Lua worker cannot start a thread: \(String(cString: strerror(created)))")
        pthread_detach(thread)
    }

    /// A thread's life: take the next ready script's next job while there is room under
    /// the width, else wait for work.
    private func runJobs() -> Never {
        let me = Runner()
        // A woken runner waits for a free core instead of taking the core of the thread that
        // woke it: that thread is queuing more jobs (docs/PERFORMANCE.md, "What keeps a burst
        // of calls cheap").
        _ = sbx_make_thread_batch()
        pthread_mutex_lock(mutex)
        runners.append(me)
        if !monitorStarted {
            monitorStarted = true
            startThread { $0.demoteLongJobs() }
        }
        starting -= 1
        while true {
            if running < width, let lane = takeLane() {
                running += 1
                occupied[lane.group] += 1
                me.group = lane.group
                me.startedAt = sbx_monotonic_ns()
                me.demoted = false
                let job = lane.jobs.removeFirst()!
                // The group this thread left (its last job's) may have lanes for another.
                let wakes = wakeRunners()
                pthread_mutex_unlock(mutex)
                wake(wakes)
                job()
                pthread_mutex_lock(mutex)
                if !me.demoted {
                    running -= 1
                    occupied[lane.group] -= 1
                }
                me.startedAt = 0
                // A lane with more jobs goes to the back of the line; this thread takes
                // the next in line itself if there is room under the width.
                if lane.jobs.count > 0 {
                    makeReady(lane)
                } else {
                    lane.scheduled = false
                }
                idleWorkDue = idleWork != nil
                me.ranSinceWaiting = true
                continue
            }
            if let beforeWaiting, me.ranSinceWaiting {
                me.ranSinceWaiting = false
                pthread_mutex_unlock(mutex)
                beforeWaiting()
                pthread_mutex_lock(mutex)
                continue  // a job may have come meanwhile
            }
            idle += 1
            if let idleWork, idleWorkDue, !idleWorker, running == 0, readyCount == 0 {
                // Counted as idle throughout: it sees a queued job within one step and
                // takes it itself.
                idleWorker = true
                if waitForWork(upTo: idleDelay) == ETIMEDOUT { workWhileIdle(idleWork) }
                idleWorker = false
            } else {
                pthread_cond_wait(workArrived, mutex)
            }
            idle -= 1
            if signalled > 0 { signalled -= 1 }
        }
    }

    /// Lock held: waits for a signal or until `duration` has passed.
    private func waitForWork(upTo duration: Duration) -> Int32 {
        var until = Self.monotonicTime(after: duration.nanoseconds)
        return pthread_cond_timedwait(workArrived, mutex, &until)
    }

    /// CLOCK_MONOTONIC (the condition variables' clock) `delay` nanoseconds from now.
    private static func monotonicTime(after delay: Int64) -> timespec {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let at = Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec) + delay
        return timespec(tv_sec: Int(at / 1_000_000_000), tv_nsec: Int(at % 1_000_000_000))
    }

    /// Lock held, and released while each step runs: steps until the work is done or
    /// blocked, or a job is queued.
    private func workWhileIdle(_ work: () -> IdleProgress) {
        while readyCount == 0 {
            pthread_mutex_unlock(mutex)
            let progress = work()
            pthread_mutex_lock(mutex)
            if progress != .more {
                idleWorkDue = false
                return
            }
        }
    }

    /// The monitor: while scripts wait, it demotes the jobs that have run a whole slice, or
    /// a group slice while lanes of their group wait, and lets other threads take the
    /// waiting scripts in their place. Otherwise it sleeps, so a quiet worker has no timer
    /// running.
    private func demoteLongJobs() -> Never {
        let (sliceNanoseconds, groupSliceNanoseconds) = (slice.nanoseconds, groupSlice.nanoseconds)
        pthread_mutex_lock(mutex)
        while true {
            if readyCount == 0 {
                monitorAsleep = true
                pthread_cond_wait(congested, mutex)
                monitorAsleep = false
                continue
            }
            let groupWaits = (0..<width).contains { occupied[$0] > 0 && ready[$0].count > 0 }
            var sliceEnd = Self.monotonicTime(after: min(sliceNanoseconds, groupWaits ? groupSliceNanoseconds : .max))
            pthread_cond_timedwait(congested, mutex, &sliceEnd)
            let now = sbx_monotonic_ns()
            for runner in runners where runner.startedAt != 0 && !runner.demoted {
                let ran = now - runner.startedAt
                guard ran >= sliceNanoseconds || (ran >= groupSliceNanoseconds && ready[runner.group].count > 0) else {
                    continue
                }
                runner.demoted = true
                running -= 1
                occupied[runner.group] -= 1
            }
            let wakes = wakeRunners()
            pthread_mutex_unlock(mutex)
            wake(wakes)
            pthread_mutex_lock(mutex)
        }
    }
}

/// A queue that releases what it hands out at once and drops the emptied front once it
/// is half of the storage, so a queue that never empties does not grow.
struct FirstInFirstOut<Element> {
    private var elements: [Element?] = []
    private var head = 0

    var count: Int { elements.count - head }

    var first: Element? { head < elements.count ? elements[head] : nil }

    mutating func append(_ element: Element) { elements.append(element) }

    mutating func removeFirst() -> Element? {
        guard head < elements.count else { return nil }
        let first = elements[head].take()
        head += 1
        if head == elements.count {
            elements.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 32, head * 2 >= elements.count {
            elements.removeFirst(head)
            head = 0
        }
        return first
    }
}
