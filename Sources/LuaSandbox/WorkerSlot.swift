#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Locking
import Synchronization
internal import CLuaSandbox

/// One worker process, its replacements, and the requests in flight to it.
final class WorkerSlot: Sendable {
    /// Wakes a task waiting for answers. The reader runs these once it has handed on every
    /// answer of a read: woken at once, a task would take the core from the reader (the
    /// wakee preempts it) to take a single answer, and sleep again for the next.
    typealias WakeUp = @Sendable () -> Void

    struct Pending {
        /// Takes the answer, and returns the wake-up to run once the answers at hand are
        /// all taken; nil for the slot's own reloads and for cancelled requests.
        let answer: (@Sendable (RawOutcome) -> WakeUp?)?

        /// Hands the answer on and wakes its taker at once.
        func answerNow(_ outcome: RawOutcome) { answer?(outcome)?() }
        /// When the worker is killed if the request has not been answered.
        var killAt: Int64?
        /// A script version to remember for reloads once it loads.
        var installing: (id: UInt32, source: ScriptSource)? = nil
        /// The request's frame, sent again to a replacement worker when the request only
        /// shared its worker with what ended it; nil for requests never sent again.
        var frame: [UInt8]? = nil
        /// Its deadline (monotonic nanoseconds): past it, it is not sent again, unless it
        /// never ran (then it is sent again with the whole `budget` its deadline gave it).
        var deadline: Int64? = nil
        /// How long its deadline gave it when it was sent (nanoseconds).
        var budget: Int64? = nil
        /// Why it was sent again; a request is sent again at most once.
        var rerunReason: String? = nil
        /// Cancelled, and answered already: the worker is killed if it has not stopped the
        /// request by `killAt` (a C function that runs on cannot be interrupted).
        var isCancelled = false
    }

    struct State {
        var process: WorkerProcess?
        var generation = 0
        var pending: [UInt64: Pending] = [:]
        var scripts: [UInt32: ScriptSource] = [:]
        var stopped = false
        var failure: String?
        var watchdogAt: Int64?
        var replacements: [WorkerReplacementCause: Int] = [:]
        /// Before a worker is ended for calls past their deadlines, it is asked which calls
        /// have not run (`WorkerFrame.survey`): until when its answer is waited for, and the
        /// answer.
        var surveyUntil: Int64?
        var unstarted: Set<UInt64>?
    }

    let index: Int
    private let configuration: LuaEngine.Configuration
    private let state: PlainLock<State>
    private let requestIDs = Atomic<UInt64>(0)
    private let readerQueue: DispatchQueue
    // Dispatch sources are thread-safe; the type just predates Sendable.
    private nonisolated(unsafe) let watchdog: any DispatchSourceTimer

