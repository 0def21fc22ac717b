#if canImport(Glibc)
import Glibc
#endif
import HotspotRuntime
import LuaSandbox
import HotspotCore

/// Figure 6: evaluate arbitration with 1, 10 and 100 helpers, from `join` to the decision
/// (the transition out of `evaluating`). Two cases: nobody claims the network, so the
/// runtime waits for every helper's answer; and one helper, in the middle of the load
/// order, answers `high` and the others are cancelled. With 100 helpers, also the CPU the
/// two processes used, per evaluate and per join (`cpuPerJoin`), and the floor under both:
/// the same number of calls with no command in them (`callsAlone`).
func measureArbitration() async throws -> [Figure] {
    var figures: [Figure] = []
    for count in [1, 10, 100] {
        figures += try await measureArbitration(helpers: count, joins: 150)
    }
    return figures
}

private func measureArbitration(helpers count: Int, joins: Int) async throws -> [Figure] {
    let warmup = 10
    // Long enough for every thread of the supervisor and the workers to stop polling and
    // sleep, and for an idle CPU to halt, as before a real join; waking them is part of
    // the figure (shorter pauses give shorter times; docs/PERFORMANCE.md, "From idle, every
    // hand-off is a wake-up").
    let idle: Duration = .milliseconds(20)
    let winner = count / 2
    // A new SSID for every join: a network a helper authenticated is remembered and would
    // skip evaluate on a rejoin.
    let claimed = (0..<(warmup + joins)).map { "Claimed-\($0)" }
    let unclaimed = (0..<(warmup + joins)).map { "Unclaimed-\($0)" }
    let bench = try await RuntimeBench(sources: (0..<count).map {
        Scripts.helper($0, claims: $0 == winner ? claimed : [])
    })
    defer { bench.finish() }
    // The three measurements take turns, so a change in the machine's load over the run
    // affects them alike, and each starts from idle.
    var nobody: [Double] = []
    var nobodyCPU: [CPUUse] = []
    var high: [Double] = []
    var direct: [Double] = []
    let workers = bench.engine.workerProcessIDs
    let cpuAtStart = try CPUUse.now(workers: workers)
    for index in 0..<(warmup + joins) {
        try await Task.sleep(for: idle)
        let all = try await decisionTime(bench, unclaimed[index], decided: .authenticated, by: nil)
        try await Task.sleep(for: idle)
        let one = try await decisionTime(bench, claimed[index], decided: .authenticating, by: RuntimeBench.helperID(winner)).time
        try await Task.sleep(for: idle)
        let engine = try await directEvaluation(bench, ssid: "Direct-\(index)")
        guard index >= warmup else { continue }
        nobody.append(all.time)
        nobodyCPU.append(all.cpu)
        high.append(one)
        direct.append(engine)
    }
    let cpuAtEnd = try CPUUse.now(workers: workers)
    guard bench.probe.failedCommands.load(ordering: .relaxed) == 0 else {
        throw BenchError("\(bench.probe.failedCommands.load(ordering: .relaxed)) commands failed")
    }
    let (all, one, engine) = (Samples(nobody), Samples(high), Samples(direct))
    let helpers = "\(count) helper\(count == 1 ? "" : "s")"
    func result(_ samples: Samples) -> String {
        "median \(duration(nanoseconds: samples.median)), p99 \(duration(nanoseconds: samples.p99)) (n=\(samples.count))"
    }
    let goals: [Figure.Goal] = count == 100
        ? [.init(text: "median ≤ 2 ms", met: all.median <= 2_000_000),
           .init(text: "p99 ≤ 2 ms", met: all.p99 <= 2_000_000)]
        : []
    // Every join of the three kinds sends one evaluate to each helper.
    let sent = Double(3 * count * (warmup + joins))
    let cpu = count == 100 ? [
        Figure(name: "Evaluate arbitration, \(helpers), CPU per evaluate",
               result: "\(cpuAtEnd.perItem(since: cpuAtStart, count: sent)) (\(Int(sent)) evaluates sent in the joins above and their baseline's)"),
        Figure(name: "Evaluate arbitration, \(helpers), CPU per join",
               result: cpuPerJoin(times: nobody, cpu: nobodyCPU)),
    ] : []
    let floor = count == 100 ? [try await callsAlone(bench, warmup: warmup, joins: joins, idle: idle)] : []
    return [
        Figure(name: "Evaluate arbitration, \(helpers), all answered",
               result: result(all),
               baseline: (duration(nanoseconds: engine.median), ratio(all.median, over: engine.median),
                          "Arbitration: each join starts after 20 ms idle. Baseline: the same evaluate commands (one per helper, the same table) sent at once with `engine.call(handle, \"dispatch\", ...)` to the same scripts loaded a second time in the same engine, also after 20 ms idle, until all answered: the engine's share, without the runtime's actor, events and checks; median."),
               goals: goals),
        Figure(name: "Evaluate arbitration, \(helpers), one high",
               result: result(one)),
    ] + cpu + floor
}

