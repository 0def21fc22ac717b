/// Resident memory of the idle daemon, `hotspot-helper run` (the supervisor process and
/// its worker processes), holding 1, 50 and 100 helper scripts: sampled 1 s after it has
/// authenticated its network, then stopped with SIGTERM. Baseline: the stock interpreter
/// holding the same scripts in one state.
func measureDaemonMemory() async throws -> [Figure] {
    var figures: [Figure] = []
    for count in [1, 50, 100] {
        let sources = (0..<count).map { Scripts.helper($0) }
        let daemon = try IdleDaemon(helperScripts: sources)
        try await Task.sleep(for: .seconds(1))
        let memory = try ProcessTreeMemory(root: daemon.process.pid)
        guard daemon.stop() == 0 else { throw BenchError("run with \(count) scripts did not stop cleanly on SIGTERM") }
        let stock = try ResidentMemory(status: StockLua.run(holding: sources))
        // The goal is judged on the RAM the daemon's processes keep resident together.
        let together = memory.distinct ?? memory.resident
        figures.append(Figure(
            name: "Idle daemon RSS, \(count) script\(count == 1 ? "" : "s")",
            result: "\(mebibytes(together)) \(memory.distinct == nil ? "RSS added up" : "distinct pages") in \(memory.processes) processes "
                + "(RSS added up \(mebibytes(memory.resident)), PSS \(mebibytes(memory.proportional)), anonymous \(mebibytes(memory.anonymous)))",
            baseline: (mebibytes(stock.total), ratio(Double(together), over: Double(stock.total)),
                       "RSS: VmRSS of a lua5.4 process holding the same scripts in one state. Distinct pages: the physical pages resident in the daemon or any of its workers, each counted once (from /proc/PID/pagemap, as root); RSS added up counts the libraries they share once per process."),
            goals: count == 50 ? [.init(text: "≤ 20 MiB", met: together <= 20 << 20)] : []))
    }
    return figures
}
