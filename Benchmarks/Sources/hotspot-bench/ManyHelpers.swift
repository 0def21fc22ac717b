#if canImport(Glibc)
import Glibc
#endif
import HotspotCore
import HotspotRuntime
import LuaSandbox

/// 10,000 venue helpers on one device, each declaring its network (`Scripts.declaredHelper`),
/// as a roaming provider's catalog holds them: the join decision, the daemon's start and
/// resident memory, `check` of them all, and one helper of them updated.
func measureManyHelpers(count: Int = 10_000) async throws -> [Figure] {
    let sources = (0..<count).map { Scripts.declaredHelper($0) }
    let name = "\(count == 10_000 ? "10,000" : String(count)) declared helpers"
    var figures: [Figure] = []
    figures.append(try await measureDeclaredDecision(sources, name: name))
    figures.append(try await measureCatalogUpdate(sources, name: name))
    figures += try measureManyHelpersDaemon(sources, name: name)
    figures.append(try measureCheck(sources, name: name))
    return figures
}

/// From `join` to the decision (the transition out of `evaluating`), in a runtime holding
/// every helper, each join on a network of a helper chosen at random: a new SSID each time,
/// so nothing remembered of an earlier join shortens it.
private func measureDeclaredDecision(_ sources: [String], name: String, joins: Int = 150) async throws -> Figure {
    let scripts = try ScratchDirectory(helperScripts: sources)
    defer { scripts.remove() }
    let engine = try LuaEngine(HotspotRuntime.engineConfiguration(workerExecutable: HelperCommand.path))
    defer { engine.shutdown() }
    let (helpers, problems) = await HotspotRuntime.loadHelpers(at: scripts.path, into: engine)
    guard problems.isEmpty, helpers.count == sources.count else { throw BenchError("the declared helpers did not load: \(problems.prefix(3))") }
    let probe = RuntimeProbe()
    let runtime = HotspotRuntime(engine: engine, helpers: helpers, persistence: try StateDirectory(path: nil),
                                 events: { probe.record($0) })
    var generator = SystemRandomNumberGenerator()
    let chosen = (0..<sources.count).shuffled(using: &generator).prefix(joins + 10)
    var decisions: [Double] = []
    for (round, number) in chosen.enumerated() {
        let network = NetworkDescription(ssid: "Venue-\(number)", bssid: "02:00:00:00:00:01", signalStrength: 0.8)
        let start = Deadline.now.nanoseconds
        guard await runtime.join(network) == .authenticated, let decision = probe.takeDecision(),
              decision.helper == RuntimeBench.helperID(number) else {
            throw BenchError("Venue-\(number) was not authenticated by its declared helper")
        }
        await runtime.leave(network.ssid)
        if round >= 10 { decisions.append(Double(decision.at - start)) }  // the first ten warm up
    }
    let statesHeld = engine.scriptsLoaded
    let samples = Samples(decisions)
    return Figure(
        name: "\(name), join decision",
        result: "median \(duration(nanoseconds: samples.median)), p99 \(duration(nanoseconds: samples.p99)) (n=\(samples.count)); "
            + "states built \(runtime.transport.declaredStatesBuilt), held after \(statesHeld)",
        goals: [.init(text: "median ≤ 5 ms", met: samples.median <= 5e6)])
}

/// One helper's file replaced by a new version, then `HelperCatalog.refresh` (what a reload
/// runs), timed; the update must reload that helper alone and leave every other helper the
/// same load (its state untouched).
private func measureCatalogUpdate(_ sources: [String], name: String, updates: Int = 20) async throws -> Figure {
    let scripts = try ScratchDirectory(helperScripts: sources)
    defer { scripts.remove() }
    let engine = try LuaEngine(HotspotRuntime.engineConfiguration(workerExecutable: HelperCommand.path))
    defer { engine.shutdown() }
    let catalog = HelperCatalog(path: scripts.path, engine: engine, retirementDelay: .milliseconds(10))
    let first = await catalog.refresh()
    guard first.problems.isEmpty, first.added.count == sources.count else { throw BenchError("the declared helpers did not load") }
    var times: [Double] = []
    for update in 1...updates {
        let number = (update * 7919) % sources.count
        let id = RuntimeBench.helperID(number)
        let before = await catalog.helpers
        _ = try scripts.write(sources[number] + "\n-- version \(update)\n", to: id + ".lua")
        let start = Deadline.now.nanoseconds
        let change = await catalog.refresh()
        times.append(nanoseconds(since: start))
        let after = await catalog.helpers
        guard change.reloaded == [id], change.added.isEmpty, change.removed.isEmpty,
              zip(before, after).filter({ $0 != $1 }).map(\.0.id) == [id] else {
            throw BenchError("updating \(id) changed \(change) instead of that helper alone")
        }
    }
    let samples = Samples(times)
    return Figure(
        name: "\(name), one updated",
        result: "median \(duration(nanoseconds: samples.median)), max \(duration(nanoseconds: samples.maximum)) (n=\(samples.count)); "
            + "the other helpers kept their loads",
        goals: [.init(text: "≤ 100 ms", met: samples.maximum <= 100e6)])
}

