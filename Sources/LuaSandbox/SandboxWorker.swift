#if canImport(Glibc)
import Glibc
#endif
import Dispatch
internal import CLuaSandbox
import Locking

/// The main loop of a worker process: the supervisor's `LuaEngine` starts it and talks to
/// it over descriptor 3. Build an executable whose `main` calls `run(modules:)` with the
/// host modules its scripts need; the engine is configured with that executable's path.
public enum SandboxWorker {
    static let launchArgument = "--lua-sandbox-worker"
    static let descriptor: Int32 = 3

    /// Whether the engine started this process as a worker. An executable that is also a
    /// command line (and so serves as its own worker) checks this before parsing its
    /// arguments, and then calls `run(modules:)`.
    public static var isLaunchedAsWorker: Bool { CommandLine.arguments.dropFirst().first == launchArgument }

    /// `started`, when given, runs once the worker has started all its threads, before it
    /// reads its first frame: the place to start loading a library in the background, as a
    /// thread created during a `dlopen` waits for it (glibc holds its TLS lock throughout).
    /// With `expectedPrelude`, the prelude the supervisor's engine will most likely configure,
    /// the worker then builds the Lua state its first script will share (compiling and running
    /// that prelude) while the supervisor is still starting, instead of at the first load; a
    /// state built with another prelude than the one configured is dropped unused.
    public static func run(modules: [HostModule], expectedPrelude: ScriptSource? = nil,
                           started: (() -> Void)? = nil) -> Never {
        let arguments = CommandLine.arguments
        guard arguments.count == 3, arguments[1] == launchArgument, let parent = pid_t(arguments[2]) else {
            reportToStandardError("\(arguments.first ?? "worker"): this is a worker process for the Lua sandbox engine; the engine starts it, not a person.")
            exit(2)
        }
        // Die with the supervisor, whatever kills it; and check it did not die already.
        _ = sbx_die_with_parent()
        guard getppid() == parent else { exit(0) }
        // Before any credential reaches it: a crash must not write the venue's password to disk.
        _ = sbx_forbid_core_dumps()
        signal(SIGPIPE, SIG_IGN)
        let worker = Worker(modules: modules)
        if let started {
            worker.scheduler.startThreads()
            started()
        }
        if let expectedPrelude { worker.groups.buildSpare(modules: modules, prelude: expectedPrelude) }
        worker.serve()
        exit(0)
    }
}

