import FuzzSupport
@testable import LuaSandbox

/// Values in the sandbox's encoding, read by both of its decoders: the Swift one (the
/// supervisor reading a worker's results, a host function its arguments) and the C one (a
/// state reading a call's arguments), which must agree: what the Swift one reads, a state
/// reads too, memory permitting. The state echoes what it read, and the Swift decoder must
/// read whatever the C encoder writes.
@main enum LuaValuesFuzzTarget {
    static func main() {
        let state: SandboxedState
        do {
            state = try SandboxedState(memoryLimit: 16 << 20)
            _ = try state.load(ScriptSource(path: "echo.lua", text: "return { echo = function(...) return ... end }")).get()
        } catch {
            fatalError("the echo script does not load: \(error)")
        }
        fuzz { bytes in
            let read = try? LuaValueCodec.decode(tuple: bytes)
            let outcome = state.callRaw("echo", encodedArguments: bytes, deadline: nil)
            let echoed = outcome.decoded(memoryLimit: state.memoryLimit).result
            if outcome.succeeded, case .failure(let error) = echoed {
                fatalError("what the state wrote does not decode: \(error)")
            }
            if !outcome.succeeded, read != nil, case .failure(let error) = echoed, error.kind != .memoryLimit {
                fatalError("the state refuses what the Swift decoder reads: \(error)")
            }
        }
    }
}
