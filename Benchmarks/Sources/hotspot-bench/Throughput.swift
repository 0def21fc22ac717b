import LuaSandbox

/// Figure 5: calls per second with many concurrent callers on two workers, against one
/// thread calling a state in-process (no worker, no supervisor).
func measureThroughput(callers: Int = 64, scripts count: Int = 10) async throws -> Figure {
    let engine = try makeEngine(workers: 2)
    defer { engine.shutdown() }
    var scripts: [ScriptHandle] = []
    for number in 0..<count {
        scripts.append(try await engine.load(ScriptSource(path: "trivial\(number).lua", text: Scripts.trivial)))
    }
    _ = await hammer(engine, scripts, callers: callers, for: .milliseconds(500))
    let run = await hammer(engine, scripts, callers: callers, for: .seconds(3))
    let rate = Double(run.succeeded) / run.elapsed * 1e9
    let inProcess = try inProcessCallsPerSecond()
    let failures = run.failed == 0 ? "" : ", \(grouped(run.failed)) calls failed"
    return Figure(
        name: "Commands per second, engine",
        result: "\(grouped(Int(rate))) calls/s (\(callers) callers, \(count) scripts, 2 workers, \(significant(run.elapsed / 1e9)) s\(failures))",
        baseline: ("\(grouped(Int(inProcess))) calls/s", ratio(rate, over: inProcess),
                   "Commands per second: one thread calling the same handler on a SandboxedState in this process for 1 s."),
        goals: [.init(text: "≥ 20,000 calls/s", met: rate >= 20_000)])
}

/// `callers` tasks calling a trivial handler back to back, spread over the scripts,
/// until `duration` has passed.
private func hammer(_ engine: LuaEngine, _ scripts: [ScriptHandle], callers: Int, for duration: Duration) async -> Tally {
    await eachUntil(duration, callers: callers) { caller in
        if case .success = await engine.call(scripts[caller % scripts.count], "f").result { true } else { false }
    }
}

private func inProcessCallsPerSecond() throws -> Double {
    let state = try SandboxedState(memoryLimit: 32 << 20)
    _ = try state.load(ScriptSource(path: "trivial.lua", text: Scripts.trivial)).get()
    let start = Deadline.now.nanoseconds
    let end = Deadline.after(.seconds(1)).nanoseconds
    var calls = 0
    while Deadline.now.nanoseconds < end {
        _ = try state.call("f").get()
        calls += 1
    }
    return Double(calls) / nanoseconds(since: start) * 1e9
}