private func reportToStandardError(_ line: String) {
    let bytes = Array((line + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
}

/// The worker's view of one script: its state, touched only by the jobs of its lane,
/// which run one at a time, and the group it runs in.
private final class ScriptHost: @unchecked Sendable {
    let lane: ScriptScheduler.Lane
    var state: SandboxedState?
    var source: ScriptSource?

    var group: Int { lane.group }

    init(group: Int) { lane = ScriptScheduler.Lane(group: group) }
}

/// The worker's shared Lua states: as many as the scheduler runs scripts at once, so
/// each thread can run a script of its own group; a script's place is fixed when it first
/// loads. Built on first use with the prelude configured then, or built ahead (`buildSpare`).
private final class Groups: Sendable {
    private let groups: PlainLock<[Int: SandboxGroup]> = PlainLock([:])
    /// A group built before any script needed one, and the prelude it ran: the first group
    /// needed with that prelude is this one.
    private let spare = PlainLock<(group: SandboxGroup, prelude: ScriptSource)?>(nil)
    let count: Int

    init(count: Int) { self.count = count }

    /// A step of each built state's idle work (see `SandboxGroup.tidyStep`).
    func tidyStep() -> ScriptScheduler.IdleProgress {
        let built = groups.withLock { Array($0.values) }
        let steps = built.map { $0.tidyStep() }
        if steps.contains(.more) { return .more }
        return steps.contains(.blocked) ? .blocked : .done
    }

    /// Builds a group with `prelude` for the first script to come, while the worker waits for
    /// its supervisor; a group that cannot be built now is built, or fails, when needed.
    func buildSpare(modules: [HostModule], prelude: ScriptSource) {
        guard let built = try? SandboxGroup(modules: modules, prelude: prelude, deadline: .after(Worker.reloadBudget)) else { return }
        spare.withLock { $0 = (built, prelude) }
    }

    func group(_ index: Int, modules: [HostModule], prelude: ScriptSource?) throws(LuaScriptError) -> SandboxGroup {
        if let group = groups.withLock({ $0[index] }) { return group }
        // A spare with another prelude is of no use to any group: it goes.
        let ready = spare.withLock { spare -> SandboxGroup? in
            defer { spare = nil }
            return spare?.prelude == prelude ? spare?.group : nil
        }
        // Built outside the lock (running the prelude takes a while); the first one kept wins.
        let built: SandboxGroup
        if let ready {
            built = ready
        } else {
            built = try SandboxGroup(modules: modules, prelude: prelude, deadline: .after(Worker.reloadBudget))
        }
        return groups.withLock { groups in
            if let group = groups[index] { return group }
            groups[index] = built
            return built
        }
    }
}

private struct RequestBook {
    /// Calls received and not yet started; a cancel for one of these stops it before it runs.
    var queued: Set<UInt64> = []
    var cancelledBeforeStart: Set<UInt64> = []
    var running: [UInt64: InterruptHandle] = [:]
}

/// Answers waiting to be written. A runner that goes straight on to another job leaves its
/// answer here for a moment, so a burst of calls answers in a few writes instead of one
/// each (every write wakes the supervisor's reader): the answers go out once `batch` are
/// waiting, when a runner has no job to take, and when the running call may take a while
/// (`sbx_set_stall_callback`: it waits for its group, calls the host, or has run 100 µs),
/// so none waits behind a long call. One thread writes at a time and then takes what
/// others queued meanwhile.
private final class AnswerOutbox: Sendable {
    private struct State {
        var queued: [UInt8] = []
        var count = 0
        var writing = false
    }

    static let batch = 4
    private let state = PlainLock(State())

    /// Queues an answer frame; writes what is queued when `now`, or once a batch waits.
    func send(_ frame: [UInt8], now: Bool) {
        let full = state.withLock { state in
            state.queued += frame
            state.count += 1
            return state.count >= Self.batch
        }
        if now || full { flush() }
    }

    /// Writes everything queued, waiting for a write under way on another thread, for a
    /// worker about to end itself (at most about a second).
    func flushCompletely() {
        for _ in 0..<1000 {
            flush()
            if state.withLock({ $0.count == 0 && !$0.writing }) { return }
            usleep(1000)
        }
    }

    func flush() {
        let writesNow = state.withLock { state in
            guard !state.writing, state.count > 0 else { return false }
            state.writing = true
            return true
        }
        guard writesNow else { return }
        while true {
            let bytes = state.withLock { state in
                defer {
                    state.queued = []
                    state.count = 0
                }
                state.writing = state.count > 0
                return state.queued
            }
            guard !bytes.isEmpty else { return }
            bytes.withUnsafeBytes { bytes in
                var offset = 0
                while offset < bytes.count {
                    let written = write(SandboxWorker.descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                    if written < 0, errno == EINTR { continue }
                    guard written > 0 else { exit(0) }  // the supervisor is gone
                    offset += written
                }
            }
        }
    }
}

/// The worker's answers; one per process, so the C stall callback can reach it.
private let answers = AnswerOutbox()

/// Ends the worker when a call with a CPU limit keeps its thread busy in a C function (a
/// pattern backtracking through a page) `grace` past the limit, where the count hook cannot
/// stop it: the call is answered so, and the worker exits, for the supervisor to replace it
/// and run its other calls again. Checks every `interval` while such calls run, else never.
private final class CPUWatch: Sendable {
    private struct Watched {
        let clock: clockid_t
        let startedAt: Int64
        let limit: Int64
    }

    static let grace: Int64 = 200_000_000
    static let interval: DispatchTimeInterval = .milliseconds(50)
    private let watched = PlainLock<[UInt64: Watched]>([:])
    // Dispatch sources are thread-safe; the type just predates Sendable.
    private nonisolated(unsafe) let timer: any DispatchSourceTimer

    init() {
        timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "lua-sandbox.cpu-watch"))
        timer.setEventHandler { [unowned self] in check() }
        timer.activate()
    }

    /// Watches the calling thread's CPU time for request `id` until `end(id)`.
    func begin(_ id: UInt64, limit: Int64) {
        var clock = clockid_t()
        guard pthread_getcpuclockid(pthread_self(), &clock) == 0 else { return }
        let startedAt = sbx_cpu_clock_ns(clock)
        watched.withLock { watched in
            watched[id] = Watched(clock: clock, startedAt: startedAt, limit: limit)
            if watched.count == 1 { timer.schedule(deadline: .now() + Self.interval, repeating: Self.interval) }
        }
    }

    func end(_ id: UInt64) {
        watched.withLock { watched in
            watched.removeValue(forKey: id)
            if watched.isEmpty { timer.schedule(deadline: .distantFuture, repeating: .never) }
        }
    }

    private func check() {
        let runaway = watched.withLock { watched in
            watched.first { _, call in sbx_cpu_clock_ns(call.clock) - call.startedAt > call.limit + Self.grace }?.key
        }
        guard let runaway else { return }
        answers.send(WorkerFrame.outcome(RawOutcome(error: LuaScriptError(
            .cpuLimit, "CPU time limit exceeded in a C function; stopped by ending its worker process"))).encoded(id: runaway),
                     now: true)
        answers.flushCompletely()
        _exit(WorkerProcess.stoppedARunawayCallStatus)
    }
}

private final class Worker: Sendable {
    let modules: [HostModule]
    let requests = PlainLock(RequestBook())
    let scheduler: ScriptScheduler
    let groups: Groups
    let cpuWatch = CPUWatch()

    /// Time allowed to rebuild a script's state after it overran or hit its memory cap;
    /// the script loaded within its deadline before, so this is generous.
    static let reloadBudget: Duration = .seconds(5)

    init(modules: [HostModule]) {
        self.modules = modules
        let width = Int(sbx_available_cores())
        let groups = Groups(count: width)
        self.groups = groups
        // Scripts' standard globals are restored and garbage is collected while the worker
        // is quiet, so a burst of calls (a join's evaluate to every helper) finds both done.
        scheduler = ScriptScheduler(width: width, idleWork: { groups.tidyStep() }, beforeWaiting: { answers.flush() })
        sbx_set_stall_callback { answers.flush() }
    }

    /// Reads frames until the supervisor closes the socket. Each script's work runs in its
    /// own lane of the scheduler, so a slow script never holds up this loop or other scripts.
    func serve() {
        var scripts: [UInt32: ScriptHost] = [:]
        var configuration = Configuration()
        var assembler = FrameAssembler()
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = receive(SandboxWorker.descriptor, into: &chunk)
            guard count > 0 else { return }
            chunk.withUnsafeBytes { assembler.append(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
            do {
                while let body = try assembler.next() {
                    let (id, frame) = try WorkerFrame.decode(body)
                    switch frame {
                    case .configure(let prelude, let memoryLimit, let workerMemoryLimit):
                        configuration = Configuration(prelude: prelude, memoryLimit: Int(clamping: memoryLimit),
                                                      workerMemoryLimit: Int(clamping: workerMemoryLimit))
                        sbx_set_worker_memory_limit(Int(clamping: workerMemoryLimit))
                    case .load(let script, let source, let deadline):
                        let host = scripts[script] ?? ScriptHost(group: Int(script) % groups.count)
                        scripts[script] = host
                        load(source, into: host, id: id, deadline: deadline, configuration: configuration)
                    case .call(let script, let entry, let arguments, let deadline, let cpuLimit):
                        guard let host = scripts[script] else {
                            respond(id, RawOutcome(unavailable: "the script is not loaded in this worker"), configuration, now: true)
                            continue
                        }
                        _ = requests.withLock { $0.queued.insert(id) }
                        call(entry, arguments, on: host, id: id, deadline: deadline, cpuLimit: cpuLimit,
                             configuration: configuration)
                    case .unload(let script):
                        if let host = scripts.removeValue(forKey: script) {
                            scheduler.enqueue({ host.state = nil }, on: host.lane)
                        }
                    case .cancel:
                        requests.withLock { book in
                            if let handle = book.running[id] {
                                handle.interrupt()
                            } else if book.queued.contains(id) {
                                book.cancelledBeforeStart.insert(id)
                            }
                        }
                    case .survey:
                        // Answered from this thread, which no call holds: the calls queued,
                        // and those whose group another call holds (in a C function, for good).
                        let unstarted = requests.withLock { book in
                            Array(book.queued) + book.running.filter { $0.value.isWaitingForGroup }.map(\.key)
                        }
                        answers.send(WorkerFrame.unstarted(ids: unstarted).encoded(id: id), now: true)
                    case .outcome, .unstarted:
                        throw LuaValueCodec.MalformedError()
                    }
                }
            } catch {
                reportToStandardError("lua-sandbox-worker: malformed frame from the supervisor; exiting")
                exit(3)
            }
        }
    }

    /// What the supervisor's first frame set.
    struct Configuration {
        var prelude: ScriptSource?
        var memoryLimit = 32 << 20
        var workerMemoryLimit = Int.max
    }

    private func load(_ source: ScriptSource, into host: ScriptHost, id: UInt64, deadline: Int64,
                      configuration: Configuration) {
        scheduler.enqueue({
            let deadline = deadline == 0 ? nil : Deadline(nanoseconds: deadline)
            let outcome: RawOutcome
            do {
                let state = try self.freshState(for: host, configuration)
                outcome = state.loadRaw(source, deadline: deadline)
                if outcome.succeeded {  // a failed replacement keeps the last good version
                    host.state = state
                    host.source = source
                }
            } catch {
                outcome = RawOutcome(error: error)
            }
            self.respond(id, outcome, configuration)
        }, on: host.lane)
    }

    private func call(_ entry: String, _ arguments: [UInt8], on host: ScriptHost, id: UInt64, deadline: Int64,
                      cpuLimit: Int64, configuration: Configuration) {
        scheduler.enqueue({
            let outcome = self.run(entry, arguments, on: host, id: id, deadline: deadline, cpuLimit: cpuLimit)
            self.respond(id, outcome, configuration)
            // After a memory, deadline or CPU error the script starts over from a fresh state,
            // built after answering and before the script's next call (in the same lane).
            guard outcome.needsFreshState, let source = host.source else { return }
            if let fresh = self.reloaded(source, for: host, configuration) {
                host.state = fresh
            } else if outcome.hitWorkerMemoryLimit {
                // The worker's cap may leave no room for a new state beside the old one: the
                // old one goes first, and its memory is collected as the new one needs it.
                host.state = nil
                host.state = self.reloaded(source, for: host, configuration)
            }
        }, on: host.lane)
    }

    /// Runs a call in the script's state. A method of its own, so no reference to the state
    /// outlives the call (the state is closed when the script's host lets it go).
    private func run(_ entry: String, _ arguments: [UInt8], on host: ScriptHost, id: UInt64, deadline: Int64,
                     cpuLimit: Int64) -> RawOutcome {
        let startable = requests.withLock { book in
            book.queued.remove(id)
            guard book.cancelledBeforeStart.remove(id) == nil else { return false }
            if let state = host.state { book.running[id] = state.interruptHandle }
            return true
        }
        guard startable else { return RawOutcome(error: LuaScriptError(.cancelled, "cancelled")) }
        guard let state = host.state else { return RawOutcome(unavailable: "the script failed to load") }
        if cpuLimit > 0 { cpuWatch.begin(id, limit: cpuLimit) }
        let outcome = state.callRaw(entry, encodedArguments: arguments,
                                    deadline: deadline == 0 ? nil : Deadline(nanoseconds: deadline),
                                    cpuLimit: cpuLimit > 0 ? .nanoseconds(cpuLimit) : nil)
        if cpuLimit > 0 { cpuWatch.end(id) }
        _ = requests.withLock { $0.running.removeValue(forKey: id) }
        return outcome
    }

    /// A fresh state with `source` loaded, or nil if it cannot be built or does not load.
    private func reloaded(_ source: ScriptSource, for host: ScriptHost, _ configuration: Configuration) -> SandboxedState? {
        guard let fresh = try? freshState(for: host, configuration),
              fresh.loadRaw(source, deadline: .after(Self.reloadBudget)).succeeded else { return nil }
        return fresh
    }

    /// A new state for the script in its group, which is built with the configured prelude
    /// the first time.
    private func freshState(for host: ScriptHost, _ configuration: Configuration) throws(LuaScriptError) -> SandboxedState {
        let group = try groups.group(host.group, modules: modules, prelude: configuration.prelude)
        return try SandboxedState(memoryLimit: configuration.memoryLimit, in: group)
    }

    /// Answers a request: at once from the reader thread, else as `AnswerOutbox` batches.
    /// The worker's own memory error is worded here, where its limit is known.
    private func respond(_ id: UInt64, _ outcome: RawOutcome, _ configuration: Configuration, now: Bool = false) {
        var outcome = outcome
        if outcome.hitWorkerMemoryLimit {
            outcome.message = "memory limit exceeded: this worker's scripts together hold its limit of "
                + formatBytes(configuration.workerMemoryLimit)
        }
        answers.send(WorkerFrame.outcome(outcome).encoded(id: id), now: now)
    }
}
