import HotspotRuntime
import Locking
import LuaSandbox
import Testing
import TestSupport

/// The engine's batches as the runtime sends them, on the helper worker.
@Suite struct BatchedCallsTests {
    /// `callAll(count:)` sends the first call before it builds the next: when the second is
    /// being built, the first is already with the worker (the sleeper keeps it there). Seen in
    /// the engine's own count rather than in time, which a loaded machine stretches.
    @Test func callAllSendsTheFirstCallsWhileBuildingTheRest() async throws {
        let engine = try LuaEngine(HotspotRuntime.engineConfiguration())
        defer { engine.shutdown() }
        let sleeper = try await engine.load(ScriptSource(path: "sleeper.lua", text: """
            return { hosts = {}, run = function() sleep(2) return 'slept' end }  -- real time: keeps the call with the worker
            """))
        let quick = try await engine.load(ScriptSource(path: "quick.lua", text: """
            return { hosts = {}, run = function() return 'quick' end }
            """))
        let inFlightWhileBuildingTheSecond = PlainLock<Int?>(nil)
        let outcomes = engine.callAll(count: 2) { index in
            if index == 1 { inFlightWhileBuildingTheSecond.withLock { $0 = engine.requestsInFlight } }
            return ScriptCall(index == 0 ? sleeper : quick, "run")
        }
        var answers: [Int: [LuaValue]] = [:]
        for await (index, outcome) in outcomes { answers[index] = try outcome.get() }
        #expect(answers == [0: ["slept"], 1: ["quick"]])
        #expect(inFlightWhileBuildingTheSecond.withLock { $0 } == 1)
    }
}
