import Locking
import LuaSandbox

/// A helper's Lua state in the engine. A helper that declares its networks is chosen without
/// running its code, so what it keeps while idle is its declaration and its text: its state is
/// built when it is first sent a command (one of its networks joined, or in a scan list), and
/// may be dropped again (`ScriptTransport` keeps the most recently used). A helper without a
/// declaration evaluates every network, so its state is built when it loads and kept.
final class HelperState: Sendable {
    private enum Phase {
        case idle
        case building(Task<Result<ScriptHandle, LuaScriptError>, Never>)
        case built(ScriptHandle)
    }

    /// The text the state is built from; nil for a state built when the helper loaded.
    private let source: ScriptSource?
    private let phase: PlainLock<Phase>
    /// Commands sent and not answered yet: a state in use is not dropped.
    private let inUse = PlainLock(0)

    /// A state built when the helper loaded, kept while the helper is.
    init(built handle: ScriptHandle) {
        source = nil
        phase = PlainLock(.built(handle))
    }

    /// A state to build from `source` when the helper is first sent a command.
    init(buildingLaterFrom source: ScriptSource) {
        self.source = source
        phase = PlainLock(.idle)
    }

    /// Whether the state can be dropped and built again (the helper declares its networks).
    var isLazy: Bool { source != nil }

    /// Whether the state is built now.
    var isBuilt: Bool {
        phase.withLock { if case .built = $0 { true } else { false } }
    }

    /// The state's handle, built first when it is not, and counted in use until `release`;
    /// `built` is called when this call built it. Concurrent callers wait for the same build.
    nonisolated(nonsending) func acquire(in engine: LuaEngine, built: () -> Void) async -> Result<ScriptHandle, LuaScriptError> {
        enum Next { case ready(ScriptHandle), wait(Task<Result<ScriptHandle, LuaScriptError>, Never>, isNew: Bool), gone }
        inUse.withLock { $0 += 1 }
        let next: Next = phase.withLock { phase in
            switch phase {
            case .built(let handle): return .ready(handle)
            case .building(let task): return .wait(task, isNew: false)
            case .idle:
                guard let source else { return .gone }
                let task = Task { () -> Result<ScriptHandle, LuaScriptError> in
                    do throws(LuaScriptError) { return .success(try await engine.load(source)) } catch { return .failure(error) }
                }
                phase = .building(task)
                return .wait(task, isNew: true)
            }
        }
        let result: Result<ScriptHandle, LuaScriptError>
        switch next {
        case .ready(let handle): return .success(handle)
        case .gone: result = .failure(LuaScriptError(.unavailable, "the helper was replaced or removed"))
        case .wait(let task, let isNew):
            var finished = await task.value
            if isNew {
                // Kept only while the phase is still this build: an `unload` meanwhile (the
                // helper replaced or removed) left it, and a state kept now would never go.
                let kept: Bool = phase.withLock { phase in
                    guard case .building(let current) = phase, current == task else { return false }
                    if case .success(let handle) = finished { phase = .built(handle) } else { phase = .idle }
                    return true
                }
                if !kept, case .success(let handle) = finished {
                    engine.unload(handle)
                    finished = .failure(LuaScriptError(.unavailable, "the helper was replaced or removed"))
                }
                if kept, case .success = finished { built() }
            }
            result = finished
        }
        if case .failure = result { release() }
        return result
    }

    /// Ends a use that `acquire` began with a handle.
    func release() {
        inUse.withLock { $0 -= 1 }
    }

    /// The handle of a state already built, without counting a use (the catalog's check).
    var handle: ScriptHandle? {
        phase.withLock { if case .built(let handle) = $0 { handle } else { nil } }
    }

    /// Drops a lazy state that no command is using; true when it did.
    func dropIfUnused(from engine: LuaEngine) -> Bool {
        guard isLazy else { return false }
        let handle: ScriptHandle? = inUse.withLock { uses in
            guard uses == 0 else { return nil }
            return phase.withLock { phase in
                guard case .built(let handle) = phase else { return nil }
                phase = .idle
                return handle
            }
        }
        handle.map(engine.unload)
        return handle != nil
    }

    /// Unloads the state, whatever uses it (the helper is gone).
    func unload(from engine: LuaEngine) {
        let handle: ScriptHandle? = phase.withLock { phase in
            defer { phase = .idle }
            if case .built(let handle) = phase { return handle }
            return nil
        }
        handle.map(engine.unload)
    }
}

/// One load of a helper is one state: two helpers are the same version when they share it.
extension HelperState: Hashable {
    static func == (lhs: HelperState, rhs: HelperState) -> Bool { lhs === rhs }
    func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
