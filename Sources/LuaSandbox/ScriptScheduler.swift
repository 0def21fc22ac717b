#if canImport(Glibc)
import Glibc
#endif
internal import CLuaSandbox

/// Runs a worker's jobs (loads and calls of its scripts) on about as many threads as the
/// machine has cores, each script's jobs one at a time and in order.
///
/// A serial Dispatch queue per script gave every script a thread of its own: a batch of
/// 100 evaluates ran on 100 threads. Calls cost the same either way (round trip and
/// arbitration in paired runs, docs/PERFORMANCE.md). When scripts wait for room, a job
/// that has run for a whole `slice` (a Lua loop, a slow portal, a sleep) stops counting
/// against the width and another thread takes the next script, so a long job never holds
/// up the rest: it goes on beside them, as it did on a thread of its own.
final class ScriptScheduler: @unchecked Sendable {
    /// One script's queue of jobs. Touched only with the scheduler's lock held.
    final class Lane: @unchecked Sendable {
        fileprivate var jobs = FirstInFirstOut<() -> Void>()
        /// In `ready`, or its job running.
        fileprivate var scheduled = false
    }

    /// A thread of the scheduler and the job it runs.
    private final class Runner {
        /// When its current job started; 0 while it has none.
        var startedAt: Int64 = 0
        /// Its current job has run longer than a slice and no longer counts as running.
        var demoted = false
    }

    let width: Int
    let slice: Duration
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let workArrived = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private let congested = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    // The rest is touched only with `mutex` held.
    private var ready = FirstInFirstOut<Lane>()
    private var runners: [Runner] = []
    /// Jobs running that count against `width`.
    private var running = 0
    /// Threads waiting for work, those of them signalled and not yet awake, and threads
    /// started that have not looked for work yet.
    private var idle = 0
    private var signalled = 0
    private var starting = 0
    private var monitorStarted = false
    /// The monitor waits, untimed, until scripts wait for room under the width.
    private var monitorAsleep = false

    init(width: Int = Int(sbx_available_cores()), slice: Duration = .milliseconds(5)) {
        self.width = max(1, width)
        self.slice = slice
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(workArrived, &attributes)
        pthread_cond_init(congested, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    // The worker's scheduler lives as long as its process; nothing deinitializes it.

    /// Queues `job` behind the other jobs of `lane`.
    func enqueue(_ job: @escaping () -> Void, on lane: Lane) {
        let wakes = locked { () -> Wakes in
            lane.jobs.append(job)
            guard !lane.scheduled else { return Wakes() }
            lane.scheduled = true
            ready.append(lane)
            return wakeRunners()
        }
        wake(wakes)
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

    /// Lock held: counts as woken (or started) as many threads as there are scripts ready
    /// and room under the width, and the monitor when there is no room.
    private func wakeRunners() -> Wakes {
        var wakes = Wakes()
        let waiting = ready.count
        let wanted = min(waiting, width - running - signalled - starting)
        wakes.monitor = waiting > wanted && monitorAsleep
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
        pthread_mutex_lock(mutex)
        runners.append(me)
        if !monitorStarted {
            monitorStarted = true
            startThread { $0.demoteLongJobs() }
        }
        starting -= 1
        while true {
            if running < width, let lane = ready.removeFirst() {
                running += 1
                me.startedAt = sbx_monotonic_ns()
                me.demoted = false
                let job = lane.jobs.removeFirst()!
                pthread_mutex_unlock(mutex)
                job()
                pthread_mutex_lock(mutex)
                if !me.demoted { running -= 1 }
                me.startedAt = 0
                // A lane with more jobs goes to the back of the line; this thread takes
                // the next in line itself if there is room under the width.
                if lane.jobs.count > 0 {
                    ready.append(lane)
                } else {
                    lane.scheduled = false
                }
                continue
            }
            idle += 1
            pthread_cond_wait(workArrived, mutex)
            idle -= 1
            if signalled > 0 { signalled -= 1 }
        }
    }

    /// The monitor: while scripts wait for room under the width, every slice it demotes
    /// the jobs that have run a whole slice and lets other threads take the waiting scripts
    /// in their place. Otherwise it sleeps, so a quiet worker has no timer running.
    private func demoteLongJobs() -> Never {
        let sliceNanoseconds = Int64(slice.components.seconds) * 1_000_000_000
            + slice.components.attoseconds / 1_000_000_000
        pthread_mutex_lock(mutex)
        while true {
            if ready.count == 0 || running + signalled + starting < width {
                monitorAsleep = true
                pthread_cond_wait(congested, mutex)
                monitorAsleep = false
                continue
            }
            var sliceEnd = timespec()
            clock_gettime(CLOCK_MONOTONIC, &sliceEnd)
            let at = Int64(sliceEnd.tv_sec) * 1_000_000_000 + Int64(sliceEnd.tv_nsec) + sliceNanoseconds
            sliceEnd = timespec(tv_sec: Int(at / 1_000_000_000), tv_nsec: Int(at % 1_000_000_000))
            pthread_cond_timedwait(congested, mutex, &sliceEnd)
            let now = sbx_monotonic_ns()
            for runner in runners where runner.startedAt != 0 && !runner.demoted
                && now - runner.startedAt >= sliceNanoseconds {
                runner.demoted = true
                running -= 1
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
