/// Resident memory of the idle daemon, `hotspot-helper run` (the supervisor process and
/// its worker processes), holding 1, 50 and 100 helper scripts: sampled 1 s after it has
/// authenticated its network, then stopped with SIGTERM. Baseline: the stock interpreter
/// holding the same scripts in one state.
func measureDaemonMemory() async throws -> [Figure] {
    var figures: [Figure] = []
    for count in [1, 50, 100] {
        let sources = (0..<count).map { Scripts.helper($0) }
        let scripts = try ScratchDirectory(helperScripts: sources)
        let state = try ScratchDirectory()
        defer {
            scripts.remove()
            state.remove()
        }
        let daemon = try ChildProcess(HelperCommand.run(scripts: scripts.path, state: state.path, ssid: "Venue-0"))
        daemon.closeInput()
        _ = try daemon.readLine(containing: #""to":"authenticated""#)
        try await Task.sleep(for: .seconds(1))
        let memory = try ProcessTreeMemory(root: daemon.pid)
        guard daemon.terminate() == 0 else { throw BenchError("run with \(count) scripts did not stop cleanly on SIGTERM") }
        let stock = try ResidentMemory(status: StockLua.run(holding: sources))
        figures.append(Figure(
            name: "Idle daemon RSS, \(count) script\(count == 1 ? "" : "s")",
            result: "\(mebibytes(memory.resident)) in \(memory.processes) processes (anonymous \(mebibytes(memory.anonymous)), PSS \(mebibytes(memory.proportional)))",
            baseline: (mebibytes(stock.total), ratio(Double(memory.resident), over: Double(stock.total)),
                       "RSS: VmRSS of a lua5.4 process holding the same scripts in one state."),
            goals: count == 50 ? [.init(text: "≤ 30 MiB", met: memory.resident <= 30 << 20)] : []))
    }
    return figures
}
