import LuaSandbox

/// Figure 2: from creating a one-worker engine to the first answer of a loaded script,
/// against starting the stock interpreter and letting it exit.
func measureWorkerStart(runs: Int = 20) async throws -> Figure {
    var times: [Double] = []
    var baseline: [Double] = []
    // Run 0 only warms the page cache.
    for run in 0...runs {
        let start = Deadline.now.nanoseconds
        let engine = try makeEngine(workers: 1)
        let script = try await engine.load(ScriptSource(path: "trivial.lua", text: Scripts.trivial))
        _ = try await engine.call(script, "f").get()
        let elapsed = nanoseconds(since: start)
        engine.shutdown()

        let luaStart = Deadline.now.nanoseconds
        try runProcess([StockLua.path, "-e", ""])
        let luaElapsed = nanoseconds(since: luaStart)
        if run > 0 {
            times.append(elapsed)
            baseline.append(luaElapsed)
        }
    }
    let samples = Samples(times)
    let stock = Samples(baseline)
    return Figure(
        name: "Worker start to first answer",
        result: "min \(duration(nanoseconds: samples.minimum)), median \(duration(nanoseconds: samples.median)), max \(duration(nanoseconds: samples.maximum)) (n=\(runs))",
        baseline: (duration(nanoseconds: stock.median), ratio(samples.median, over: stock.median),
                   "Worker start: `lua5.4 -e ''` from posix_spawn to its exit, median of the same number of runs."),
        goals: [.init(text: "median ≤ 20 ms", met: samples.median <= 20_000_000)])
}
