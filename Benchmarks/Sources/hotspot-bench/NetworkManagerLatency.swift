import LuaSandbox

// How soon `run --source networkmanager` acts on what a real NetworkManager says, in a
// testbed of namespaces (NetworkManagerTestbed). Both ends are times on CLOCK_MONOTONIC: the
// signal's, when it reached the bench's witness on the same bus (SignalWitness, with the
// daemon's own sd-bus code), stamped as poll returned with it; the command's, when the
// daemon's `state` line entering `evaluating` or `maintaining` reached the bench. The runtime
// writes that line in the same turn of its actor in which it hands the command to the
// workers, just before; no event marks the send itself. So each time leaves out the bus's
// delivery, which the witness and the daemon wait on alike, and counts a pipe and a wake-up
// of the bench's.

/// From NetworkManager's signal that the device reached ACTIVATED to the daemon entering
/// `evaluating`: the profile deactivated and activated again (`nmcli connection down/up`),
/// 12 times, each after 0.5 s idle. The daemon's one helper claims nothing, so nothing is
/// remembered and every activation is evaluated (a network whose helper is remembered is
/// maintained instead); NetworkManager does not check connectivity, so no portal it found
/// starts a command of its own.
func measureActivationToEvaluate(activations: Int = 12) async throws -> [Figure] {
    let testbed = try NetworkManagerTestbed(tag: "a", checksConnectivity: false)
    defer { testbed.stop() }
    let scripts = try ScratchDirectory(helperScripts: [Scripts.helper(0)])
    let state = try ScratchDirectory()
    defer {
        scripts.remove()
        state.remove()
    }
    let daemon = try testbed.daemon(["--scripts", scripts.path, "--state-dir", state.path, "--source", "networkmanager"])
    defer { _ = daemon.terminate() }
    let witness = try testbed.signalWitness()
    defer { _ = witness.stop() }
    let delays = try await signalToCommand(times: activations, daemon: daemon, witness: witness, signal: .activated, command: "evaluating",
                                           before: {
                                               try runProcess(testbed.nmcli(["connection", "down", NetworkManagerTestbed.profile]))
                                               _ = try daemon.readLine(containing: #""to":"inactive""#, before: fromNow(seconds: 30))
                                           },
                                           trigger: testbed.nmcli(["connection", "up", NetworkManagerTestbed.profile]))
    return [latencyFigure("NetworkManager, activation to evaluate", delays)]
}

/// From NetworkManager's connectivity turning PORTAL on a network the daemon authenticated
/// (click-through.lua) to the daemon entering `maintaining`: the client logged out at the
/// portal, then NetworkManager asked to check (`nmcli networking connectivity check`, as its
/// own timer would), 12 times, each after 0.5 s idle; after each, the helper logs in again
/// and NetworkManager's next check says FULL.
func measurePortalToMaintain(portals: Int = 12) async throws -> [Figure] {
    let testbed = try NetworkManagerTestbed(tag: "p", checksConnectivity: true)
    defer { testbed.stop() }
    let state = try ScratchDirectory()
    defer { state.remove() }
    let daemon = try testbed.daemon(["--scripts", try HelperCommand.bundledScript("click-through"), "--state-dir", state.path,
                                     "--source", "networkmanager", "--probe-url", NetworkManagerTestbed.probeURL])
    defer { _ = daemon.terminate() }
    try testbed.checkConnectivity(expecting: "full")
    let witness = try testbed.signalWitness()
    defer { _ = witness.stop() }
    let delays = try await signalToCommand(times: portals, daemon: daemon, witness: witness, signal: .portal, command: "maintaining",
                                           before: testbed.logOut,
                                           trigger: testbed.nmcli(["networking", "connectivity", "check"]),
                                           after: {
                                               _ = try daemon.readLine(containing: #""to":"authenticated""#, before: fromNow(seconds: 30))
                                               try testbed.checkConnectivity(expecting: "full")
                                           })
    return [latencyFigure("NetworkManager, PORTAL to maintain", delays)]
}

/// `times` times: `before`, 0.5 s idle, then `trigger` started (not waited for, so the
/// daemon's line is read as it comes), and the time from the witness's first note of
/// `signal` after that start to the daemon's state line entering `command`; then `after`.
private func signalToCommand(times: Int, daemon: ChildProcess, witness: SignalWitness, signal: SignalWitness.Change, command: String,
                             before: () throws -> Void, trigger: [String], after: () throws -> Void = {}) async throws -> Samples {
    var rounds: [(triggered: Int64, commanded: Int64)] = []
    for _ in 0..<times {
        try before()
        try await Task.sleep(for: .milliseconds(500))
        let triggered = Deadline.now.nanoseconds
        let triggering = try ChildProcess(trigger)
        triggering.closeInput()
        let commanded = try daemon.stampedLine(containing: #""to":"\#(command)""#, before: fromNow(seconds: 30))
        guard triggering.wait() == 0 else { throw BenchError("\(trigger.dropFirst(2).joined(separator: " ")) failed") }
        rounds.append((triggered, commanded.arrived))
        try after()
    }
    let notes = witness.stop().filter { $0.change == signal }.map(\.at)
    return Samples(try rounds.map { round in
        guard let signalled = notes.first(where: { $0 >= round.triggered }) else {
            throw BenchError("the witness saw no \(signal) signal after a trigger the daemon answered")
        }
        return Double(round.commanded - signalled)
    })
}

private func latencyFigure(_ name: String, _ delays: Samples) -> Figure {
    Figure(
        name: name,
        result: "median \(duration(nanoseconds: delays.median)), p90 \(duration(nanoseconds: delays.percentile(90))), "
            + "max \(duration(nanoseconds: delays.maximum)) (n=\(delays.count))",
        goals: [.init(text: "median ≤ 20 ms", met: delays.median <= 20e6)])
}
