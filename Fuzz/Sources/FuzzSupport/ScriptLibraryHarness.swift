import LuaSandbox
import ScriptLibraries

/// A sandboxed Lua state with the script libraries, in this process, as a worker runs them:
/// the target's Lua functions call the libraries with each input as a venue script would.
public final class ScriptLibraryHarness {
    private let state: SandboxedState

    /// `script` returns a table of the functions the target calls.
    public init(script: String) {
        do {
            state = try SandboxedState(memoryLimit: 64 << 20, modules: ScriptLibraries.modules)
            _ = try state.load(ScriptSource(path: "fuzz.lua", text: script)).get()
        } catch {
            fatalError("the fuzz target's script does not load: \(error)")
        }
    }

    /// Calls `function` with `input` as a Lua string. The function catches (`pcall`) the
    /// errors the libraries document for bad input, so any error that reaches here is a
    /// finding: an invariant the function asserts, or a library failing where it must not.
    public func call(_ function: String, with input: [UInt8]) {
        let outcome = state.call(function, [.string(input)])
        if case .failure(let error) = outcome.result {
            fatalError("\(function): \(error)")
        }
    }
}