/// The engine's share of the 100-helper join without the command: the baseline's scripts'
/// `maintain`, which returns a constant, called in every script at once through `callAll`
/// with no arguments (so no prelude, no command table, no runtime), after the same idle
/// pause, until all answered; and the CPU both processes used per call over these rounds.
private func callsAlone(_ bench: RuntimeBench, warmup: Int, joins: Int, idle: Duration) async throws -> Figure {
    let workers = bench.engine.workerProcessIDs
    var times: [Double] = []
    var cpuAtStart = CPUUse(supervisor: 0, workers: 0)
    for index in 0..<(warmup + joins) {
        try await Task.sleep(for: idle)
        if index == warmup { cpuAtStart = try CPUUse.now(workers: workers) }
        let start = Deadline.now.nanoseconds
        for await (_, outcome) in bench.engine.callAll(count: bench.direct.count, { ScriptCall(bench.direct[$0], "maintain") }) {
            guard case .success(let values) = outcome.result, values.first == "success" else {
                throw BenchError("a call of maintain did not return \"success\": \(outcome.result)")
            }
        }
        if index >= warmup { times.append(nanoseconds(since: start)) }
    }
    let cpu = try CPUUse.now(workers: workers).perItem(since: cpuAtStart, count: Double(bench.direct.count * joins))
    let samples = Samples(times)
    return Figure(
        name: "Evaluate arbitration, \(bench.direct.count) helpers, the calls alone",
        result: "median \(duration(nanoseconds: samples.median)), p99 \(duration(nanoseconds: samples.p99)) (n=\(samples.count)); "
            + "CPU per call: \(cpu)")
}

/// What the all-answered joins cost in CPU, both processes together: the median, and the
/// fastest fifth of the joins against the slowest. The joins keep both cores busy, so a
/// slow join is one that used more CPU for the same work rather than one that waited.
private func cpuPerJoin(times: [Double], cpu: [CPUUse]) -> String {
    let byTime = zip(times, cpu).sorted { $0.0 < $1.0 }
    let fifth = max(1, byTime.count / 5)
    func mean(_ joins: ArraySlice<(Double, CPUUse)>) -> (time: Double, cpu: Double) {
        (joins.map(\.0).reduce(0, +) / Double(joins.count), joins.map(\.1.total).reduce(0, +) / Double(joins.count))
    }
    let (fastest, slowest) = (mean(byTime.prefix(fifth)), mean(byTime.suffix(fifth)))
    return "all answered: median \(duration(nanoseconds: Samples(cpu.map(\.total)).median)) "
        + "(worker \(duration(nanoseconds: Samples(cpu.map(\.workers)).median)), "
        + "supervisor \(duration(nanoseconds: Samples(cpu.map(\.supervisor)).median))); "
        + "the fastest fifth of the joins used \(duration(nanoseconds: fastest.cpu)) in \(duration(nanoseconds: fastest.time)), "
        + "the slowest fifth \(duration(nanoseconds: slowest.cpu)) in \(duration(nanoseconds: slowest.time))"
}

/// Joins `ssid`, checking the decision is `decided` by `helper`, then leaves the network.
/// Returns the time from calling `join` to the decision, and the CPU both processes used
/// until `join` returned.
private func decisionTime(_ bench: RuntimeBench, _ ssid: String, decided: HotspotState,
                          by helper: String?) async throws -> (time: Double, cpu: CPUUse) {
    _ = bench.probe.takeDecision()
    let workers = bench.engine.workerProcessIDs
    let cpuAtStart = try CPUUse.now(workers: workers)
    let start = Deadline.now.nanoseconds
    let state = await bench.runtime.join(NetworkDescription(ssid: ssid))
    let cpu = try CPUUse.now(workers: workers).since(cpuAtStart)
    guard state == .authenticated, let decision = bench.probe.takeDecision(),
          decision.to == decided, decision.helper == helper else {
        throw BenchError("joining \(ssid) did not end as expected (ended \(state))")
    }
    await bench.runtime.leave(ssid)
    return (Double(decision.at - start), cpu)
}

/// Sends one evaluate command to every script at once straight through the engine and
/// returns how long until all had answered.
private func directEvaluation(_ bench: RuntimeBench, ssid: String) async throws -> Double {
    let command = RuntimeBench.command(.evaluate, ssid: ssid)
    let start = Deadline.now.nanoseconds
    let answered = await withTaskGroup(of: Bool.self) { group in
        for handle in bench.direct {
            group.addTask {
                let answer = try? await bench.engine.call(handle, "dispatch", [command]).get()
                return answer.map(DispatchAnswer.init)?.confidence == "none"
            }
        }
        return await group.reduce(true) { $0 && $1 }
    }
    let elapsed = nanoseconds(since: start)
    guard answered else { throw BenchError("a direct evaluate did not answer none") }
    return elapsed
}
