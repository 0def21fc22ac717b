internal import CLuaSandbox
import Locking

/// Source text of a script or prelude, with the name errors will show.
public struct ScriptSource: Sendable, Hashable {
    /// Lua's chunk name: `@path` for a file (errors say `path:line`), `=name` for others.
    public let chunkName: String
    public let text: [UInt8]

    /// A script read from `path`; errors will name the path.
    public init(path: String, text: String) {
        self.chunkName = "@" + path
        self.text = Array(text.utf8)
    }

    public init(chunkName: String, text: [UInt8]) {
        self.chunkName = chunkName
        self.text = text
    }
}

/// What a load or a call produced, with what the script logged on the way.
public struct CallOutcome: Sendable {
    public var result: Result<[LuaValue], LuaScriptError>
    public var logs: [LogRecord]
    /// Log lines refused by the per-call limits.
    public var droppedLogs: Int
    /// Set when the call was run again on a new worker process, after the one it first ran
    /// in ended through no doing of its own (another call there overran): why that one ended.
    public var rerunReason: String?

    public init(result: Result<[LuaValue], LuaScriptError>, logs: [LogRecord] = [], droppedLogs: Int = 0,
                rerunReason: String? = nil) {
        self.result = result
        self.logs = logs
        self.droppedLogs = droppedLogs
        self.rerunReason = rerunReason
    }

    /// The values, or the error.
    public func get() throws(LuaScriptError) -> [LuaValue] { try result.get() }
}

/// A load or call outcome as the C half produced it, values still encoded, so a worker
/// can forward it without decoding.
struct RawOutcome: Sendable {
    var status: Int32
    var results: [UInt8]
    var message: String
    var location: String
    var traceback: String
    var logs: [UInt8]
    var droppedLogs: UInt32
    /// Set by the supervisor (see `CallOutcome.rerunReason`); never sent by a worker.
    var rerunReason: String?

    init(_ outcome: inout sbx_outcome) {
        func take(_ buffer: sbx_buffer) -> [UInt8] {
            guard let data = buffer.data else { return [] }
            return Array(UnsafeBufferPointer(start: data, count: buffer.length))
        }
        status = Int32(outcome.status.rawValue)
        results = take(outcome.results)
        message = String(decoding: take(outcome.message), as: UTF8.self)
        location = String(decoding: take(outcome.location), as: UTF8.self)
        traceback = String(decoding: take(outcome.traceback), as: UTF8.self)
        logs = take(outcome.logs)
        droppedLogs = outcome.dropped_logs
        sbx_outcome_free(&outcome)
    }

    init(status: Int32, results: [UInt8], message: String, location: String, traceback: String,
         logs: [UInt8], droppedLogs: UInt32) {
        self.status = status
        self.results = results
        self.message = message
        self.location = location
        self.traceback = traceback
        self.logs = logs
        self.droppedLogs = droppedLogs
    }

    /// Status of an outcome made by the engine itself: the script is not there to run.
    static let unavailableStatus: Int32 = 100

    /// Status of an outcome made by the engine: the worker running the request ended.
    static let workerLostStatus: Int32 = 101

    init(workerLost reason: String) {
        self.init(status: Self.workerLostStatus, results: [], message: reason, location: "",
                  traceback: "", logs: [], droppedLogs: 0)
    }

    init(unavailable message: String) {
        self.init(status: Self.unavailableStatus, results: [], message: message, location: "",
                  traceback: "", logs: [], droppedLogs: 0)
    }

    init(error: any Error) {
        let error = error as? LuaScriptError ?? LuaScriptError(.runtime, "\(error)")
        let status: sbx_status = switch error.kind {
        case .syntax: SBX_ERROR_SYNTAX
        case .memoryLimit: SBX_ERROR_MEMORY
        case .deadlineExceeded: SBX_ERROR_DEADLINE
        case .cpuLimit: SBX_ERROR_CPU
        case .cancelled: SBX_ERROR_INTERRUPTED
        case .invalidValue: SBX_ERROR_VALUE
        case .runtime, .workerLost, .unavailable: SBX_ERROR_RUNTIME
        }
        self.init(status: Int32(status.rawValue), results: [], message: error.message,
                  location: error.location ?? "", traceback: error.traceback ?? "", logs: [], droppedLogs: 0)
    }

    var succeeded: Bool { status == Int32(SBX_OK.rawValue) }

    /// Memory, deadline and CPU errors leave a state worth discarding.
    var needsFreshState: Bool {
        [SBX_ERROR_MEMORY, SBX_ERROR_WORKER_MEMORY, SBX_ERROR_DEADLINE, SBX_ERROR_CPU].contains { status == Int32($0.rawValue) }
    }

