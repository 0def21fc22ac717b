/// Resident memory of the whole hotspot-helper, the supervisor process and its worker
/// processes, holding 1, 50 and 100 helper scripts. There is no daemon command yet:
/// `connect --stay 3` stands in for it, a process that has loaded its scripts, joined
/// and authenticated a network and then idles with it; sampled 1.5 s after its start.
/// Baseline: the stock interpreter holding the same scripts in one state.
func measureConnectMemory() async throws -> [Figure] {
    var figures: [Figure] = []
    for count in [1, 50, 100] {
        let sources = (0..<count).map { Scripts.helper($0) }
        let scripts = try ScratchDirectory(helperScripts: sources)
        defer { scripts.remove() }
        let child = try ChildProcess(HelperCommand.connect(["--scripts", scripts.path, "--ssid", "Venue-0", "--stay", "3"]))
        child.closeInput()
        try await Task.sleep(for: .milliseconds(1500))
        let memory = try ProcessTreeMemory(root: child.pid)
        // Read to the end (the events are a few lines, they never fill the pipe), so the
        // run's exit status says whether it authenticated.
        var chunk = [UInt8](repeating: 0, count: 1 << 14)
        while child.receive(into: &chunk) > 0 {}
        guard child.wait() == 0 else { throw BenchError("connect --stay with \(count) scripts did not end authenticated") }
        let stock = try ResidentMemory(status: StockLua.run(holding: sources))
        figures.append(Figure(
            name: "connect --stay RSS (daemon stand-in), \(count) script\(count == 1 ? "" : "s")",
            result: "\(mebibytes(memory.resident)) in \(memory.processes) processes (anonymous \(mebibytes(memory.anonymous)), PSS \(mebibytes(memory.proportional)))",
            baseline: (mebibytes(stock.total), ratio(Double(memory.resident), over: Double(stock.total)),
                       "RSS: VmRSS of a lua5.4 process holding the same scripts in one state."),
            goals: count == 50 ? [.init(text: "≤ 30 MiB", met: memory.resident <= 30 << 20)] : []))
    }
    return figures
}
