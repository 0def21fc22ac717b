#if canImport(Glibc)
import Glibc
#endif
import HotspotRuntime
import LuaSandbox
import ScriptLibraries
import HotspotCore

/// Beside figure 6: what the evaluate commands cost in Lua alone. The arbitration's helper
/// scripts, each in its own `SandboxedState` with the helper prelude, as in a worker, called
/// with `dispatch` one after the other on one thread of this process: no worker, no
/// supervisor. With one state its data stays in the caches; with 100, each call finds its
/// state's data (the prelude's code is a copy per state) where the other 99 left it.
func measureEvaluateInProcess() throws -> [Figure] {
    let prelude = HotspotRuntime.engineConfiguration().prelude
    return try perCallFigures(
        named: { "Evaluate in one thread, no worker, \($0) state\($0 == 1 ? "" : "s")" },
        baselineNote: "Evaluate in one thread: the same call on one state, 100 times in a row (the figure above), so its data stays in the caches."
    ) { count in
        let states = try (0..<count).map { number in
            let state = try SandboxedState(memoryLimit: 32 << 20, modules: ScriptLibraries.modules, prelude: prelude)
            _ = try state.load(ScriptSource(path: "helper\(number).lua", text: Scripts.helper(number))).get()
            return state
        }
        return { round, repeats in
            let command = RuntimeBench.command(.evaluate, ssid: "InProcess-\(round)")
            let start = Deadline.now.nanoseconds
            for _ in 0..<repeats {
                for state in states {
                    let answer = DispatchAnswer(try state.call("dispatch", [command]).get())
                    guard answer.confidence == "none" else {
                        throw BenchError("an in-process evaluate did not answer none")
                    }
                }
            }
            return nanoseconds(since: start) / Double(repeats * count)
        }
    }
}

/// The figures of 1 and of 100 scripts, 100 calls a round (one script is called 100
/// times in a row), each round after 20 ms idle; the second with the first as baseline.
/// `start(count)` sets up `count` scripts and returns the round: given the round's number
/// and the repeats, it runs them and returns the time per call.
private func perCallFigures(named name: (Int) -> String, baselineNote: String,
                            _ start: (Int) throws -> (Int, Int) throws -> Double) throws -> [Figure] {
    let rounds = 60
    var single: Double = 0
    var figures: [Figure] = []
    for count in [1, 100] {
        let round = try start(count)
        let repeats = max(1, 100 / count)
        var perCall: [Double] = []
        for number in 0..<(rounds + 5) {
            usleep(20_000)
            let time = try round(number, repeats)
            if number >= 5 { perCall.append(time) }
        }
        let samples = Samples(perCall)
        let result = "median \(duration(nanoseconds: samples.median)) per call, p99 \(duration(nanoseconds: samples.p99)) (\(rounds) rounds of \(repeats * count) calls after 20 ms idle)"
        if count == 1 {
            single = samples.median
            figures.append(Figure(name: name(count), result: result))
        } else {
            figures.append(Figure(name: name(count), result: result,
                                  baseline: (duration(nanoseconds: single), ratio(samples.median, over: single), baselineNote)))
        }
    }
    return figures
}

