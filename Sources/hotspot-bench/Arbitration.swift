import HotspotRuntime
import LuaSandbox

/// Figure 6: evaluate arbitration with 1, 10 and 100 helpers, from `join` to the decision
/// (the transition out of `evaluating`). Two cases: nobody claims the network, so the
/// runtime waits for every helper's answer; and one helper, in the middle of the load
/// order, answers `high` and the others are cancelled.
func measureArbitration() async throws -> [Figure] {
    var figures: [Figure] = []
    for count in [1, 10, 100] {
        figures += try await measureArbitration(helpers: count, joins: count == 100 ? 300 : 500)
    }
    return figures
}

private func measureArbitration(helpers count: Int, joins: Int) async throws -> [Figure] {
    let warmup = 50
    let winner = count / 2
    // A new SSID for every join: a network a helper authenticated is remembered and would
    // skip evaluate on a rejoin.
    let claimed = (0..<(warmup + joins)).map { "Claimed-\($0)" }
    let unclaimed = (0..<(warmup + joins)).map { "Unclaimed-\($0)" }
    let bench = try await RuntimeBench(sources: (0..<count).map {
        Scripts.helper($0, claims: $0 == winner ? claimed : [])
    })
    defer { bench.finish() }
    let nobody = try await decisionTimes(bench, unclaimed, warmup: warmup, decided: .authenticated, by: nil)
    let high = try await decisionTimes(bench, claimed, warmup: warmup, decided: .authenticating,
                                       by: "helper-" + String(repeating: "0", count: 3 - String(winner).count) + String(winner))
    let direct = try await directEvaluations(bench, rounds: warmup + joins, warmup: warmup)
    guard bench.probe.failedCommands.load(ordering: .relaxed) == 0 else {
        throw BenchError("\(bench.probe.failedCommands.load(ordering: .relaxed)) commands failed")
    }
    let helpers = "\(count) helper\(count == 1 ? "" : "s")"
    func result(_ samples: Samples) -> String {
        "median \(duration(nanoseconds: samples.median)), p99 \(duration(nanoseconds: samples.p99)) (n=\(samples.count))"
    }
    let goals: [Figure.Goal] = count == 100
        ? [.init(text: "median ≤ 2 ms", met: nobody.median <= 2_000_000),
           .init(text: "p99 ≤ 2 ms", met: nobody.p99 <= 2_000_000)]
        : []
    return [
        Figure(name: "Evaluate arbitration, \(helpers), all answered",
               result: result(nobody),
               baseline: (duration(nanoseconds: direct.median), ratio(nobody.median, over: direct.median),
                          "Arbitration: the same evaluate commands (one per helper, the same command table) sent at once with `engine.call(handle, \"dispatch\", ...)` to the same scripts loaded a second time in the same engine, until all answered: the engine's share, without the runtime's actor, events and checks; median."),
               goals: goals),
        Figure(name: "Evaluate arbitration, \(helpers), one high",
               result: result(high)),
    ]
}

/// Joins each network once and returns, past the first `warmup`, the time from calling
/// `join` to the decision, checking the decision is `decided` by `helper`.
private func decisionTimes(_ bench: RuntimeBench, _ ssids: [String], warmup: Int,
                           decided: HotspotState, by helper: String?) async throws -> Samples {
    var times: [Double] = []
    times.reserveCapacity(ssids.count)
    for (index, ssid) in ssids.enumerated() {
        _ = bench.probe.takeDecision()
        let start = Deadline.now.nanoseconds
        let state = await bench.runtime.join(NetworkDescription(ssid: ssid))
        guard state == .authenticated, let decision = bench.probe.takeDecision(),
              decision.to == decided, decision.helper == helper else {
            throw BenchError("joining \(ssid) did not end as expected (ended \(state))")
        }
        await bench.runtime.leave(ssid)
        if index >= warmup { times.append(Double(decision.at - start)) }
    }
    return Samples(times)
}

/// Sends one evaluate command to every script at once straight through the engine and
/// waits for all the answers, `rounds` times; the times past the first `warmup`.
private func directEvaluations(_ bench: RuntimeBench, rounds: Int, warmup: Int) async throws -> Samples {
    var times: [Double] = []
    for round in 0..<rounds {
        let command = RuntimeBench.command(.evaluate, ssid: "Direct-\(round)")
        let start = Deadline.now.nanoseconds
        let answered = await withTaskGroup(of: Bool.self) { group in
            for handle in bench.direct {
                group.addTask {
                    let answer = try? await bench.engine.call(handle, "dispatch", [command]).get().first
                    return answer?.tableValue?["network"].tableValue?["confidence"] == "none"
                }
            }
            return await group.reduce(true) { $0 && $1 }
        }
        let elapsed = nanoseconds(since: start)
        guard answered else { throw BenchError("a direct evaluate did not answer none") }
        if round >= warmup { times.append(elapsed) }
    }
    return Samples(times)
}
