#if canImport(Glibc)
import Glibc
#endif
import HotspotCore
import HotspotMetrics
import HotspotRuntime
import ServiceIntegration
import LuaSandbox
import Synchronization

/// The daemon's metrics (`run --metrics-listen`), per command: figure 7's runtime (64
/// networks, each kept by one of 10 helpers, one caller per network calling `maintain` back
/// to back), its events recorded into `HotspotMetrics` through the runtime's event callback
/// as the daemon's are, in turns with the same commands whose events are not recorded. A turn
/// is measured by this process's CPU clock: the metrics are recorded here, in the
/// supervisor, while the worker does the same work either way, and a turn that shares the
/// vCPUs with other work is slower by more than the whole difference where its CPU per
/// command moves less (wall time is shown beside it). The result is the CPU per command with
/// the metrics on less off, over pairs of turns (their order alternating). Baseline: the CPU
/// per command with the metrics off.
func measureMetricsOverhead(networks count: Int = 64, helpers: Int = 10, pairs: Int = 20) async throws -> Figure {
    let metrics = SwitchedMetrics()
    let (bench, ssids) = try await RuntimeBench.keeping(networks: count, helpers: helpers, observe: metrics.record)
    defer { bench.finish() }
    let turnLength: Duration = .milliseconds(250)
    func turn(recording: Bool) async throws -> (cpu: Double, wall: Double) {
        metrics.isRecording = recording
        let cpuAtStart = try processCPUTime(getpid())
        let tally = await maintainEach(bench.runtime, ssids, for: turnLength)
        let cpu = try processCPUTime(getpid()) - cpuAtStart
        guard tally.failed == 0, tally.succeeded > 0 else { throw BenchError("\(tally.failed) maintains failed") }
        return (cpu / Double(tally.succeeded), tally.elapsed / Double(tally.succeeded))
    }
    // The first turn with the metrics on makes their series; neither warm-up turn counts.
    _ = try await turn(recording: true)
    _ = try await turn(recording: false)
    var on: [(cpu: Double, wall: Double)] = []
    var off: [(cpu: Double, wall: Double)] = []
    for pair in 0..<pairs {
        if pair.isMultiple(of: 2) {
            on.append(try await turn(recording: true))
            off.append(try await turn(recording: false))
        } else {
            off.append(try await turn(recording: false))
            on.append(try await turn(recording: true))
        }
    }
    guard bench.probe.failedCommands.load(ordering: .relaxed) == 0 else {
        throw BenchError("\(bench.probe.failedCommands.load(ordering: .relaxed)) commands failed")
    }
    let cpu = Samples(zip(on, off).map { $0.cpu - $1.cpu })
    let wall = Samples(zip(on, off).map { $0.wall - $1.wall })
    let (cpuOn, cpuOff) = (Samples(on.map(\.cpu)), Samples(off.map(\.cpu)))
    func signed(_ nanoseconds: Double) -> String { (nanoseconds < 0 ? "" : "+") + duration(nanoseconds: nanoseconds) }
    // The middle half of the pairs: a turn that shared the vCPUs with other work moves by
    // more than the whole difference.
    func spread(_ samples: Samples) -> String { "\(signed(samples.percentile(25))) to \(signed(samples.percentile(75)))" }
    return Figure(
        name: "Metrics, per-command overhead",
        result: "CPU \(signed(cpu.median)) per command (median of \(pairs) pairs of turns, middle half \(spread(cpu))); "
            + "CPU per command on \(duration(nanoseconds: cpuOn.median)), off \(duration(nanoseconds: cpuOff.median)); "
            + "wall time per command \(signed(wall.median)) (\(spread(wall))); "
            + "a maintain's events recorded alone \(duration(nanoseconds: recordingAlone())) "
            + "(\(count) networks and callers, \(helpers) helpers, turns of \(duration(nanoseconds: turnLength / .nanoseconds(1))))",
        baseline: (duration(nanoseconds: cpuOff.median), ratio(cpu.median, over: cpuOff.median),
                   "Metrics overhead: the CPU of this process (the supervisor, where the metrics are recorded) per maintain with the runtime's events recorded into HotspotMetrics, less the same without, in pairs of 0.25 s turns. Baseline: the CPU per maintain with the metrics off, median of the turns."),
        goals: [.init(text: "median ≤ 2 µs per command", met: cpu.median <= 2_000)])
}

