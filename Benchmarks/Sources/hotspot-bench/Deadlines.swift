import LuaSandbox

/// The deadline given to every call that overruns.
private let deadline: Duration = .milliseconds(100)

/// Figure 4a: how far past its deadline the count hook stops a Lua loop.
func measureHookDeadline(runs: Int = 30) async throws -> Figure {
    let engine = try makeEngine(workers: 1)
    defer { engine.shutdown() }
    let script = try await engine.load(ScriptSource(path: "spin.lua", text: Scripts.spin))
    let samples = try await overshoots(runs: runs, engine: engine, script: script, entry: "spin")
    return Figure(
        name: "Deadline overshoot, Lua loop (hook)",
        result: "median \(duration(nanoseconds: samples.median)), p99 \(duration(nanoseconds: samples.p99)) (n=\(runs))",
        goals: [.init(text: "p99 ≤ 10 ms", met: samples.p99 <= 10_000_000)])
}

/// Figure 4b: how far past its deadline a call stuck in one C call ends: the kill grace
/// (200 ms), then killing the worker and failing the call.
func measureKillDeadline(runs: Int = 8) async throws -> Figure {
    let engine = try makeEngine(workers: 1)
    defer { engine.shutdown() }
    let script = try await engine.load(ScriptSource(path: "overrun.lua", text: Scripts.overrun))
    let samples = try await overshoots(runs: runs, engine: engine, script: script, entry: "overrun")
    return Figure(
        name: "Deadline overshoot, C overrun (kill)",
        result: "min \(duration(nanoseconds: samples.minimum)), median \(duration(nanoseconds: samples.median)), max \(duration(nanoseconds: samples.maximum)) (n=\(runs))",
        goals: [.init(text: "max ≤ 250 ms", met: samples.maximum <= 250_000_000)])
}

/// Calls `entry`, which never returns by itself, `runs` times with the deadline and
/// collects how long each call outlived it.
private func overshoots(runs: Int, engine: LuaEngine, script: ScriptHandle, entry: String) async throws -> Samples {
    let allowed = deadline / .nanoseconds(1)
    var overshoots: [Double] = []
    for _ in 0..<runs {
        // Waits out the reload of the script's state, or of a replacement worker, after
        // the previous overrun, so it does not count against this one.
        _ = try await engine.call(script, "ready").get()
        let start = Deadline.now.nanoseconds
        let outcome = await engine.call(script, entry, deadline: .after(deadline))
        let elapsed = nanoseconds(since: start)
        guard case .failure(let error) = outcome.result, error.kind == .deadlineExceeded else {
            throw BenchError("\(entry) ended with \(outcome.result) instead of exceeding its deadline")
        }
        overshoots.append(elapsed - allowed)
    }
    return Samples(overshoots)
}
