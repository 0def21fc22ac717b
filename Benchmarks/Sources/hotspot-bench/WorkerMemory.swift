import LuaSandbox

/// Figure 3: resident memory of one idle worker holding 1, 50 and 100 venue scripts,
/// against the stock interpreter holding the same scripts in a single state.
func measureWorkerMemory() async throws -> [Figure] {
    var figures: [Figure] = []
    for count in [1, 50, 100] {
        let sources = (0..<count).map { Scripts.venue($0) }
        let engine = try makeEngine(workers: 1)
        for (number, text) in sources.enumerated() {
            _ = try await engine.load(ScriptSource(path: "venue\(number).lua", text: text))
        }
        let worker = try ResidentMemory(pid: engine.workerProcessIDs[0])
        engine.shutdown()
        let stock = try ResidentMemory(status: StockLua.run(holding: sources))
        figures.append(Figure(
            name: "Idle worker RSS, \(count) script\(count == 1 ? "" : "s")",
            result: "\(mebibytes(worker.total)) (anonymous \(mebibytes(worker.anonymous)))",
            baseline: (mebibytes(stock.total), ratio(Double(worker.total), over: Double(stock.total)),
                       "RSS: VmRSS of a lua5.4 process holding the same scripts in one state."),
            goals: count == 50 ? [.init(text: "≤ 30 MiB", met: worker.total <= 30 << 20)] : []))
    }
    return figures
}

extension StockLua {
    /// Runs every source's main chunk, keeps what they return, and returns the process's
    /// /proc status at that point.
    static func run(holding sources: [String]) throws -> String {
        let literals = sources.map { "[==[\n\($0)]==]" }.joined(separator: ",\n")
        return try run("""
            local sources = { \(literals) }
            local kept = {}
            for number, source in ipairs(sources) do kept[number] = assert(load(source, "=venue" .. number))() end
            io.write(io.open("/proc/self/status"):read("a"))
            """)
    }
}