/// The floor under the difference: the three events of a maintain (its command, and the
/// transitions to `maintaining` and back) recorded into `HotspotMetrics` one after another on
/// this thread, nanoseconds per maintain.
private func recordingAlone(maintains: Int = 200_000) -> Double {
    let metrics = HotspotMetrics(version: "bench")
    let events: [HotspotEvent] = [
        .state(StateEvent(network: "Network-0", from: .authenticated, to: .maintaining, helper: "helper-000")),
        .command(CommandEvent(network: "Network-0", command: .maintain, helper: "helper-000", result: .success, milliseconds: 0.08)),
        .state(StateEvent(network: "Network-0", from: .maintaining, to: .authenticated, helper: "helper-000")),
    ]
    events.forEach(metrics.record)
    let start = Deadline.now.nanoseconds
    for _ in 0..<maintains { events.forEach(metrics.record) }
    return nanoseconds(since: start) / Double(maintains)
}

/// The daemon's metrics, recorded from the runtime's events only while switched on, so one
/// runtime serves the turns with the metrics on and off.
private final class SwitchedMetrics: Sendable {
    private let metrics = HotspotMetrics(version: "bench")
    private let recording = Atomic<Bool>(false)

    var isRecording: Bool {
        get { recording.load(ordering: .relaxed) }
        set { recording.store(newValue, ordering: .relaxed) }
    }

    func record(_ event: HotspotEvent) {
        if isRecording { metrics.record(event) }
    }
}

/// The exposition of 100 helpers, as Prometheus gets it: a GET /metrics on a new loopback
/// connection, from `connect` to the last byte, each after 20 ms idle (scrapes come every 15
/// s or more, so each finds the responder asleep). The metrics are those of a daemon whose
/// helpers have each answered every command with every result the model allows (the label
/// sets a fleet's daemon gathers over time), every verdict, a reload with a load error and
/// arbitrations, recorded into `HotspotMetrics` in this process and served by the real
/// `MetricsResponder`, the levels read at each scrape as the daemon reads them (the worker's
/// memory and replacements from a running engine). A real daemon cannot be brought there in
/// a bench: its helpers get authenticate, present_ui, maintain and logoff only on networks
/// they were chosen for, one network per interface, and failures wait out a backoff.
/// Baseline: a real `hotspot-helper run` with 100 generated scripts and `--metrics-listen`,
/// its one network joined, scraped the same way in turns: the process's own path (its
/// responder's thread, the daemon's status) with the series of its first join only.
func measureMetricsExposition(helpers count: Int = 100, scrapes: Int = 200) async throws -> Figure {
    let metrics = HotspotMetrics(version: "bench")
    for event in fleetEvents(helpers: count) { metrics.record(event) }
    let engine = try LuaEngine(HotspotRuntime.engineConfiguration(workerExecutable: HelperCommand.path))
    defer { engine.shutdown() }
    let exposition: @Sendable () -> [UInt8] = {
        let replacements = Dictionary(uniqueKeysWithValues: engine.workerReplacements.map { ($0.key.rawValue, $0.value) })
        return metrics.exposition(.init(networkStates: ["Venue-0": .authenticated], workerResidentBytes: engine.workerResidentBytes,
                                        workerReplacements: replacements))
    }
    let responder = try MetricsResponder(listening: MetricsResponder.ListenAddress.parse("127.0.0.1:0")!) { exposition() }
    defer { responder.stop() }
    let daemon = try IdleDaemon(helperScripts: (0..<count).map { Scripts.helper($0) }, servingMetrics: true)
    defer { _ = daemon.stop() }
    let (port, daemonPort) = (Int(responder.address.port), daemon.metricsPort!)

    let warmup = 5
    var times: [Double] = []
    var making: [Double] = []
    var daemonTimes: [Double] = []
    var (body, daemonBody): ([UInt8], [UInt8]) = ([], [])
    for index in 0..<(warmup + scrapes) {
        try await Task.sleep(for: .milliseconds(20))
        let fleet = try scrape(port: port)
        let start = Deadline.now.nanoseconds
        _ = exposition()
        let made = nanoseconds(since: start)
        try await Task.sleep(for: .milliseconds(20))
        let own = try scrape(port: daemonPort)
        guard index >= warmup else { continue }
        times.append(fleet.time)
        making.append(made)
        daemonTimes.append(own.time)
        (body, daemonBody) = (fleet.body, own.body)
    }
    let (scraped, made, own) = (Samples(times), Samples(making), Samples(daemonTimes))
    let samples = body.split(separator: UInt8(ascii: "\n")).filter { $0.first != UInt8(ascii: "#") }.count
    return Figure(
        name: "Metrics exposition, \(count) helpers",
        result: "median \(duration(nanoseconds: scraped.median)), p99 \(duration(nanoseconds: scraped.p99)) (n=\(scraped.count)); "
            + "\(grouped(body.count)) bytes, \(grouped(samples)) samples, made alone in median \(duration(nanoseconds: made.median)); "
            + "the daemon's own \(grouped(daemonBody.count)) bytes",
        baseline: (duration(nanoseconds: own.median), ratio(scraped.median, over: own.median),
                   "Metrics exposition: GET /metrics on a new loopback connection, from connect to the last byte, after 20 ms idle; 100 helpers that each answered every command with every valid result, in this process's HotspotMetrics and MetricsResponder. Baseline: the same GET of a real `hotspot-helper run` with 100 generated scripts and --metrics-listen, its one network joined, in turns; median."),
        goals: [.init(text: "median ≤ 5 ms", met: scraped.median <= 5_000_000)])
}

