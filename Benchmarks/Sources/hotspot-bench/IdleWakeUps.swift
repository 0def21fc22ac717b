import LuaSandbox

/// How often the idle daemon wakes: `run --source networkmanager` keeping one network it
/// authenticated (click-through.lua, in the NetworkManager testbed), its maintain due only
/// after the window and nothing said by NetworkManager meanwhile (connectivity FULL, its own
/// check hourly). The context switches, voluntary and involuntary, of every thread of the
/// daemon and of its worker over the window, HOTSPOT_BENCH_IDLE_SECONDS long (60 when unset),
/// as wake-ups a minute. Baseline: the same daemon following the same interface with
/// `--source interface:IFACE:SSID`, which checks connectivity with probes of its own every
/// 10 s (today's polling), over as long a window.
func measureIdleWakeUps() async throws -> [Figure] {
    let seconds = try secondsFromEnvironment("HOTSPOT_BENCH_IDLE_SECONDS", unset: 60, within: 5...3600,
                                             described: "from 5 to 3600 (maintain is due an hour after the window)")
    let testbed = try NetworkManagerTestbed(tag: "i", checksConnectivity: true)
    defer { testbed.stop() }
    let following = try await idleSwitches(in: testbed, source: "networkmanager", seconds: seconds)
    let polling = try await idleSwitches(in: testbed, source: "interface:\(testbed.interface):\(NetworkManagerTestbed.profile)",
                                         seconds: seconds)
    let perMinute = Double(following.total) * 60 / seconds
    let pollingPerMinute = Double(polling.total) * 60 / seconds
    return [Figure(
        name: "Idle daemon following NetworkManager, wake-ups",
        result: "\(fixed(perMinute, decimals: 1)) a minute: \(following.total) context switches in \(duration(nanoseconds: seconds * 1e9)) "
            + "(\(following.busiest)); polling: \(polling.busiest)",
        baseline: ("\(fixed(pollingPerMinute, decimals: 1)) a minute", ratio(perMinute, over: pollingPerMinute),
                   "Idle wake-ups: the context switches, voluntary and involuntary, of every thread of `run --json` and of its worker (/proc/PID/task/TID/status, sampled every second) over the window, a minute's worth, by thread name; the network authenticated by click-through.lua, in the NetworkManager testbed, 2 s before; maintain due an hour after the window. The result: `--source networkmanager`, NetworkManager saying nothing meanwhile. Baseline: the same daemon with `--source interface:IFACE:SSID` on the same interface, which checks connectivity with its own probes every 10 s (--probe-interval's default): today's polling."),
        goals: [.init(text: "≤ 5 a minute", met: perMinute <= 5)])]
}

/// The context switches of a daemon following `source` over `seconds`, once it has logged in
/// again (the client logged out first, so the helper logs in as on a network it meets) and
/// what follows a login has settled: NetworkManager's checks, libcurl's loading thread, the
/// worker's tidying.
private func idleSwitches(in testbed: NetworkManagerTestbed, source: String, seconds: Double) async throws -> ThreadSwitches {
    try testbed.logOut()
    let state = try ScratchDirectory()
    defer { state.remove() }
    let daemon = try testbed.daemon(["--scripts", try HelperCommand.bundledScript("click-through"), "--state-dir", state.path,
                                     "--source", source, "--probe-url", NetworkManagerTestbed.probeURL,
                                     "--maintain-interval", String(Int(seconds) + 3600)])
    defer { _ = daemon.terminate() }
    try testbed.checkConnectivity(expecting: "full")
    try await Task.sleep(for: .seconds(2))
    var switches = ThreadSwitches()
    let end = Deadline.now.nanoseconds + Int64(seconds * 1e9)
    try switches.sample(root: daemon.pid)
    while case let remaining = end - Deadline.now.nanoseconds, remaining > 0 {
        try await Task.sleep(for: .nanoseconds(min(remaining, 1_000_000_000)))
        try switches.sample(root: daemon.pid)
    }
    return switches
}
