#if canImport(Glibc)
import Glibc
#endif
import Locking
import Synchronization

/// A loaded script: which state, in which worker.
public struct ScriptHandle: Sendable, Hashable {
    public let id: UInt32
    let slot: Int
}

/// One of the calls `LuaEngine.callAll` makes.
public struct ScriptCall: Sendable {
    public var script: ScriptHandle
    public var entry: String
    public var arguments: [LuaValue]
    /// Arguments encoded ahead, passed after `arguments`.
    public var encodedArguments: EncodedLuaValues?

    public init(_ script: ScriptHandle, _ entry: String, _ arguments: [LuaValue] = [],
                encodedArguments: EncodedLuaValues? = nil) {
        self.script = script
        self.entry = entry
        self.arguments = arguments
        self.encodedArguments = encodedArguments
    }
}

/// The outcomes of `LuaEngine.callAll` in the order the calls answer, each with its call's
/// index; values are decoded as they are taken, on the taker's thread.
public struct CallOutcomes: AsyncSequence, Sendable {
    public typealias Element = (index: Int, outcome: CallOutcome)

    /// Holds the channel; when the last copy of this and its iterators goes, the calls not
    /// answered are cancelled.
    fileprivate let owner: Abandonment
    fileprivate let memoryLimit: Int

    public struct AsyncIterator: AsyncIteratorProtocol {
        fileprivate let owner: Abandonment
        fileprivate let memoryLimit: Int

        public mutating func next() async -> Element? {
            await next(isolation: nil)
        }

        public mutating func next(isolation actor: isolated (any Actor)?) async -> Element? {
            guard let (index, outcome) = await owner.channel.next(isolation: actor) else { return nil }
            return (index, outcome.decoded(memoryLimit: memoryLimit))
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(owner: owner, memoryLimit: memoryLimit)
    }
}

/// Carries `callAll`'s answers from the readers of the workers to the task that iterates
/// them. In place of an `AsyncStream`, whose generic storage looks up type metadata at
/// every element (a quarter of the supervisor's time in a burst of 100 trivial calls).
///
/// Once the iteration ends early (the sequence and its iterators are gone) or its task is
/// cancelled, the calls not answered yet are cancelled and later answers dropped.
private final class OutcomeChannel: Sendable {
    private struct State {
        var answers = FirstInFirstOut<(Int, RawOutcome)>()
        var unanswered: Int
        var waiting: UnsafeContinuation<(Int, RawOutcome)?, Never>?
        var cancelled = false
        /// Cancels the calls in the workers; set once they are all sent.
        var cancelCalls: (@Sendable () -> Void)?
    }

    private let state: PlainLock<State>

    init(count: Int) { state = PlainLock(State(unanswered: count)) }

    func setCancellation(_ cancelCalls: @escaping @Sendable () -> Void) {
        state.withLock { $0.cancelCalls = cancelCalls }
    }

    /// Takes one call's answer, from any thread; returns the wake-up of the waiting task, if
    /// one waits, for the caller to run once it has delivered all it has.
    func deliver(_ index: Int, _ outcome: RawOutcome) -> WorkerSlot.WakeUp? {
        let waiting = state.withLock { state -> UnsafeContinuation<(Int, RawOutcome)?, Never>? in
            guard !state.cancelled else { return nil }
            state.unanswered -= 1
            guard let waiting = state.waiting else {
                state.answers.append((index, outcome))
                return nil
            }
            state.waiting = nil
            return waiting
        }
        guard let waiting else { return nil }
        return { waiting.resume(returning: (index, outcome)) }
    }