/// A GET /metrics on a new connection to 127.0.0.1:`port`: the time from `connect` to the
/// last byte, and the exposition.
private func scrape(port: Int) throws -> (time: Double, body: [UInt8]) {
    let start = Deadline.now.nanoseconds
    let answer = try LocalStream(port: port).get("/metrics", port: port)
    let time = nanoseconds(since: start)
    guard answer.status == 200, !answer.body.isEmpty else { throw BenchError("GET /metrics on port \(port) answered \(answer.status)") }
    return (time, answer.body)
}

/// What a daemon's metrics have recorded once each of `count` helpers has answered every
/// command with every result the model allows, at durations spread over the buckets, with
/// an arbitration per helper's network, every connectivity verdict, and a reload with a
/// script that did not load.
private func fleetEvents(helpers count: Int) -> [HotspotEvent] {
    var events: [HotspotEvent] = []
    for number in 0..<count {
        let (helper, network) = (RuntimeBench.helperID(number), "Venue-\(number)")
        for command in HotspotCommand.allCases {
            for result in CommandResult.allCases where result.ruleBroken(answering: command) == nil {
                for milliseconds in [2.0, 30, 400, 3_000, 40_000] {
                    events.append(.command(CommandEvent(network: network, command: command, helper: helper, result: result,
                                                        milliseconds: milliseconds)))
                }
            }
        }
        events.append(.state(StateEvent(network: network, from: .inactive, to: .evaluating, helper: nil)))
        events.append(.state(StateEvent(network: network, from: .evaluating, to: .authenticating, helper: helper)))
    }
    let verdicts: [ConnectivityState] = [.connected, .connectedWithoutInternet, .captive, .partial, .determining, .notConnected]
    events += verdicts.map { .connectivity(ConnectivityEvent(network: "Venue-0", verdict: $0)) }
    events.append(.reload(ReloadEvent(reason: "SIGHUP", reloaded: [RuntimeBench.helperID(0)], problems: ["helper-001.lua:3: unexpected symbol"])))
    return events
}
