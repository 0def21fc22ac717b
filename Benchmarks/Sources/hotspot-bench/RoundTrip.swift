import LuaSandbox

/// Figure 1: sequential calls of a trivial handler through a worker, against stock Lua
/// calling the same function in its own process.
func measureRoundTrip(samples count: Int = 20_000) async throws -> Figure {
    let engine = try makeEngine(workers: 1)
    defer { engine.shutdown() }
    let script = try await engine.load(ScriptSource(path: "trivial.lua", text: Scripts.trivial))
    for _ in 0..<2_000 {
        guard try await engine.call(script, "f").get() == [1] else { throw BenchError("f did not return 1") }
    }
    var latencies: [Double] = []
    latencies.reserveCapacity(count)
    for _ in 0..<count {
        let start = Deadline.now.nanoseconds
        let outcome = await engine.call(script, "f")
        latencies.append(nanoseconds(since: start))
        _ = try outcome.get()
    }
    let samples = Samples(latencies)
    let inProcess = try stockLuaCallNanoseconds()
    return Figure(
        name: "Round trip, trivial handler",
        result: "p50 \(duration(nanoseconds: samples.median)), p99 \(duration(nanoseconds: samples.p99)) (n=\(count))",
        baseline: (duration(nanoseconds: inProcess), ratio(samples.median, over: inProcess),
                   "Round trip: stock lua5.4 calling the same function in its own process, median per call over 31 batches of 200,000 (os.clock)."),
        goals: [.init(text: "p50 ≤ 50 µs", met: samples.median <= 50_000),
                .init(text: "p99 ≤ 500 µs", met: samples.p99 <= 500_000)])
}

/// Per-call time of `exports.f()` in the stock interpreter.
private func stockLuaCallNanoseconds() throws -> Double {
    let output = try StockLua.run("""
        local exports = { f = function() return 1 end }
        local batch, perCall = 200000, {}
        for round = 1, 31 do
            local start = os.clock()
            for _ = 1, batch do exports.f() end
            perCall[round] = (os.clock() - start) / batch * 1e9
        end
        table.sort(perCall)
        print(perCall[16])
        """)
    guard let value = Double(output.filter { !$0.isWhitespace }) else {
        throw BenchError("lua5.4 printed \(output) instead of a number")
    }
    return value
}

/// What any round trip through another process costs on this machine: a small message
/// echoed by `cat` through two pipes, with no work at either end, only the wake-ups.
/// A worker round trip cannot be cheaper than this.
func measureProcessEcho(samples count: Int = 20_000) throws -> Figure {
    let cat = try ChildProcess(["/bin/cat"])
    defer {
        cat.closeInput()
        _ = cat.wait()
    }
    let message = [UInt8](repeating: UInt8(ascii: "a"), count: 48)
    var buffer = [UInt8](repeating: 0, count: 4096)
    var latencies: [Double] = []
    latencies.reserveCapacity(count)
    for sample in 0..<(2_000 + count) {
        let start = Deadline.now.nanoseconds
        guard cat.send(message) else { throw BenchError("cat stopped reading") }
        var echoed = 0
        while echoed < message.count {
            let received = cat.receive(into: &buffer)
            guard received > 0 else { throw BenchError("cat ended early") }
            echoed += received
        }
        if sample >= 2_000 { latencies.append(nanoseconds(since: start)) }
    }
    let samples = Samples(latencies)
    return Figure(
        name: "IPC floor: echo through cat",
        result: "p50 \(duration(nanoseconds: samples.median)), p99 \(duration(nanoseconds: samples.p99)) (n=\(count))")
}