    init(index: Int, configuration: LuaEngine.Configuration) throws(LuaEngineError) {
        self.index = index
        self.configuration = configuration
        let process = try WorkerProcess.spawn(executable: configuration.workerExecutable)
        _ = process.write(Self.configureFrame(configuration))
        state = PlainLock(State(process: process))
        readerQueue = DispatchQueue(label: "lua-sandbox.worker-reader.\(index)")
        watchdog = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "lua-sandbox.watchdog.\(index)"))
        watchdog.setEventHandler { [weak self] in self?.watchdogFired() }
        watchdog.activate()
        startReader(process, generation: 0)
    }

    private static func configureFrame(_ configuration: LuaEngine.Configuration) -> [UInt8] {
        WorkerFrame.configure(prelude: configuration.prelude, memoryLimit: UInt64(configuration.memoryLimit),
                              workerMemoryLimit: UInt64(configuration.scriptsMemoryLimit)).encoded(id: 0)
    }

    var scriptCount: Int { state.withLock { $0.scripts.count + $0.pending.count } }
    var loadedScriptCount: Int { state.withLock { $0.scripts.count } }
    var processID: Int32 { state.withLock { $0.process?.pid ?? 0 } }
    var requestsInFlight: Int { state.withLock { $0.pending.values.count { !$0.isCancelled } } }
    var residentBytes: Int? { state.withLock { $0.process }?.residentBytes }
    var replacements: [WorkerReplacementCause: Int] { state.withLock { $0.replacements } }

    func perform(_ frame: WorkerFrame, deadline: Deadline?, installing: (UInt32, ScriptSource)?) async -> RawOutcome {
        if Task.isCancelled { return RawOutcome(error: LuaScriptError(.cancelled, "cancelled")) }
        // Ids come from a counter of their own so the frame is encoded outside the lock.
        let id = requestIDs.add(1, ordering: .relaxed).newValue
        let bytes = frame.encoded(id: id)
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                send(bytes, [(id, Pending(answer: { outcome in { continuation.resume(returning: outcome) } },
                                          killAt: killAt(deadline), installing: installing, frame: bytes,
                                          deadline: deadline?.nanoseconds, budget: Self.budget(deadline)))])
            }
        } onCancel: {
            cancel([id])
        }
    }

    /// Sends `frames` in one write and returns their answers, in order, once all have come
    /// (`perform` of one frame, every command's, stays without the collecting).
    func perform(_ frames: [(frame: WorkerFrame, installing: (UInt32, ScriptSource)?)], deadline: Deadline?) async -> [RawOutcome] {
        if Task.isCancelled { return frames.map { _ in RawOutcome(error: LuaScriptError(.cancelled, "cancelled")) } }
        let answers = PlainLock([RawOutcome?](repeating: nil, count: frames.count))
        let sent = PlainLock<[UInt64]>([])
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<[RawOutcome], Never>) in
                let ids = submit(frames.enumerated().map { ($0.offset, $0.element.frame, $0.element.installing) },
                                 deadline: deadline) { index, outcome in
                    // The last answer wakes the caller with all of them.
                    let all: [RawOutcome]? = answers.withLock { answers in
                        answers[index] = outcome
                        return answers.contains { $0 == nil } ? nil : answers.compactMap { $0 }
                    }
                    guard let all else { return nil }
                    return { continuation.resume(returning: all) }
                }
                sent.withLock { $0 = ids }
                // A cancellation that came while they were sent found no ids to cancel.
                if Task.isCancelled { cancel(ids) }
            }
        } onCancel: {
            cancel(sent.withLock { $0 })
        }
    }

    /// Sends frames in one write and hands each answer to `deliver` with its index; returns
    /// the request ids, for `cancel`. A load frame carries its script, `installing`, which a
    /// replacement worker loads again.
    func submit(_ frames: [(index: Int, frame: WorkerFrame, installing: (UInt32, ScriptSource)?)], deadline: Deadline?,
                deliver: @escaping @Sendable (Int, RawOutcome) -> WakeUp?) -> [UInt64] {
        let killAt = killAt(deadline)
        let budget = Self.budget(deadline)
        var bytes: [UInt8] = []
        var requests: [(UInt64, Pending)] = []
        for (index, frame, installing) in frames {
            let id = requestIDs.add(1, ordering: .relaxed).newValue
            let encoded = frame.encoded(id: id)
            bytes += encoded
            requests.append((id, Pending(answer: { deliver(index, $0) }, killAt: killAt, installing: installing, frame: encoded,
                                         deadline: deadline?.nanoseconds, budget: budget)))
        }
        send(bytes, requests)
        return requests.map(\.0)
    }

    private func killAt(_ deadline: Deadline?) -> Int64? {
        deadline.map { $0.nanoseconds.addingReportingOverflow(configuration.killGrace.nanoseconds).partialValue }
    }

    private static func budget(_ deadline: Deadline?) -> Int64? {
        deadline.map { $0.nanoseconds.subtractingReportingOverflow(sbx_monotonic_ns()).partialValue }
    }

    /// Records the requests as pending and writes their frames, or answers them at once
    /// when no worker can take them.
    private func send(_ bytes: [UInt8], _ requests: [(UInt64, Pending)]) {
        let refused: String? = state.withLock { state in
            guard !state.stopped, let process = state.process else {
                return state.failure ?? "the engine has shut down"
            }
            for (id, pending) in requests {
                state.pending[id] = pending
                if let killAt = pending.killAt { scheduleWatchdog(killAt, &state) }
            }
            scheduleWatchdog(sbx_monotonic_ns() + Self.stoppedCheckInterval, &state)
            // A worker that does not take a frame is hung; its end fails these requests.
            if !process.write(bytes) { process.kill() }
            return nil
        }
        if let refused {
            for (_, pending) in requests { pending.answerNow(RawOutcome(workerLost: refused)) }
        }
    }

    /// Stops requests that have not answered; they answer `cancelled` at once.
    func cancel(_ ids: [UInt64]) {
        let cancelled = state.withLock { state -> [Pending] in
            let killAt = sbx_monotonic_ns() + configuration.cancelGrace.nanoseconds
            var cancelled: [Pending] = []
            var frames: [UInt8] = []
            for id in ids {
                guard let pending = state.pending[id], !pending.isCancelled else { continue }
                cancelled.append(pending)
                state.pending[id] = Pending(answer: nil, killAt: killAt, isCancelled: true)
                frames += WorkerFrame.cancel.encoded(id: id)
            }
            guard !cancelled.isEmpty else { return [] }
            scheduleWatchdog(killAt, &state)
            _ = state.process?.write(frames)
            return cancelled
        }
        for pending in cancelled { pending.answerNow(RawOutcome(error: LuaScriptError(.cancelled, "cancelled"))) }
    }

    func unload(_ script: UInt32) {
        state.withLock { state in
            state.scripts.removeValue(forKey: script)
            _ = state.process?.write(WorkerFrame.unload(script: script).encoded(id: 0))
        }
    }

    func stop(waitingForTheReader: Bool) {
        let (process, pending) = state.withLock { state in
            state.stopped = true
            defer { state.pending = [:] }
            return (state.process, state.pending)
        }
        watchdog.cancel()
        process?.kill()
        for request in pending.values {
            request.answerNow(RawOutcome(workerLost: "the engine has shut down"))
        }
        // The reader sees the killed worker's end, reaps it and returns; nothing replaces it.
        if waitingForTheReader { readerQueue.sync {} }
    }

    // MARK: reading answers, and replacing a worker that ends

    private func startReader(_ process: WorkerProcess, generation: Int) {
        readerQueue.async { [self] in
            process.readFrames { bodies in
                // The answers before a frame that is not one still count; the worker then ends.
                var outcomes: [(id: UInt64, outcome: RawOutcome)] = []
                outcomes.reserveCapacity(bodies.count)
                var unstarted: [UInt64]?
                var valid = true
                for body in bodies where valid {
                    switch try? WorkerFrame.decode(body) {
                    case (let id, .outcome(let outcome))?: outcomes.append((id, outcome))
                    case (_, .unstarted(let ids))?: unstarted = ids
                    default: valid = false
                    }
                }
                let answered = state.withLock { state -> [(Pending, RawOutcome)] in
                    guard state.generation == generation else { return [] }
                    if let unstarted, state.surveyUntil != nil {
                        state.unstarted = Set(unstarted)
                        scheduleWatchdog(sbx_monotonic_ns(), &state)  // the worker is ended now
                    }
                    return outcomes.compactMap { id, outcome in
                        guard let pending = state.pending.removeValue(forKey: id) else { return nil }
                        if let installing = pending.installing, outcome.succeeded {
                            state.scripts[installing.id] = installing.source
                        }
                        var outcome = outcome
                        outcome.rerunReason = pending.rerunReason
                        return (pending, outcome)
                    }
                }
                let wakeUps = answered.compactMap { pending, outcome in pending.answer?(outcome) }
                for wakeUp in wakeUps { wakeUp() }
                return valid
            }
            workerEnded(process, generation: generation)
        }
    }

    private func workerEnded(_ process: WorkerProcess, generation: Int) {
        process.kill()  // it may have closed its socket and still be running
        let ending = process.reap()
        let replaced = state.withLock { state -> Replacement? in
            guard state.generation == generation, !state.stopped else { return nil }  // already replaced
            // A worker that ended itself over one call's CPU time answered that call; the
            // others only shared its process. Any other end may have been any call's doing.
            return replaceWorker(&state, reason: "its worker process \(ending.description)",
                                 cause: ending.stoppedARunawayCall ? .cpuTime : .crash, rerunningTheRest: ending.stoppedARunawayCall)
        }
        replaced?.finish(self)
    }

    /// What replacing a worker leaves to do once the lock is released.
    struct Replacement {
        let lost: [Pending]
        let reason: String
        let process: WorkerProcess?
        let generation: Int

        func finish(_ slot: WorkerSlot) {
            if let process { slot.startReader(process, generation: generation) }
            for request in lost { request.answerNow(RawOutcome(workerLost: reason)) }
        }
    }

    /// Starts a new worker in place of one that is dead or killed. What was in flight on the
    /// old one is lost, or, when `rerunningTheRest` (the requests were not the cause of its
    /// end), sent again to the new one once, while their deadlines allow. Requests made
    /// from now on go to the new worker.
    private func replaceWorker(_ state: inout State, reason: String, cause: WorkerReplacementCause,
                               rerunningTheRest: Bool) -> Replacement {
        state.replacements[cause, default: 0] += 1
        let now = sbx_monotonic_ns()
        var lost: [Pending] = []
        var rerun: [(UInt64, Pending)] = []
        for (id, request) in state.pending {
            if rerunningTheRest, request.frame != nil, request.rerunReason == nil, (request.deadline ?? .max) > now {
                var again = request
                again.rerunReason = reason
                rerun.append((id, again))
            } else {
                lost.append(request)
            }
        }
        state.pending = [:]
        state.generation += 1
        state.watchdogAt = nil
        state.surveyUntil = nil
        state.unstarted = nil
        do {
            let replacement = try WorkerProcess.spawn(executable: configuration.workerExecutable)
            state.process = replacement
            reload(into: replacement, &state)
            for (id, request) in rerun {
                state.pending[id] = request
                if let killAt = request.killAt { scheduleWatchdog(killAt, &state) }
            }
            if !rerun.isEmpty {
                scheduleWatchdog(now + Self.stoppedCheckInterval, &state)
                _ = replacement.write(rerun.flatMap { $0.1.frame! })
            }
            return Replacement(lost: lost, reason: reason, process: replacement, generation: state.generation)
        } catch {
            state.process = nil
            state.failure = "no worker is running: \(error)"
            return Replacement(lost: lost + rerun.map(\.1), reason: reason, process: nil, generation: state.generation)
        }
    }

    /// Sends a new worker the configuration and every script it must hold again.
    private func reload(into process: WorkerProcess, _ state: inout State) {
        _ = process.write(Self.configureFrame(configuration))
        for (script, source) in state.scripts {
            let deadline = Deadline.after(configuration.defaultDeadline)
            let id = requestIDs.add(1, ordering: .relaxed).newValue
            let reloading = Pending(answer: nil, killAt: killAt(deadline))
            state.pending[id] = reloading
            if let killAt = reloading.killAt { scheduleWatchdog(killAt, &state) }
            _ = process.write(WorkerFrame.load(script: script, source: source, deadline: deadline.nanoseconds).encoded(id: id))
        }
    }

    // MARK: the watchdog: deadlines, cancels, stopped and oversized workers

    private func scheduleWatchdog(_ at: Int64, _ state: inout State) {
        if let current = state.watchdogAt, current <= at { return }
        state.watchdogAt = at
        let delay = max(0, at - sbx_monotonic_ns())
        watchdog.schedule(deadline: .now() + .nanoseconds(Int(clamping: delay)), repeating: .never)
    }

    /// How often a worker with calls in flight is checked for being stopped or past its
    /// memory cap: a stopped worker is noticed this soon, not at the calls' deadlines (45 s
    /// by default).
    static let stoppedCheckInterval: Int64 = 1_000_000_000
    /// How long a worker about to be ended is given to say which calls have not run; its
    /// reader thread, which answers, is never a call's.
    static let surveyWait: Int64 = 500_000_000

    private func watchdogFired() {
        let (overran, replaced) = state.withLock { state -> ([Pending], Replacement?) in
            state.watchdogAt = nil
            let now = sbx_monotonic_ns()
            let expired = state.pending.filter { ($0.value.killAt ?? .max) <= now }
            guard !expired.isEmpty else {
                guard !state.pending.isEmpty, let process = state.process else { return ([], nil) }
                if process.isStopped {
                    process.kill()  // its reader reaps it
                    return ([], replaceWorker(&state, reason: "its worker process was stopped (SIGSTOP or a debugger), so it was replaced",
                                              cause: .stopped, rerunningTheRest: true))
                }
                if LuaEngine.checksResidentSize, let resident = process.residentBytes, resident > configuration.workerMemoryLimit {
                    process.kill()
                    let reason = "its worker process held \(formatBytes(resident)), more than its limit of "
                        + "\(formatBytes(configuration.workerMemoryLimit)), so it was replaced"
                    return ([], replaceWorker(&state, reason: reason, cause: .memory, rerunningTheRest: false))
                }
                let next = state.pending.values.compactMap(\.killAt).min() ?? .max
                scheduleWatchdog(min(next, now + Self.stoppedCheckInterval), &state)
                return ([], nil)
            }
            let cancelIgnored = expired.values.allSatisfy(\.isCancelled)
            // Before it is ended, the worker says which calls have not run: those only waited
            // behind the one that overran (a C function holds their group's state for good),
            // and are sent again with their whole deadline, never reported past it.
            if !cancelIgnored, state.unstarted == nil, let process = state.process {
                let until = state.surveyUntil ?? now + Self.surveyWait
                if state.surveyUntil == nil {
                    state.surveyUntil = until
                    if !process.write(WorkerFrame.survey.encoded(id: 0)) { state.surveyUntil = now }
                }
                if now < until {
                    scheduleWatchdog(until, &state)
                    return ([], nil)
                }
            }
            let unstarted = state.unstarted ?? []
            var overran: [Pending] = []
            for (id, request) in expired {
                if unstarted.contains(id), !request.isCancelled {
                    // Left pending either way: renewed, it runs again; already run again once,
                    // replacing the worker fails it as lost, never as past its own deadline.
                    if request.rerunReason == nil, let budget = request.budget, let frame = request.frame,
                       let renewed = WorkerFrame.withDeadline(frame, now + budget) {
                        var again = request
                        again.deadline = now + budget
                        again.killAt = (now + budget).addingReportingOverflow(configuration.killGrace.nanoseconds).partialValue
                        again.frame = renewed
                        state.pending[id] = again
                    }
                } else {
                    state.pending.removeValue(forKey: id)
                    overran.append(request)
                }
            }
            state.process?.kill()  // its reader reaps it
            let reason = cancelIgnored
                ? "its worker was restarted because another call there went on \(configuration.cancelGrace) after it was cancelled"
                : "its worker was restarted because another call there overran its deadline"
            return (overran, replaceWorker(&state, reason: reason, cause: cancelIgnored ? .cancelIgnored : .deadline,
                                           rerunningTheRest: true))
        }
        for request in overran {
            request.answerNow(RawOutcome(
                error: LuaScriptError(.deadlineExceeded, "deadline exceeded; stopped by ending its worker process")))
        }
        replaced?.finish(self)
    }
}
