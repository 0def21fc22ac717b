/// Cold start: `hotspot-helper connect` as a whole process, from its start to its first
/// command answered (the first evaluate), with 1 and with 100 helper scripts, each of
/// which evaluates with one table lookup and authenticates at once. Baseline: the stock
/// interpreter from its start to its exit, running the same script files.
func measureColdStart(runs: Int = 10) async throws -> [Figure] {
    var figures: [Figure] = []
    for count in [1, 100] {
        let scripts = try ScratchDirectory(helperScripts: (0..<count).map { Scripts.helper($0) })
        defer { scripts.remove() }
        // Helper 0 claims Venue-0 and the others answer none, so every helper is asked.
        let connect = HelperCommand.connect(["--scripts", scripts.path, "--ssid", "Venue-0"])
        let files = (0..<count).map { scripts.path + "/" + RuntimeBench.helperID($0) + ".lua" }
        var toFirstCommand: [Double] = []
        var toExit: [Double] = []
        var stock: [Double] = []
        // Run 0 only warms the page cache.
        for run in 0...runs {
            let helper = try timedRun(connect, marker: #""event":"command""#)
            let lua = try timedRun([StockLua.path, "-e", "for _, file in ipairs(arg) do dofile(file) end", "-"] + files)
            guard run > 0 else { continue }
            toFirstCommand.append(helper.toMarker!)
            toExit.append(helper.toExit)
            stock.append(lua.toExit)
        }
        let (first, exited, baseline) = (Samples(toFirstCommand), Samples(toExit), Samples(stock))
        let goal = count == 1 ? 8.0 : 200.0
        figures.append(Figure(
            name: "Cold start to first command, \(count) script\(count == 1 ? "" : "s")",
            result: "min \(duration(nanoseconds: first.minimum)), median \(duration(nanoseconds: first.median)), max \(duration(nanoseconds: first.maximum)); exit median \(duration(nanoseconds: exited.median)) (n=\(runs))",
            baseline: (duration(nanoseconds: baseline.median), ratio(first.median, over: baseline.median),
                       "Cold start: from posix_spawn of `hotspot-helper connect --json` to its first command event (exit: to the process's end). Baseline: `lua5.4` running the same script files (dofile each) from posix_spawn to its exit, median of the same runs."),
            goals: [.init(text: "median ≤ \(Int(goal)) ms", met: first.median <= goal * 1e6)]))
    }
    return figures
}