/// `hotspot-helper run` with every helper, keeping Venue-0 (the first helper's): from its
/// spawn to the network authenticated (start to ready), then its processes' resident memory
/// once idle for a second. Every start is on the same scripts and state directory, as a
/// device starts again: the first runs every script to describe it (its time is given apart),
/// the others find the descriptions it kept.
private func measureManyHelpersDaemon(_ sources: [String], name: String, starts: Int = 5) throws -> [Figure] {
    let scripts = try ScratchDirectory(helperScripts: sources)
    defer { scripts.remove() }
    let state = try ScratchDirectory()
    defer { state.remove() }
    var toReady: [Double] = []
    var first = 0.0
    var memory: ProcessTreeMemory?
    // Start 0 warms the page cache and keeps the descriptions.
    for run in 0...starts {
        let start = Deadline.now.nanoseconds
        let daemon = try IdleDaemon(scripts: scripts, state: state)
        let ready = nanoseconds(since: start)
        if run > 0 { toReady.append(ready) } else { first = ready }
        if run == starts {
            sleep(1)
            memory = try ProcessTreeMemory(root: daemon.process.pid)
        }
        guard daemon.stop() == 0 else { throw BenchError("run with \(sources.count) scripts did not stop cleanly on SIGTERM") }
    }
    let ready = Samples(toReady)
    guard let memory else { throw BenchError("no memory sampled") }
    let together = memory.distinct ?? memory.resident
    return [
        Figure(
            name: "\(name), start to ready",
            result: "min \(duration(nanoseconds: ready.minimum)), median \(duration(nanoseconds: ready.median)), max \(duration(nanoseconds: ready.maximum)) (n=\(ready.count)); "
                + "the first start, describing every script, \(duration(nanoseconds: first))",
            goals: [.init(text: "≤ 2 s", met: ready.median <= 2e9)]),
        Figure(
            name: "\(name), idle daemon RSS",
            result: "\(mebibytes(together)) \(memory.distinct == nil ? "RSS added up" : "distinct pages") in \(memory.processes) processes "
                + "(RSS added up \(mebibytes(memory.resident)), PSS \(mebibytes(memory.proportional)), anonymous \(mebibytes(memory.anonymous)))",
            goals: [.init(text: "≤ 64 MiB", met: together <= 64 << 20)]),
    ]
}

/// `hotspot-helper check DIR` of every helper, from its spawn to its exit.
private func measureCheck(_ sources: [String], name: String, runs: Int = 3) throws -> Figure {
    let scripts = try ScratchDirectory(helperScripts: sources)
    defer { scripts.remove() }
    var times: [Double] = []
    for run in 0...runs {
        let checked = try timedRun([HelperCommand.path, "check", scripts.path])
        if run > 0 { times.append(checked.toExit) }
    }
    let samples = Samples(times)
    return Figure(
        name: "\(name), check",
        result: "min \(duration(nanoseconds: samples.minimum)), median \(duration(nanoseconds: samples.median)), max \(duration(nanoseconds: samples.maximum)) (n=\(samples.count))",
        goals: [.init(text: "≤ 30 s", met: samples.median <= 30e9)])
}

extension Scripts {
    /// A venue script that declares its network, `Venue-N`, and authenticates at once.
    static func declaredHelper(_ number: Int) -> String {
        """
        return {
          name = "V\(number)",
          hosts = { "portal.example" },
          networks = { ssids = { "Venue-\(number)" } },
          authenticate = function(cmd) return "success" end,
          maintain = function(cmd) return "success" end,
        }
        """
    }
}