    /// Stopped by the worker's memory cap rather than the script's own.
    var hitWorkerMemoryLimit: Bool { status == Int32(SBX_ERROR_WORKER_MEMORY.rawValue) }

    /// The outcome with values and logs decoded; `memoryLimit` words the memory error.
    func decoded(memoryLimit: Int) -> CallOutcome {
        let result: Result<[LuaValue], LuaScriptError>
        if succeeded {
            do {
                // A load returns nothing at all, not even an empty tuple.
                result = .success(results.isEmpty ? [] : try LuaValueCodec.decode(tuple: results))
            } catch {
                result = .failure(LuaScriptError(.invalidValue, "malformed values from the script state"))
            }
        } else {
            result = .failure(error(memoryLimit: memoryLimit))
        }
        return CallOutcome(result: result, logs: Self.decodeLogs(logs), droppedLogs: Int(droppedLogs), rerunReason: rerunReason)
    }

    private func error(memoryLimit: Int) -> LuaScriptError {
        let kind: LuaScriptError.Kind
        var message = message
        switch sbx_status(rawValue: UInt32(bitPattern: status)) {  // a worker may send any status
        case SBX_ERROR_SYNTAX: kind = .syntax
        case SBX_ERROR_MEMORY:
            kind = .memoryLimit
            message = "memory limit exceeded (\(formatBytes(memoryLimit)))"
        case SBX_ERROR_WORKER_MEMORY: kind = .memoryLimit
        case SBX_ERROR_DEADLINE: kind = .deadlineExceeded
        case SBX_ERROR_CPU: kind = .cpuLimit
        case SBX_ERROR_INTERRUPTED: kind = .cancelled
        case SBX_ERROR_VALUE: kind = .invalidValue
        default:
            kind = switch status {
            case Self.unavailableStatus: .unavailable
            case Self.workerLostStatus: .workerLost
            default: .runtime
            }
        }
        let location = kind == .syntax ? Self.leadingLocation(of: message) : location
        return LuaScriptError(kind, message, location: location.flatMap { $0.isEmpty ? nil : $0 },
                              traceback: traceback.isEmpty ? nil : traceback)
    }

    /// `file:line` at the start of a Lua message such as `a.lua:3: unexpected symbol`.
    static func leadingLocation(of message: String) -> String? {
        let parts = message.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[1].isEmpty, parts[1].allSatisfy(\.isNumber) else { return nil }
        return "\(parts[0]):\(parts[1])"
    }

    static func decodeLogs(_ bytes: [UInt8]) -> [LogRecord] {
        var reader = ByteReader(bytes)
        var records: [LogRecord] = []
        while reader.remaining > 0 {
            guard let level = try? reader.uint8(), let message = try? reader.text() else { break }
            records.append(LogRecord(level: LogLevel(rawValue: Int32(level)) ?? .info, message: message))
        }
        return records
    }
}

func formatBytes(_ bytes: Int) -> String {
    if bytes >= 1 << 20, bytes % (1 << 20) == 0 { return "\(bytes >> 20) MiB" }
    if bytes >= 1 << 20 {
        let tenths = (bytes * 10 + (1 << 19)) >> 20
        return "\(tenths / 10).\(tenths % 10) MiB"
    }
    if bytes >= 1 << 10, bytes % (1 << 10) == 0 { return "\(bytes >> 10) KiB" }
    return "\(bytes) bytes"
}

/// The host functions and host objects of one state, found by the C trampolines through
/// an opaque pointer.
final class HostRegistry {
    let functions: [(name: String, function: HostFunction)]
    var state: OpaquePointer?
    /// Host classes by the id the state knows them by.
    private var classes: [any AnyHostClass] = []
    private var classIDs: [ObjectIdentifier: UInt32] = [:]
    /// Live objects by handle, and handles by object; handles are never reused.
    private var objects: [UInt64: HostObject] = [:]
    private var handles: [ObjectIdentifier: UInt64] = [:]
    private var nextHandle: UInt64 = 1

    init(_ modules: [HostModule]) {
        functions = modules.flatMap { module in
            module.functions.map { (name: "\(module.name).\($0.name)", function: $0.function) }
        }
    }

    var liveObjectCount: Int { objects.count }

    func openObjectCount(where matches: (any AnyHostClass) -> Bool) -> Int {
        objects.values.count { matches($0.hostClass) }
    }

