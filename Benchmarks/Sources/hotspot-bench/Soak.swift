#if canImport(Glibc)
import Glibc
#endif
import LuaSandbox
import PortalSimulator

/// The daemon kept busy for minutes: `hotspot-helper run` on the simulator's `session-expiry`
/// venue (sessions of 2 s) with the bundled hotel.lua and maintain every 50 ms, so every
/// maintain probes the portal and about every 2 s one finds the session expired and logs in
/// again. The resident memory of the daemon and of each worker is sampled once the network
/// is authenticated, after a quarter of the run (30 s of the default 2 minutes), and at the
/// end; the goal is on what they still gained after that quarter. The run lasts
/// HOTSPOT_BENCH_SOAK_SECONDS seconds (120 when unset), so a quick look can be shorter.
func measureSoak() async throws -> [Figure] {
    let seconds = try secondsFromEnvironment("HOTSPOT_BENCH_SOAK_SECONDS", unset: 120, within: 4...Double.greatestFiniteMagnitude,
                                             described: "at least 4 (two expired sessions)")
    var settings = ScenarioSettings()
    settings.portalHost = "guest.grandhotel.example"
    settings.venueName = "Grand Hotel"
    let portal = try await SimulatedPortal.start(.sessionExpiry, settings: settings, dnsPort: 0)
    let state = try ScratchDirectory()
    // Kept until the portal has stopped, which a failure must not skip.
    var figures: [Figure] = []
    var failure: (any Error)?
    do {
        figures = [try soak(portal, state: state, seconds: seconds)]
    } catch {
        failure = error
    }
    await portal.stop()
    state.remove()
    if let failure { throw failure }
    return figures
}

private func soak(_ portal: SimulatedPortal, state: ScratchDirectory, seconds: Double) throws -> Figure {
    let hotel = try HelperCommand.bundledScript("hotel")
    let daemon = try ChildProcess(HelperCommand.run(scripts: hotel, state: state.path, ssid: "Grand-Hotel") + [
        "--resolver", "127.0.0.1:\(portal.dns!.port)",
        "--probe-url", "http://connectivitycheck.bench.example:\(portal.port)/generate_204",
        "--maintain-interval", "0.05",
    ])
    daemon.closeInput()
    _ = try daemon.readLine(containing: #""to":"authenticated""#)
    let start = Deadline.now.nanoseconds
    // Its output ends early only when it has ended: say how, and when.
    func readLines(for fraction: Double) throws -> [String] {
        do {
            return try daemon.readLines(until: start + Int64(seconds * fraction * 1e9))
        } catch {
            throw BenchError("the soaked daemon ended after \(duration(nanoseconds: nanoseconds(since: start))) (wait status \(daemon.wait()))")
        }
    }
    let atStart = try SoakSample(daemon: daemon.pid)
    var lines = try readLines(for: 0.25)
    let afterQuarter = try SoakSample(daemon: daemon.pid)
    lines += try readLines(for: 1)
    let atEnd = try SoakSample(daemon: daemon.pid)
    guard daemon.terminate() == 0 else { throw BenchError("the soaked daemon did not stop cleanly on SIGTERM") }

    let maintains = lines.filter { $0.contains(#""event":"command","command":"maintain""#) }
    let failed = maintains.filter { !$0.contains(#""result":"success""#) }.count
    let loginsAgain = lines.filter { $0.contains("the session expired") }.count
    guard loginsAgain > 0 else { throw BenchError("in \(seconds) s the daemon never logged in again; the soak did no work") }
    let quarter = duration(nanoseconds: seconds * 0.25e9)
    let growth = atEnd.resident - afterQuarter.resident
    let replaced = atEnd.workers.map(\.pid) == atStart.workers.map(\.pid) ? "" : "; workers replaced"
    return Figure(
        name: "Soak: run maintaining session-expiry every 50 ms, \(duration(nanoseconds: seconds * 1e9))",
        result: "RSS at start / \(quarter) / end: daemon \(atStart.daemonText) / \(afterQuarter.daemonText) / \(atEnd.daemonText), "
            + "worker\(atEnd.workers.count == 1 ? "" : "s") \(atStart.workersText) / \(afterQuarter.workersText) / \(atEnd.workersText); "
            + "after \(quarter): \(signedKibibytes(growth)) (anonymous \(signedKibibytes(atEnd.anonymous - afterQuarter.anonymous))); "
            + "\(grouped(maintains.count)) maintains (\(failed) not success), \(loginsAgain) logins again\(replaced)",
        goals: [.init(text: "growth < 1 MiB after \(quarter)", met: growth < 1 << 20)])
}


/// The resident memory of the daemon and of each of its workers at one moment.
private struct SoakSample {
    let daemon: ResidentMemory
    let workers: [(pid: pid_t, memory: ResidentMemory)]

    init(daemon pid: pid_t) throws {
        daemon = try ResidentMemory(pid: pid)
        workers = try childProcesses(of: pid).sorted().map { ($0, try ResidentMemory(pid: $0)) }
    }

    /// VmRSS of all of them added up.
    var resident: Int { daemon.total + workers.map(\.memory.total).reduce(0, +) }
    /// RssAnon of all of them added up.
    var anonymous: Int { daemon.anonymous + workers.map(\.memory.anonymous).reduce(0, +) }

    var daemonText: String { mebibytes(daemon.total) }
    var workersText: String { workers.map { mebibytes($0.memory.total) }.joined(separator: " + ") }
}
