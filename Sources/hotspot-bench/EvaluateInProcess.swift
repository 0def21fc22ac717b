#if canImport(Glibc)
import Glibc
#endif
import HotspotRuntime
import LuaSandbox
import ScriptLibraries

/// Beside figure 6: what the evaluate commands cost in Lua alone. The arbitration's helper
/// scripts, each in its own `SandboxedState` with the helper prelude, as in a worker, called
/// with `dispatch` one after the other on one thread of this process: no worker, no
/// supervisor. With one state its data stays in the caches; with 100, each call finds its
/// state's data (the prelude's code is a copy per state) where the other 99 left it.
func measureEvaluateInProcess() throws -> [Figure] {
    let rounds = 60
    let prelude = HotspotRuntime.engineConfiguration().prelude
    var single: Double = 0
    var figures: [Figure] = []
    for count in [1, 100] {
        let states = try (0..<count).map { number in
            let state = try SandboxedState(memoryLimit: 32 << 20, modules: ScriptLibraries.modules, prelude: prelude)
            _ = try state.load(ScriptSource(path: "helper\(number).lua", text: Scripts.helper(number))).get()
            return state
        }
        // At least 100 calls a round, so one state is called 100 times in a row.
        let repeats = max(1, 100 / count)
        var perCall: [Double] = []
        for round in 0..<(rounds + 5) {
            usleep(20_000)
            let command = RuntimeBench.command(.evaluate, ssid: "InProcess-\(round)")
            let start = Deadline.now.nanoseconds
            for _ in 0..<repeats {
                for state in states {
                    let answer = try state.call("dispatch", [command]).get().first
                    guard answer?.tableValue?["network"].tableValue?["confidence"] == "none" else {
                        throw BenchError("an in-process evaluate did not answer none")
                    }
                }
            }
            if round >= 5 { perCall.append(nanoseconds(since: start) / Double(repeats * count)) }
        }
        let samples = Samples(perCall)
        let result = "median \(duration(nanoseconds: samples.median)) per call, p99 \(duration(nanoseconds: samples.p99)) (\(rounds) rounds of \(repeats * count) calls after 20 ms idle)"
        if count == 1 {
            single = samples.median
            figures.append(Figure(name: "Evaluate in one thread, no worker, 1 state", result: result))
        } else {
            figures.append(Figure(
                name: "Evaluate in one thread, no worker, \(count) states", result: result,
                baseline: (duration(nanoseconds: single), ratio(samples.median, over: single),
                           "Evaluate in one thread: the same call on one state, 100 times in a row (the figure above), so its data stays in the caches.")))
        }
    }
    return figures
}
