#if canImport(Glibc)
import Glibc
#endif
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

    public static func run(modules: [HostModule]) -> Never {
        let arguments = CommandLine.arguments
        guard arguments.count == 3, arguments[1] == launchArgument, let parent = pid_t(arguments[2]) else {
            reportToStandardError("\(arguments.first ?? "worker"): this is a worker process for the Lua sandbox engine; the engine starts it, not a person.")
            exit(2)
        }
        // Die with the supervisor, whatever kills it; and check it did not die already.
        _ = sbx_die_with_parent()
        guard getppid() == parent else { exit(0) }
        signal(SIGPIPE, SIG_IGN)
        Worker(modules: modules).serve()
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
/// loads. Built on first use with the prelude configured then.
private final class Groups: Sendable {
    private let groups: PlainLock<[Int: SandboxGroup]> = PlainLock([:])
    let count: Int

    init(count: Int) { self.count = count }

    /// A step of each built state's idle work (see `SandboxGroup.tidyStep`).
    func tidyStep() -> ScriptScheduler.IdleProgress {
        let built = groups.withLock { Array($0.values) }
        let steps = built.map { $0.tidyStep() }
        if steps.contains(.more) { return .more }
        return steps.contains(.blocked) ? .blocked : .done
    }

    func group(_ index: Int, modules: [HostModule], prelude: ScriptSource?) throws(LuaScriptError) -> SandboxGroup {
        if let group = groups.withLock({ $0[index] }) { return group }
        // Built outside the lock (running the prelude takes a while); the first one kept wins.
        let built = try SandboxGroup(modules: modules, prelude: prelude, deadline: .after(Worker.reloadBudget))
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

private final class Worker: Sendable {
    let modules: [HostModule]
    let requests = PlainLock(RequestBook())
    let scheduler: ScriptScheduler
    let groups: Groups

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
        var configuration: (prelude: ScriptSource?, memoryLimit: Int) = (nil, 32 << 20)
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
                    case .configure(let prelude, let memoryLimit):
                        configuration = (prelude, Int(clamping: memoryLimit))
                    case .load(let script, let source, let deadline):
                        let host = scripts[script] ?? ScriptHost(group: Int(script) % groups.count)
                        scripts[script] = host
                        load(source, into: host, id: id, deadline: deadline, configuration: configuration)
                    case .call(let script, let entry, let arguments, let deadline):
                        guard let host = scripts[script] else {
                            respond(id, RawOutcome(unavailable: "the script is not loaded in this worker"), now: true)
                            continue
                        }
                        _ = requests.withLock { $0.queued.insert(id) }
                        call(entry, arguments, on: host, id: id, deadline: deadline, configuration: configuration)
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
                    case .outcome:
                        throw LuaValueCodec.MalformedError()
                    }
                }
            } catch {
                reportToStandardError("lua-sandbox-worker: malformed frame from the supervisor; exiting")
                exit(3)
            }
        }
    }

    private func load(_ source: ScriptSource, into host: ScriptHost, id: UInt64, deadline: Int64,
                      configuration: (prelude: ScriptSource?, memoryLimit: Int)) {
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
            self.respond(id, outcome)
        }, on: host.lane)
    }

    private func call(_ entry: String, _ arguments: [UInt8], on host: ScriptHost, id: UInt64, deadline: Int64,
                      configuration: (prelude: ScriptSource?, memoryLimit: Int)) {
        scheduler.enqueue({
            let startable = self.requests.withLock { book in
                book.queued.remove(id)
                guard book.cancelledBeforeStart.remove(id) == nil else { return false }
                if let state = host.state { book.running[id] = state.interruptHandle }
                return true
            }
            guard startable else { return self.respond(id, RawOutcome(error: LuaScriptError(.cancelled, "cancelled"))) }
            guard let state = host.state else {
                return self.respond(id, RawOutcome(unavailable: "the script failed to load"))
            }
            let outcome = state.callRaw(entry, encodedArguments: arguments,
                                        deadline: deadline == 0 ? nil : Deadline(nanoseconds: deadline))
            _ = self.requests.withLock { $0.running.removeValue(forKey: id) }
            self.respond(id, outcome)
            // After a memory or deadline error the script starts over from a fresh state,
            // built after answering and before the script's next call (in the same lane).
            if outcome.needsFreshState, let source = host.source,
               let fresh = try? self.freshState(for: host, configuration),
               fresh.loadRaw(source, deadline: .after(Self.reloadBudget)).succeeded {
                host.state = fresh
            }
        }, on: host.lane)
    }

    /// A new state for the script in its group, which is built with the configured prelude
    /// the first time.
    private func freshState(for host: ScriptHost, _ configuration: (prelude: ScriptSource?, memoryLimit: Int))
        throws(LuaScriptError) -> SandboxedState {
        let group = try groups.group(host.group, modules: modules, prelude: configuration.prelude)
        return try SandboxedState(memoryLimit: configuration.memoryLimit, in: group)
    }

    /// Answers a request: at once from the reader thread, else as `AnswerOutbox` batches.
    private func respond(_ id: UInt64, _ outcome: RawOutcome, now: Bool = false) {
        answers.send(WorkerFrame.outcome(outcome).encoded(id: id), now: now)
    }
}
