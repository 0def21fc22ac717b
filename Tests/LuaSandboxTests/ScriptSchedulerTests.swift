#if canImport(Glibc)
import Glibc
#endif
@testable import LuaSandbox
import Locking
import Synchronization
import Testing
import TestSupport

/// The worker's scheduler, with jobs that wait on semaphores in place of Lua calls.
@Suite struct ScriptSchedulerTests {
    /// What the jobs record, in the order they do it.
    final class Journal: Sendable {
        private let lines = PlainLock<[String]>([])
        func note(_ line: String) { lines.withLock { $0.append(line) } }
        var entries: [String] { lines.withLock { $0 } }
    }

    /// A semaphore a job waits on until the test lets it go; at most 10 s, so a broken
    /// scheduler fails the test instead of hanging it.
    final class Gate: @unchecked Sendable {
        private var semaphore = sem_t()
        init() { sem_init(&semaphore, 0, 0) }
        deinit { sem_destroy(&semaphore) }
        func open() { sem_post(&semaphore) }
        @discardableResult func wait(seconds: Int = 10) -> Bool {
            var until = timespec()
            clock_gettime(CLOCK_REALTIME, &until)
            until.tv_sec += seconds
            return sem_timedwait(&semaphore, &until) == 0
        }
    }

    /// The idle work (the worker's garbage collection) runs in steps once nothing has run for
    /// the delay after a job, stops when it is done, and gives way within a step to a job
    /// queued meanwhile.
    @Test func idleWorkRunsAfterTheDelayAndGivesWayToJobs() async throws {
        let steps = Atomic<Int>(0)
        let stepsBeforeDone = Atomic<Int>(5)
        let stepping = Gate()
        let scheduler = ScriptScheduler(width: 1, idleDelay: .milliseconds(20)) {
            let step = steps.add(1, ordering: .relaxed).newValue
            if step == 1 { stepping.open() }
            // Real time is what is tested: a step takes a while, and a job queued meanwhile
            // must start within one.
            usleep(1000)
            return step >= stepsBeforeDone.load(ordering: .relaxed) ? .done : .more
        }
        let lane = ScriptScheduler.Lane(group: 0)
        let ran = Gate()
        scheduler.enqueue({ ran.open() }, on: lane)
        #expect(ran.wait())
        #expect(stepping.wait(), "the idle work should start after the delay")
        try await eventually("the idle work to stop") { !scheduler.idleWorkPending }
        #expect(steps.load(ordering: .relaxed) == 5, "the idle work should stop once done")

        // Idle work that never finishes by itself still lets a job in, then goes on.
        stepsBeforeDone.store(.max, ordering: .relaxed)
        scheduler.enqueue({ ran.open() }, on: lane)
        #expect(ran.wait())
        try await eventually("the idle work to step again after the job") { steps.load(ordering: .relaxed) > 5 }
        let stepsBeforeTheJob = steps.load(ordering: .relaxed)
        #expect(stepsBeforeTheJob > 5, "a job should make the idle work due again")
        let start = Deadline.now
        scheduler.enqueue({ ran.open() }, on: lane)
        #expect(ran.wait())
        #expect(milliseconds(since: start) < 500, "a job queued during the idle work should start within a step")
        stepsBeforeDone.store(0, ordering: .relaxed)  // the scheduler's thread outlives the test
    }

    /// Two threads, two groups: while a job holds group 0, the free thread takes the lane of
    /// group 1 that came after a second lane of group 0, instead of waiting on group 0's state.
    @Test func aFreeThreadTakesAnotherGroupsLaneBeforeOneOfABusyGroup() {
        let scheduler = ScriptScheduler(width: 2, slice: .seconds(30), groupSlice: .seconds(30))
        let journal = Journal()
        let (holding, release, otherGroupRan, done) = (Gate(), Gate(), Gate(), Gate())
        let first = ScriptScheduler.Lane(group: 0)
        let second = ScriptScheduler.Lane(group: 0)
        let other = ScriptScheduler.Lane(group: 1)
        scheduler.enqueue({
            journal.note("group 0, first: start")
            holding.open()
            release.wait()
            journal.note("group 0, first: end")
        }, on: first)
        #expect(holding.wait())
        scheduler.enqueue({
            journal.note("group 0, second")
            done.open()
        }, on: second)
        scheduler.enqueue({
            journal.note("group 1")
            otherGroupRan.open()
        }, on: other)
        #expect(otherGroupRan.wait(), "the lane of the free group waited behind the busy group")
        release.open()
        #expect(done.wait())
        #expect(journal.entries == ["group 0, first: start", "group 1", "group 0, first: end", "group 0, second"])
    }

    /// A job that holds its group for longer than a group slice while other lanes of the
    /// group wait no longer holds it: the scripts sharing its state get a thread (in a
    /// worker, such a job is waiting in a host call, which lets the state go, or hands the
    /// state over from its hook after the same time).
    @Test func aLongJobLetsItsGroupsOtherLanesRunAfterAGroupSlice() {
        let scheduler = ScriptScheduler(width: 2, slice: .seconds(30), groupSlice: .milliseconds(20))
        let journal = Journal()
        let (holding, release, done) = (Gate(), Gate(), Gate())
        let long = ScriptScheduler.Lane(group: 0)
        let waiting = ScriptScheduler.Lane(group: 0)
        scheduler.enqueue({
            holding.open()
            release.wait()
            journal.note("long: end")
        }, on: long)
        #expect(holding.wait())
        let start = Deadline.now
        scheduler.enqueue({
            journal.note("same group")
            done.open()
        }, on: waiting)
        #expect(done.wait(seconds: 5), "the group's other lane never ran while the long job went on")
        #expect(milliseconds(since: start) < 2000)
        release.open()
        #expect(journal.entries.first == "same group")
    }

    /// One lane's jobs run one at a time, in order, whatever the groups around them do.
    @Test func aLanesJobsRunInOrder() {
        let scheduler = ScriptScheduler(width: 2, slice: .seconds(30))
        let journal = Journal()
        let done = Gate()
        let lanes = (0..<4).map { ScriptScheduler.Lane(group: $0 % 2) }
        final class Overlap: Sendable {
            let running = Atomic<Int>(0)
            let seen = Atomic<Bool>(false)
        }
        let overlap = Overlap()
        for job in 0..<20 {
            for (number, lane) in lanes.enumerated() {
                scheduler.enqueue({
                    if number == 0 {
                        if overlap.running.add(1, ordering: .relaxed).newValue > 1 { overlap.seen.store(true, ordering: .relaxed) }
                        journal.note("\(job)")
                        overlap.running.subtract(1, ordering: .relaxed)
                        if job == 19 { done.open() }
                    }
                }, on: lane)
            }
        }
        #expect(done.wait())
        let overlapped = overlap.seen.load(ordering: .relaxed)
        #expect(!overlapped)
        #expect(journal.entries == (0..<20).map(String.init))
    }
}