/// Beside it, the stock interpreter's view of the shared states workers use
/// (docs/PERFORMANCE.md, "A worker's scripts share its Lua states"): the same prelude,
/// scripts and command tables in one stock `lua5.4` state that all the scripts share, each
/// with globals of its own, so there is one copy of the prelude's code, the libraries and
/// the strings. Each call does in Lua what a worker's call does: restores the script's
/// standard globals, builds the command table, calls `dispatch`.
/// Rounds start after 20 ms idle, as above: the interpreter waits for a line per round.
func measureEvaluateInSharedStockState() throws -> [Figure] {
    let scratch = try ScratchDirectory()
    defer { scratch.remove() }
    let preludePath = try scratch.write(String(decoding: HotspotRuntime.engineConfiguration().prelude!.text, as: UTF8.self),
                                        to: "prelude.lua")
    let program = try scratch.write(sharedStateProgram, to: "shared-state.lua")
    var interpreters: [ChildProcess] = []
    defer {
        for interpreter in interpreters {
            interpreter.closeInput()
            _ = interpreter.wait()
        }
    }
    return try perCallFigures(
        named: { $0 == 1 ? "Evaluate in one stock lua5.4 state, 1 script" : "Evaluate in one stock lua5.4 state, \($0) scripts sharing it" },
        baselineNote: "Evaluate in one stock lua5.4 state: the same program with one script, 100 calls a round."
    ) { count in
        for number in 0..<count { try scratch.write(Scripts.helper(number), to: "helper\(number).lua") }
        let interpreter = try ChildProcess([StockLua.path, program, preludePath, scratch.path, String(count)])
        interpreters.append(interpreter)
        return { round, _ in
            guard interpreter.send(Array("Shared-\(round)\n".utf8)) else { throw BenchError("lua5.4 stopped reading") }
            let line = try interpreter.readLine(containing: "per-call")
            guard let value = Double(line.split(separator: " ").last ?? "") else {
                throw BenchError("lua5.4 printed \(line) instead of a time")
            }
            return value
        }
    }
}

/// The interpreter's side of `measureEvaluateInSharedStockState`: arguments are the prelude's
/// path, the scripts' directory and their count; each line read is a round's SSID, and
/// each round prints the CPU time per call in nanoseconds. The host modules the prelude
/// looks up are stubs: evaluate calls none of them.
private let sharedStateProgram = #"""
    local prelude_path, directory, count = arg[1], arg[2], tonumber(arg[3])
    local function stub() end
    local base = {}
    for _, name in ipairs { "assert", "error", "getmetatable", "ipairs", "next", "pairs", "rawequal",
        "rawget", "rawlen", "rawset", "select", "tonumber", "tostring", "type", "_VERSION", "pcall",
        "xpcall", "load", "collectgarbage", "print", "setmetatable", "string", "table", "math", "utf8",
        "coroutine", "os" } do
      base[name] = _G[name]
    end
    base.wispr = { parse = stub, login_form = stub }
    base.url = { parse = stub, resolve = stub }
    local prelude_globals = { readonly = function(library) return library end, host = {
      http = { request = stub, probe = stub, capport = stub }, time = { sleep = stub, now = os.time },
      socket = { tcp = stub, udp = stub }, wispr = { parse = stub, login_form = stub },
      url = { parse = stub, resolve = stub }, html = { forms = stub, submission = stub, links = stub, meta_refresh = stub },
    } }
    for name, value in pairs(base) do prelude_globals[name] = value end
    local file = assert(io.open(prelude_path))
    local prelude = assert(load(file:read("a"), "=prelude", "t", prelude_globals))
    file:close()
    local extra = {}
    local dispatch = prelude(extra).dispatch
    for name, value in pairs(extra) do base[name] = value end

    local scripts = {}
    for number = 0, count - 1 do
      local globals = {}
      for name, value in next, base do globals[name] = value end
      globals._G = globals
      local chunk = assert(loadfile(directory .. "/helper" .. number .. ".lua", "t", globals))
      scripts[#scripts + 1] = { globals = globals, exports = chunk() }
    end

    local repeats = math.max(1, 100 // count)
    for ssid in io.lines() do
      local start = os.clock()
      for _ = 1, repeats do
        for _, script in ipairs(scripts) do
          local globals = script.globals
          for name, value in next, base do rawset(globals, name, value) end
          globals._G = globals
          local _, _, confidence = dispatch(script.exports, {
            type = "evaluate",
            network = { ssid = ssid, bssid = "", signal_strength = 1.0, is_secure = false,
                        did_auto_join = false, did_just_join = false, is_chosen_helper = false },
            store = {},
          })
          if confidence ~= "none" then error("evaluate answered " .. tostring(confidence)) end
        end
      end
      io.write(("per-call %.1f\n"):format((os.clock() - start) / (repeats * count) * 1e9))
      io.flush()
    end
    """#
