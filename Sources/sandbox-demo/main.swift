#if canImport(Glibc)
import Glibc
#endif
import LuaSandbox

// A small, honest demonstration of the sandboxed Lua engine: one well-behaved venue
// script keeps serving while hostile scripts are stopped by the hook, the memory cap and,
// for C-level overruns the hook cannot reach, by killing their worker process.
// Exits 0 only when every script ended as expected.

struct Case {
    let title: String
    let body: String
    let expected: LuaScriptError.Kind?
}

let cases = [
    Case(title: "a well-behaved handler", body: "return 'high', #hosts", expected: nil),
    Case(title: "an endless Lua loop (stopped by the hook)", body: "while true do end", expected: .deadlineExceeded),
    Case(title: "pcall trying to swallow the deadline", body: "while true do pcall(function() while true do end end) end", expected: .deadlineExceeded),
    Case(title: "a C-level pattern backtrack (worker killed)", body: "return ('a'):rep(3000):find('.-.-.-b')", expected: .deadlineExceeded),
    Case(title: "a memory bomb (memory cap)", body: "local s = 'x' while true do s = s .. s end", expected: .memoryLimit),
    Case(title: "reaching for the file system", body: "return io.open('/etc/passwd')", expected: .runtime),
    Case(title: "a runtime error with its line", body: "local portal = nil\n  return portal.url", expected: .runtime),
]

let deadline = Duration.milliseconds(500)
let engine: LuaEngine
do {
    engine = try LuaEngine(.init(
        workerExecutable: LuaEngine.Configuration.executableBesideCurrent(named: "lua-sandbox-worker"),
        workerCount: 2, defaultDeadline: deadline))
} catch {
    print("cannot start the engine: \(error)")
    exit(1)
}

print("Lua sandbox engine: \(engine.configuration.workerCount) worker processes \(engine.workerProcessIDs), deadline \(deadline), memory cap \(engine.configuration.memoryLimit >> 20) MiB\n")
var failures = 0
let venue = try await engine.load(ScriptSource(path: "VenueHelpers/aroma.lua", text: """
    local hosts = { 'portal.aroma.example' }
    return { evaluate = function() return 'high' end, ping = function() return 'pong' end }
    """))

for (index, demo) in cases.enumerated() {
    let script = try await engine.load(ScriptSource(path: "demo\(index).lua", text: """
        local hosts = { 'portal.aroma.example' }
        return { run = function()
          \(demo.body)
        end }
        """))
    let start = ContinuousClock.now
    let outcome = await engine.call(script, "run")
    let milliseconds = Int((ContinuousClock.now - start) / .milliseconds(1))
    let kind: LuaScriptError.Kind?
    let said: String
    switch outcome.result {
    case .success(let values): (kind, said) = (nil, "answered \(values.map(\.description).joined(separator: ", "))")
    case .failure(let error): (kind, said) = (error.kind, "\(error.kind.rawValue): \(error)")
    }
    let bystander = try? await engine.call(venue, "ping").get()
    let ok = kind == demo.expected && bystander == ["pong"]
    if !ok { failures += 1 }
    print("\(ok ? "ok  " : "FAIL") \(demo.title)")
    print("       \(said)  [\(milliseconds) ms; the venue script still answers: \(bystander == ["pong"] ? "yes" : "NO")]")
    engine.unload(script)
}

print("\nworkers now \(engine.workerProcessIDs) (one was replaced after the C-level overrun)")
engine.shutdown()
print(failures == 0 ? "every script ended as expected" : "\(failures) scripts did not end as expected")
exit(failures == 0 ? 0 : 1)