    /// The next answer; nil once every call answered or the iteration was cancelled.
    func next(isolation actor: isolated (any Actor)?) async -> (Int, RawOutcome)? {
        await withTaskCancellationHandler {
            await withUnsafeContinuation(isolation: actor) { continuation in
                let ready = state.withLock { state -> (Int, RawOutcome)?? in
                    if let answer = state.answers.removeFirst() { return .some(answer) }
                    if state.unanswered == 0 || state.cancelled { return .some(nil) }
                    state.waiting = continuation
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            cancel()
        }
    }

    /// Stops the calls not answered yet and ends the iteration.
    func cancel() {
        let (waiting, cancelCalls) = state.withLock { state in
            guard !state.cancelled, state.unanswered > 0 else {
                return (UnsafeContinuation<(Int, RawOutcome)?, Never>?.none, (@Sendable () -> Void)?.none)
            }
            state.cancelled = true
            defer { state.waiting = nil }
            return (state.waiting, state.cancelCalls)
        }
        waiting?.resume(returning: nil)
        cancelCalls?()
    }
}

/// Cancels a `callAll`'s unanswered calls when the last copy of its sequence and iterators
/// goes away, as leaving a `for await` loop early does.
private final class Abandonment: Sendable {
    let channel: OutcomeChannel
    init(_ channel: OutcomeChannel) { self.channel = channel }
    deinit { channel.cancel() }
}

/// The supervisor: runs scripts in worker processes under hard deadlines and memory caps.
///
/// Each script runs, with globals and a memory cap of its own, in a Lua state it shares
/// with other scripts of one of `workerCount` worker processes (`SandboxGroup`). A
/// call's deadline is kept twice: the count hook stops Lua code at the deadline, and if
/// the call has still not answered `killGrace` later (a long C call, a runaway pattern),
/// the worker is killed with SIGKILL, replaced, and its scripts reloaded. The overrunning
/// call fails with `deadlineExceeded`; calls on other workers carry on. The supervisor
/// never blocks on a worker: requests are written without waiting and answers are read
/// on a thread of their own.
public final class LuaEngine: Sendable {
    public struct Configuration: Sendable {
        /// The worker executable: one whose `main` calls `SandboxWorker.run(modules:)`.
        public var workerExecutable: String
        public var workerCount: Int
        /// Cap on each script state's allocations.
        public var memoryLimit: Int
        /// Cap on a worker process's resident memory. Its scripts' allocations together are
        /// capped at this less `hostMemoryReserve` (`scriptsMemoryLimit`), exactly, as each
        /// script's are; the reserve is for the worker's code and what its host libraries use
        /// (a page being parsed, a transfer). A worker found past the whole cap (checked every
        /// second while it has calls) is replaced, failing the calls it had.
        public var workerMemoryLimit: Int
        /// The deadline of loads, and of calls made with `.default`.
        public var defaultDeadline: Duration
        /// How long after a deadline a call that has not answered is stopped by killing its
        /// worker (at most 250 ms).
        public var killGrace: Duration
        /// How long a cancelled call may take to stop before its worker is killed: a host call
        /// notices a cancel within a second (libcurl's progress callback), a Lua loop at its
        /// next hook; longer means a C function that will not return.
        public var cancelGrace: Duration
        /// Trusted Lua run in every state before the script (see `sbx_run_prelude`).
        public var prelude: ScriptSource?

        public init(workerExecutable: String, workerCount: Int = 2, memoryLimit: Int = 32 << 20,
                    workerMemoryLimit: Int = 160 << 20,
                    defaultDeadline: Duration = .seconds(45), killGrace: Duration = .milliseconds(200),
                    cancelGrace: Duration = .seconds(5), prelude: ScriptSource? = nil) {
            self.workerExecutable = workerExecutable
            self.workerCount = workerCount
            self.memoryLimit = memoryLimit
            self.workerMemoryLimit = workerMemoryLimit
            self.defaultDeadline = defaultDeadline
            self.killGrace = min(killGrace, .milliseconds(250))
            self.cancelGrace = cancelGrace
            self.prelude = prelude
        }

        /// What a worker keeps of `workerMemoryLimit` for its code and its host libraries.
        public static let hostMemoryReserve = 48 << 20

        /// The cap on what a worker's scripts hold together: at least one script's cap.
        public var scriptsMemoryLimit: Int { max(memoryLimit, workerMemoryLimit - Self.hostMemoryReserve) }

        /// The path of `name` in the directory of the running executable, where SwiftPM
        /// puts every product of a package.
        public static func executableBesideCurrent(named name: String) -> String {
            var path = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
            let length = readlink("/proc/self/exe", &path, Int(PATH_MAX))
            guard length > 0 else { return name }
            let current = String(decoding: path[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            guard let slash = current.lastIndex(of: "/") else { return name }
            return current[...slash] + name
        }
    }

    public let configuration: Configuration
    private let slots: [WorkerSlot]
    private let nextScriptID = Atomic<UInt32>(0)
    private let callCount = Atomic<Int>(0)

    /// Starts a worker of `executable` now, for the next engine of this process with that
    /// executable to take instead of starting one. A command line that will make an engine
    /// calls it first, so the worker starts while the command parses its arguments and reads
    /// its scripts instead of after. A worker no engine takes ends with the process: it reads
    /// end of file on its socket, as every worker of an ended supervisor does. Call it from a
    /// thread that lives as long as the process, such as the main thread of a synchronous
    /// `main`: a worker dies with the thread that started it (PR_SET_PDEATHSIG).
    public static func startWorkerAhead(executable: String) {
        WorkerProcess.startAhead(executable: executable)
    }

    /// Starts the worker processes.
    public init(_ configuration: Configuration) throws(LuaEngineError) {
        guard configuration.workerCount >= 1 else { throw LuaEngineError("an engine needs at least one worker") }
        self.configuration = configuration
        var slots: [WorkerSlot] = []
        for index in 0..<configuration.workerCount {
            do {
                slots.append(try WorkerSlot(index: index, configuration: configuration))
            } catch {
                slots.forEach { $0.stop(waitingForTheReader: true) }
                throw error
            }
        }
        self.slots = slots
    }

    // Not waiting here: the last reference may go on a reader's own thread.
    deinit { slots.forEach { $0.stop(waitingForTheReader: false) } }

    /// Loads a script into the least busy worker and runs its main chunk.
    public func load(_ source: ScriptSource) async throws(LuaScriptError) -> ScriptHandle {
        let handle = newHandle()
        try await install(source, as: handle)
        return handle
    }

    /// Loads a script, as `load` does, and calls `entry` in it once it has loaded, with the
    /// default deadline: one round trip to the worker, as the call goes in the same write as
    /// the load and the worker runs a script's frames in the order they come.
    public func load(_ source: ScriptSource, thenCalling entry: String) async throws(LuaScriptError) -> (ScriptHandle, CallOutcome) {
        let handle = newHandle()
        callCount.add(1, ordering: .relaxed)
        let deadline = Deadline.after(configuration.defaultDeadline)
        let call = try Self.callFrame(ScriptCall(handle, entry), deadline: deadline, cpuLimit: nil)
        let outcomes = await slots[handle.slot].perform(
            [(.load(script: handle.id, source: source, deadline: deadline.nanoseconds), (handle.id, source)), (call, nil)],
            deadline: deadline)
        _ = try outcomes[0].decoded(memoryLimit: configuration.memoryLimit).get()
        return (handle, outcomes[1].decoded(memoryLimit: configuration.memoryLimit))
    }

    /// A new script's handle, in the worker with the fewest scripts.
    private func newHandle() -> ScriptHandle {
        let id = nextScriptID.add(1, ordering: .relaxed).newValue
        let slot = slots.min { $0.scriptCount < $1.scriptCount }!
        return ScriptHandle(id: id, slot: slot.index)
    }

    /// Loads a new version of a script; if it fails to load, the old version keeps running.
    public func replace(_ script: ScriptHandle, with source: ScriptSource) async throws(LuaScriptError) {
        try await install(source, as: script)
    }

    private func install(_ source: ScriptSource, as script: ScriptHandle) async throws(LuaScriptError) {
        let deadline = Deadline.after(configuration.defaultDeadline)
        let outcome = await slots[script.slot].perform(
            .load(script: script.id, source: source, deadline: deadline.nanoseconds),
            deadline: deadline, installing: (script.id, source))
        _ = try outcome.decoded(memoryLimit: configuration.memoryLimit).get()
    }

    /// Calls `entry` in the script (see `SandboxedState.call`) and returns what it produced.
    /// `cpuLimit` bounds the CPU time the call may use, whatever its deadline (a call with no
    /// deadline, say); past it the call fails with `cpuLimit`, stopped by the count hook in
    /// Lua code, or by ending its worker in a C function (after `killGrace`).
    public func call(_ script: ScriptHandle, _ entry: String, _ arguments: [LuaValue] = [],
                     deadline: CallDeadline = .default, cpuLimit: Duration? = nil) async -> CallOutcome {
        callCount.add(1, ordering: .relaxed)
        let resolved = resolve(deadline)
        let frame: WorkerFrame
        do throws(LuaScriptError) {
            frame = try Self.callFrame(ScriptCall(script, entry, arguments), deadline: resolved, cpuLimit: cpuLimit)
        } catch {
            return CallOutcome(result: .failure(error))
        }
        return await slots[script.slot].perform(frame, deadline: resolved, installing: nil)
            .decoded(memoryLimit: configuration.memoryLimit)
    }

    /// Makes every call at once and yields each outcome as its call answers, with the call's
    /// index in `calls`. Ending the iteration early, or cancelling the task that iterates,
    /// cancels the calls that have not answered.
    public func callAll(_ calls: [ScriptCall], deadline: CallDeadline = .default, cpuLimit: Duration? = nil) -> CallOutcomes {
        callAll(count: calls.count, deadline: deadline, cpuLimit: cpuLimit) { calls[$0] }
    }

    /// `callAll` of the calls `call(0)` to `call(count - 1)`, each built just before it is
    /// sent: the first calls go out at once, and a worker runs them while the rest are
    /// built and encoded. A worker's calls go out in writes of 1, 2, 4, 8, then 16 calls.
    /// Every call gets the `shared` values after its own arguments; they are encoded once
    /// for all the calls (each call's state still gets a copy of its own).
    public func callAll(count: Int, sharing shared: [LuaValue] = [], deadline: CallDeadline = .default,
                        cpuLimit: Duration? = nil, _ call: (Int) -> ScriptCall) -> CallOutcomes {
        let channel = OutcomeChannel(count: count)
        let outcomes = CallOutcomes(owner: Abandonment(channel), memoryLimit: configuration.memoryLimit)
        guard count > 0 else { return outcomes }
        callCount.add(count, ordering: .relaxed)
        let sharedEncoding: EncodedLuaValues
        do throws(LuaScriptError) {
            sharedEncoding = try LuaValueCodec.encode(values: shared)
        } catch {
            for index in 0..<count { channel.deliver(index, RawOutcome(error: error))?() }
            return outcomes
        }
        let deliver: @Sendable (Int, RawOutcome) -> WorkerSlot.WakeUp? = { channel.deliver($0, $1) }
        let resolved = resolve(deadline)
        var unsent: [Int: [(index: Int, frame: WorkerFrame, installing: (UInt32, ScriptSource)?)]] = [:]
        var chunkSizes: [Int: Int] = [:]
        var submitted: [(slot: WorkerSlot, requests: [UInt64])] = []
        func send(_ slot: Int) {
            guard let frames = unsent.removeValue(forKey: slot), !frames.isEmpty else { return }
            submitted.append((slots[slot], slots[slot].submit(frames, deadline: resolved, deliver: deliver)))
            chunkSizes[slot] = min(2 * (chunkSizes[slot] ?? 1), 16)
        }
        for index in 0..<count {
            let made = call(index)
            do throws(LuaScriptError) {
                let slot = made.script.slot
                unsent[slot, default: []].append(
                    (index, try Self.callFrame(made, sharing: sharedEncoding, deadline: resolved, cpuLimit: cpuLimit), nil))
                if unsent[slot]!.count >= chunkSizes[slot, default: 1] { send(slot) }
            } catch {
                deliver(index, RawOutcome(error: error))?()
            }
        }
        for slot in Array(unsent.keys) { send(slot) }
        channel.setCancellation { [submitted] in
            for (slot, requests) in submitted { slot.cancel(requests) }
        }
        return outcomes
    }

    private func resolve(_ deadline: CallDeadline) -> Deadline? {
        switch deadline {
        case .default: .after(configuration.defaultDeadline)
        case .after(let duration): .after(duration)
        case .unlimited: nil
        }
    }

    private static func callFrame(_ call: ScriptCall, sharing shared: EncodedLuaValues? = nil,
                                  deadline: Deadline?, cpuLimit: Duration?) throws(LuaScriptError) -> WorkerFrame {
        let encoded = [call.encodedArguments, shared].compactMap { $0 }
        let arguments = encoded.isEmpty
            ? try LuaValueCodec.encode(tuple: call.arguments)
            : try LuaValueCodec.encode(tuple: call.arguments, followedBy: encoded)
        return .call(script: call.script.id, entry: call.entry, arguments: arguments, deadline: deadline?.nanoseconds ?? 0,
                     cpuLimit: cpuLimit.map { max($0.nanoseconds, 1) } ?? 0)
    }

    public func unload(_ script: ScriptHandle) {
        slots[script.slot].unload(script.id)
    }

    /// Stops every worker; calls in flight fail with `workerLost`.
    /// Ends the workers and waits until nothing of the engine runs on another thread, so a
    /// process can exit right after it (a reader still ending, with the engine's last
    /// reference, crashed `connect` at exit now and then).
    public func shutdown() {
        slots.forEach { $0.stop(waitingForTheReader: true) }
    }

    /// Whether workers' resident size is checked against `workerMemoryLimit`: not under
    /// AddressSanitizer or ThreadSanitizer, whose shadow memory counts as resident (a worker
    /// under ThreadSanitizer holds over 200 MiB); the exact cap on the scripts' memory holds
    /// either way.
    package static let checksResidentSize = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "__asan_init") == nil
        && dlsym(UnsafeMutableRawPointer(bitPattern: 0), "__tsan_init") == nil

    /// How many calls into scripts the engine has made (for tests that count what code ran).
    public var callsMade: Int { callCount.load(ordering: .relaxed) }

    /// How many scripts' states the workers hold (for tests that count what was built).
    public var scriptsLoaded: Int { slots.reduce(0) { $0 + $1.loadedScriptCount } }

    /// The worker processes' ids, in slot order (for monitoring and tests).
    public var workerProcessIDs: [Int32] { slots.map(\.processID) }

    /// Each worker process's resident memory, in slot order; nil for one that is not running
    /// or whose size cannot be read.
    public var workerResidentBytes: [Int?] { slots.map(\.residentBytes) }

    /// How many workers were replaced since the engine started, by cause.
    public var workerReplacements: [WorkerReplacementCause: Int] {
        slots.reduce(into: [:]) { total, slot in total.merge(slot.replacements) { $0 + $1 } }
    }

    /// Requests written to the workers and not yet answered. Tests wait on it for a call to
    /// have reached its worker (before they cancel it, kill the worker or shut down), since
    /// a sleep only hopes it has.
    package var requestsInFlight: Int { slots.reduce(0) { $0 + $1.requestsInFlight } }
}

/// Why the engine replaced a worker process.
public enum WorkerReplacementCause: String, Sendable, CaseIterable {
    /// A call there overran its deadline and was stopped by ending the worker.
    case deadline
    /// A cancelled call there went on past `cancelGrace`.
    case cancelIgnored = "cancel_ignored"
    /// The worker was stopped (SIGSTOP, a debugger).
    case stopped
    /// The worker's resident memory passed `workerMemoryLimit`.
    case memory
    /// The worker ended itself over a call's CPU time spent in a C function.
    case cpuTime = "cpu_time"
    /// The worker ended for any other reason: a crash, a signal from outside, an exit.
    case crash
}
