import FoundationEssentials
import LuaSandbox

/// Hot reload, from a script saved to its new version serving:
/// - `run --watch` with one helper: from the save (a new file renamed over the script, as
///   editors do) to the daemon's `reload` event naming it;
/// - `dev` on the click-through scenario: from the save to the `done` event of the run it
///   starts, the new version's result shown.
/// Baseline: what a reload saves, starting again: a `dev --once` process from its spawn to
/// its `done` event.
func measureHotReload(saves: Int = 20) async throws -> [Figure] {
    let scratch = try ScratchDirectory()
    defer { scratch.remove() }

    let scripts = try ScratchDirectory(helperScripts: [Scripts.helper(0)])
    defer { scripts.remove() }
    let script = scripts.path + "/" + RuntimeBench.helperID(0) + ".lua"
    let daemon = try ChildProcess(HelperCommand.run(scripts: scripts.path, state: scratch.path, ssid: "Venue-0") + ["--watch"])
    daemon.closeInput()
    _ = try daemon.readLine(containing: #""to":"authenticated""#)
    let toReload = try timeSaves(saves, of: script, text: Scripts.helper(0)) {
        _ = try daemon.readLine(containing: #""reloaded":["\#(RuntimeBench.helperID(0))"]"#)
    }
    guard daemon.terminate() == 0 else { throw BenchError("run --watch did not stop cleanly on SIGTERM") }

    let aroma = scratch.path + "/aroma.lua"
    let aromaText = try String(contentsOfFile: try HelperCommand.bundledScript("aroma"), encoding: .utf8)
    try aromaText.write(toFile: aroma, atomically: true, encoding: .utf8)
    let dev = HelperCommand.dev([aroma, "--scenario", "click-through", "--ssid", "Aroma-Guest"])
    let developing = try ChildProcess(dev)
    developing.closeInput()
    _ = try developing.readLine(containing: #""event":"done""#)
    let toResult = try timeSaves(saves, of: aroma, text: aromaText) {
        _ = try developing.readLine(containing: #""event":"done""#)
    }
    guard developing.terminate() == 0 else { throw BenchError("dev did not stop cleanly on SIGTERM") }

    var restarts: [Double] = []
    for run in 0...5 {
        let once = try timedRun(dev + ["--once"], marker: #""event":"done""#)
        if run > 0 { restarts.append(once.toMarker!) }  // run 0 warms the page cache
    }
    let restart = Samples(restarts)
    let explanation = "Hot reload: from the save of a changed script (renamed over it) to the reload event (run --watch) or to the done event of the run it starts (dev, click-through). Baseline: a fresh `dev --once` process from posix_spawn to its done event, median of 5."
    return [(toReload, "run --watch: save to new version serving"), (toResult, "dev: save to result shown (click-through)")].map { samples, name in
        Figure(
            name: "Hot reload, \(name)",
            result: "median \(duration(nanoseconds: samples.median)), p99 \(duration(nanoseconds: samples.p99)) (n=\(samples.count))",
            baseline: (duration(nanoseconds: restart.median), ratio(samples.median, over: restart.median), explanation),
            goals: [.init(text: "≤ 200 ms", met: samples.p99 <= 200e6)])
    }
}

/// Saves `count` changed versions of `text` to `path`, each once the last was picked up,
/// and times each from the save to `pickedUp` returning.
private func timeSaves(_ count: Int, of path: String, text: String, pickedUp: () throws -> Void) throws -> Samples {
    var times: [Double] = []
    for version in 1...count {
        let start = Deadline.now.nanoseconds
        try (text + "\n-- version \(version)\n").write(toFile: path, atomically: true, encoding: .utf8)
        try pickedUp()
        times.append(nanoseconds(since: start))
    }
    return Samples(times)
}