    static let callbackInstalled: Void = {
        sbx_set_host_callback { host, id, arguments, length, out in
            let registry = Unmanaged<HostRegistry>.fromOpaque(host!).takeUnretainedValue()
            let entry = registry.functions[Int(id)]
            return registry.respond(to: entry.name, arguments: arguments, length: length, out: out!) { call throws in
                try entry.function(call)
            }
        }
        sbx_set_object_callback { host, classID, method, handle, arguments, length, out in
            let registry = Unmanaged<HostRegistry>.fromOpaque(host!).takeUnretainedValue()
            return registry.dispatch(classID: Int(classID), method: method, handle: handle, arguments: arguments,
                                     length: length, out: out)
        }
    }()

    /// Runs a host function or method on encoded arguments; writes its encoded results
    /// and returns 0, or writes its error message and returns 1.
    private func respond(to name: String, arguments: UnsafePointer<UInt8>?, length: Int,
                         out: UnsafeMutablePointer<sbx_buffer>,
                         body: (borrowing HostCall) throws -> [LuaValue]) -> Int32 {
        func write(_ bytes: [UInt8]) { bytes.withUnsafeBytes { _ = sbx_buffer_append(out, $0.baseAddress, $0.count) } }
        do {
            let values = try LuaValueCodec.decode(tuple: UnsafeBufferPointer(start: arguments, count: length))
            let results = try body(HostCall(functionName: name, arguments: values, state: state!, registry: self))
            write(try LuaValueCodec.encode(tuple: results, objects: encode))
            return 0
        } catch let error as HostError {
            write(Array(error.message.utf8))
        } catch let error as LuaScriptError {
            write(Array("\(name): \(error.message)".utf8))
        } catch {
            write(Array("\(name): \(error)".utf8))
        }
        return 1
    }

    private func dispatch(classID: Int, method: Int32, handle: UInt64, arguments: UnsafePointer<UInt8>?,
                          length: Int, out: UnsafeMutablePointer<sbx_buffer>?) -> Int32 {
        guard method != SBX_METHOD_RELEASE, let out else {
            release(handle)
            return 0
        }
        let hostClass = classes[classID]
        let names = hostClass.methodNames
        let name = "\(hostClass.name):\(names[Int(method)])"
        let isClose = Int(method) == names.count - 1
        return respond(to: name, arguments: arguments, length: length, out: out) { call throws in
            if isClose {
                release(handle)
                return []
            }
            guard let object = objects[handle] else { throw HostError("attempt to use a closed \(hostClass.name)") }
            return try hostClass.invoke(Int(method), on: object.instance, call)
        }
    }

    /// Writes `object` for the state: its class id, its handle, its class's description.
    private func encode(_ object: HostObject, into bytes: inout [UInt8]) {
        let hostClass = object.hostClass
        let classID = classIDs[ObjectIdentifier(hostClass)] ?? {
            let id = UInt32(classes.count)
            classes.append(hostClass)
            classIDs[ObjectIdentifier(hostClass)] = id
            return id
        }()
        let handle = handles[ObjectIdentifier(object)] ?? {
            let handle = nextHandle
            nextHandle += 1
            objects[handle] = object
            handles[ObjectIdentifier(object)] = handle
            return handle
        }()
        bytes.append(UInt8(SBX_TAG_OBJECT))
        LuaValueCodec.appendUInt32(classID, to: &bytes)
        LuaValueCodec.appendUInt64(handle, to: &bytes)
        func appendText(_ text: String) {
            LuaValueCodec.appendUInt32(UInt32(text.utf8.count), to: &bytes)
            bytes.append(contentsOf: text.utf8)
        }
        appendText(hostClass.name)
        LuaValueCodec.appendUInt32(UInt32(hostClass.methodNames.count), to: &bytes)
        hostClass.methodNames.forEach(appendText)
    }

    /// Closes the object once and drops it; a handle already released is ignored.
    private func release(_ handle: UInt64) {
        guard let object = objects.removeValue(forKey: handle) else { return }
        handles[ObjectIdentifier(object)] = nil
        object.hostClass.close(object.instance)
    }

    func releaseAll() {
        for handle in objects.keys { release(handle) }
    }

    /// Releases the objects that live no longer than a call.
    func endCall() {
        for (handle, object) in objects where object.hostClass.lifetime == .call { release(handle) }
    }
}

/// A Lua state that scripts share, in this process: one heap and one copy of the standard
/// library, the host modules and the prelude, so a call finds them in the caches where a
/// state per script would find its own copy cold (docs/PERFORMANCE.md, "A worker's scripts
/// share its Lua states"). Each script in it is a `SandboxedState` with its own globals,
/// memory cap and deadline. Scripts of a group run one at a time, from any thread; one
/// waiting in a host function, or one that runs on while another waits, lets the next run.
public final class SandboxGroup: @unchecked Sendable {
    // Every use of the C group takes its lock.
    let group: OpaquePointer
    let modules: [HostModule]
    private let registry: HostRegistry

