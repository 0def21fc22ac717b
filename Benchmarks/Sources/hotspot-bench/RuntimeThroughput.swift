import HotspotRuntime
import LuaSandbox
import HotspotCore

/// Figure 7: commands per second through the runtime. `networks` networks are joined
/// (each claimed and authenticated by one of `helpers` helpers), then one caller per
/// network runs `maintain` back to back: one command to the chosen helper and two
/// transitions (`authenticated` > `maintaining` > `authenticated`), all through the one
/// runtime actor. Baseline: the same callers sending the same maintain commands straight
/// through the engine.
func measureRuntimeThroughput(networks count: Int = 64, helpers: Int = 10) async throws -> Figure {
    let (bench, ssids) = try await RuntimeBench.keeping(networks: count, helpers: helpers)
    defer { bench.finish() }
    // Network i was claimed by helper i % helpers, as in the runtime.
    let targets = ssids.indices.map { (bench.direct[$0 % helpers], RuntimeBench.command(.maintain, ssid: ssids[$0])) }
    _ = await maintainEach(bench.runtime, ssids, for: .milliseconds(500))
    _ = await dispatchEach(bench.engine, targets, for: .milliseconds(500))
    // Three 1 s turns each, so a change in the machine's load over the run affects both alike.
    var run = Tally()
    var direct = Tally()
    for _ in 0..<3 {
        run += await maintainEach(bench.runtime, ssids, for: .seconds(1))
        direct += await dispatchEach(bench.engine, targets, for: .seconds(1))
    }
    let rate = Double(run.succeeded) / run.elapsed * 1e9
    let directRate = Double(direct.succeeded) / direct.elapsed * 1e9
    let failed = run.failed + direct.failed + bench.probe.failedCommands.load(ordering: .relaxed)
    let failures = failed == 0 ? "" : ", \(grouped(failed)) commands failed"
    return Figure(
        name: "Commands per second, runtime",
        result: "\(grouped(Int(rate))) maintains/s (\(count) networks and callers, \(helpers) helpers, \(bench.engine.configuration.workerCount) worker\(bench.engine.configuration.workerCount == 1 ? "" : "s"), \(significant(run.elapsed / 1e9)) s\(failures))",
        baseline: ("\(grouped(Int(directRate))) calls/s", ratio(rate, over: directRate),
                   "Runtime commands per second: the same \(count) callers sending the same maintain command tables with `engine.call(handle, \"dispatch\", ...)` to the same scripts loaded a second time, in turns with the runtime's (3 × 1 s each)."),
        goals: [.init(text: "≥ 20,000 commands/s", met: rate >= 20_000 && failed == 0)])
}

extension RuntimeBench {
    /// A runtime keeping `count` networks authenticated, network i claimed by helper
    /// i % `helpers`; `observe` takes its events as in `init`. Returns the networks' SSIDs too.
    static func keeping(networks count: Int, helpers: Int, observe: @escaping @Sendable (HotspotEvent) -> Void = { _ in })
        async throws -> (RuntimeBench, ssids: [String])
    {
        let ssids = (0..<count).map { "Network-\($0)" }
        let bench = try await RuntimeBench(sources: (0..<helpers).map { helper in
            Scripts.helper(helper, claims: ssids.indices.filter { $0 % helpers == helper }.map { ssids[$0] })
        }, observe: observe)
        for ssid in ssids {
            guard await bench.runtime.join(NetworkDescription(ssid: ssid)) == .authenticated else {
                bench.finish()
                throw BenchError("joining \(ssid) did not end authenticated")
            }
        }
        return (bench, ssids)
    }
}

/// One task per network calling `maintain` on it back to back until `duration` passed.
func maintainEach(_ runtime: HotspotRuntime, _ ssids: [String], for duration: Duration) async -> Tally {
    await eachUntil(duration, callers: ssids.count) { caller in
        await runtime.maintain(ssids[caller]) == .authenticated
    }
}

private func dispatchEach(_ engine: LuaEngine, _ targets: [(ScriptHandle, LuaValue)],
                          for duration: Duration) async -> Tally {
    await eachUntil(duration, callers: targets.count) { caller in
        let answer = try? await engine.call(targets[caller].0, "dispatch", [targets[caller].1]).get()
        return answer.map(DispatchAnswer.init)?.result == "success"
    }
}