    /// One step of the work a worker with nothing else to do spends on the next calls
    /// (see `sbx_group_tidy_idle`): restoring the standard globals of scripts that ran, then
    /// collecting garbage. Whether there is more, it is done, or it must wait because a
    /// script holds the state.
    func tidyStep() -> ScriptScheduler.IdleProgress {
        switch sbx_group_tidy_idle(group) {
        case 1: .more
        case 0: .done
        default: .blocked
        }
    }

    /// The bytes of freed blocks the group keeps for its next allocations (bounded).
    var pooledBytes: Int { Int(sbx_group_pooled_bytes(group)) }

    /// How many runs hold the state or wait for it (for tests).
    var takers: Int { Int(sbx_group_takers(group)) }

    /// A group with the standard sandbox, `modules` as host functions and, if given, the
    /// trusted `prelude` already run (within `deadline`).
    public init(modules: [HostModule] = [], prelude: ScriptSource? = nil, deadline: Deadline? = nil) throws(LuaScriptError) {
        HostRegistry.callbackInstalled
        self.modules = modules
        registry = HostRegistry(modules)
        guard let group = sbx_group_open(Unmanaged.passUnretained(registry).toOpaque()) else {
            throw LuaScriptError(.memoryLimit, "cannot create a Lua state")
        }
        // Fully initialized from here: a throw below runs deinit, which closes the group.
        self.group = group
        registry.state = sbx_group_state(group)
        var id: Int32 = 0
        for module in modules {
            for function in module.functions {
                guard sbx_add_host_function(group, module.name, function.name, id, module.isPublic ? 1 : 0) == 0 else {
                    throw LuaScriptError(.memoryLimit, "cannot add host function \(module.name).\(function.name)")
                }
                id += 1
            }
        }
        guard sbx_seal(group) == 0 else { throw LuaScriptError(.memoryLimit, "cannot build the sandbox") }
        if let prelude {
            let outcome = runPrelude(prelude, deadline: deadline).decoded(memoryLimit: Int.max)
            if case .failure(let error) = outcome.result { throw error }
        }
    }

    deinit {
        sbx_group_close(group)
        registry.releaseAll()
    }

    /// Runs the prelude from its bytecode, compiled once per process, or from its text when
    /// it does not compile (so the syntax error is reported as for any chunk).
    private func runPrelude(_ prelude: ScriptSource, deadline: Deadline?) -> RawOutcome {
        defer { registry.endCall() }
        var outcome = sbx_outcome()
        if let bytecode = CompiledPreludes.bytecode(of: prelude) {
            bytecode.withUnsafeBufferPointer { bytes in
                sbx_run_compiled_prelude(group, prelude.chunkName, bytes.baseAddress, bytes.count, deadline?.nanoseconds ?? 0, &outcome)
            }
        } else {
            prelude.text.withUnsafeBufferPointer { text in
                text.withMemoryRebound(to: CChar.self) { text in
                    sbx_run_prelude(group, prelude.chunkName, text.baseAddress, text.count, deadline?.nanoseconds ?? 0, &outcome)
                }
            }
        }
        return RawOutcome(&outcome)
    }
}

/// One script's sandboxed Lua state, in this process: its own state, or its part of a
/// `SandboxGroup`. Not thread-safe: use it from one thread at a time; only `interrupt()`
/// of its `InterruptHandle` may come from another.
public final class SandboxedState {
    let state: OpaquePointer
    private let group: SandboxGroup
    private let registry: HostRegistry
    public let memoryLimit: Int

    /// A state of its own with the standard sandbox, `modules` as host functions and, if
    /// given, the trusted `prelude` already run (within `deadline`).
    public convenience init(memoryLimit: Int, modules: [HostModule] = [], prelude: ScriptSource? = nil,
                            deadline: Deadline? = nil) throws(LuaScriptError) {
        try self.init(memoryLimit: memoryLimit, in: SandboxGroup(modules: modules, prelude: prelude, deadline: deadline))
    }

    /// A script in `group`, with the group's modules and prelude.
    public init(memoryLimit: Int, in group: SandboxGroup) throws(LuaScriptError) {
        self.group = group
        registry = HostRegistry(group.modules)
        self.memoryLimit = memoryLimit
        guard let state = sbx_open(group.group, memoryLimit, Unmanaged.passUnretained(registry).toOpaque()) else {
            throw LuaScriptError(.memoryLimit, "cannot create a Lua state within \(formatBytes(memoryLimit))")
        }
        self.state = state
        registry.state = state
    }

    deinit {
        sbx_close(state)  // after this the group's collector leaves its host objects alone
        registry.releaseAll()
    }

    /// Runs the script's main chunk; its first return value becomes what `call` looks in.
    public func load(_ source: ScriptSource, deadline: Deadline? = nil) -> CallOutcome {
        loadRaw(source, deadline: deadline).decoded(memoryLimit: memoryLimit)
    }

    func loadRaw(_ source: ScriptSource, deadline: Deadline?) -> RawOutcome {
        defer { registry.endCall() }
        return run(source, deadline: deadline, body: sbx_load_script)
    }

    /// Calls `entry`: the prelude's entry point of that name with the script's exports
    /// first, or else the function of that name in the script's exports.
    /// `cpuLimit` bounds the CPU time the call may use, whatever its deadline.
    public func call(_ entry: String, _ arguments: [LuaValue] = [], deadline: Deadline? = nil,
                     cpuLimit: Duration? = nil) -> CallOutcome {
        do throws(LuaScriptError) {
            return callRaw(entry, encodedArguments: try LuaValueCodec.encode(tuple: arguments), deadline: deadline,
                           cpuLimit: cpuLimit)
                .decoded(memoryLimit: memoryLimit)
        } catch {
            return CallOutcome(result: .failure(error))
        }
    }

    func callRaw(_ entry: String, encodedArguments: [UInt8], deadline: Deadline?, cpuLimit: Duration? = nil) -> RawOutcome {
        defer { registry.endCall() }
        var outcome = sbx_outcome()
        encodedArguments.withUnsafeBufferPointer { arguments in
            sbx_call(state, entry, arguments.baseAddress, arguments.count, deadline?.nanoseconds ?? 0,
                     cpuLimit?.nanoseconds ?? 0, &outcome)
        }
        return RawOutcome(&outcome)
    }

    public var memoryUsed: Int { sbx_memory_used(state) }

    /// Whether the next call restores the standard globals first (see `SandboxGroup.tidyStep`).
    var standardGlobalsChanged: Bool { sbx_globals_changed(state) != 0 }

    /// Host objects the state holds that were not released yet.
    var liveObjectCount: Int { registry.liveObjectCount }

    public var interruptHandle: InterruptHandle { InterruptHandle(state: state) }

    private func run(
        _ source: ScriptSource, deadline: Deadline?,
        body: (OpaquePointer?, UnsafePointer<CChar>?, UnsafePointer<CChar>?, Int, Int64, UnsafeMutablePointer<sbx_outcome>?) -> Void
    ) -> RawOutcome {
        var outcome = sbx_outcome()
        source.text.withUnsafeBufferPointer { text in
            text.withMemoryRebound(to: CChar.self) { text in
                body(state, source.chunkName, text.baseAddress, text.count, deadline?.nanoseconds ?? 0, &outcome)
            }
        }
        return RawOutcome(&outcome)
    }
}

/// Preludes compiled without debug information, once per process: a state then loads the
/// bytecode (about 40 µs) instead of parsing the text (about 400 µs for the hotspot's), and
/// keeps 14 KB of it instead of 36 KB. Errors a script causes are still reported at the
/// script's lines; only the prelude's own frames lose theirs.
private enum CompiledPreludes {
    private static let compiled = PlainLock<[ScriptSource: [UInt8]?]>([:])

    static func bytecode(of prelude: ScriptSource) -> [UInt8]? {
        if let known = compiled.withLock({ $0[prelude] }) { return known }
        var buffer = sbx_buffer()
        defer { sbx_buffer_free(&buffer) }
        let failed = prelude.text.withUnsafeBufferPointer { text in
            text.withMemoryRebound(to: CChar.self) { sbx_compile_stripped(prelude.chunkName, $0.baseAddress, $0.count, &buffer) }
        } != 0
        let bytecode = failed || buffer.data == nil ? nil : Array(UnsafeBufferPointer(start: buffer.data, count: buffer.length))
        compiled.withLock { $0[prelude] = .some(bytecode) }
        return bytecode
    }
}

/// Stops a state's running call at its next hook, from any thread. Valid while the state lives.
public struct InterruptHandle: @unchecked Sendable {
    // The C side reads the flag atomically; the owner keeps the state alive.
    let state: OpaquePointer
    public func interrupt() { sbx_interrupt(state) }
    /// Whether its call waits for the group's state, held by another script's call.
    public var isWaitingForGroup: Bool { sbx_waiting_for_group(state) != 0 }
}
