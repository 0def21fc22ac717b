#if canImport(Glibc)
import Glibc
#endif
import HotspotRuntime
import LuaSandbox
import Testing
import TestSupport

/// The engine's batches as the runtime sends them, on the helper worker, whose `sleep`
/// waits without using the CPU (the test runs beside every other suite).
@Suite struct BatchedCallsTests {
    /// `callAll(count:)` sends the first call before it builds the next: here the second
    /// takes 2 s to build and the first 2 s to run, so together they take about 2 s, not 4.
    @Test func callAllSendsTheFirstCallsWhileBuildingTheRest() async throws {
        let engine = try LuaEngine(HotspotRuntime.engineConfiguration())
        defer { engine.shutdown() }
        let sleeper = try await engine.load(ScriptSource(path: "sleeper.lua", text: """
            return { hosts = {}, run = function() sleep(2) return 'slept' end }
            """))
        let quick = try await engine.load(ScriptSource(path: "quick.lua", text: """
            return { hosts = {}, run = function() return 'quick' end }
            """))
        let start = Deadline.now
        // Building blocks, so not on one of the few threads every suite's tasks share.
        let outcomes = try await onOwnThread {
            engine.callAll(count: 2) { index in
                if index == 1 { usleep(2_000_000) }
                return ScriptCall(index == 0 ? sleeper : quick, "run")
            }
        }
        var answers: [Int: [LuaValue]] = [:]
        for await (index, outcome) in outcomes { answers[index] = try outcome.get() }
        #expect(answers == [0: ["slept"], 1: ["quick"]])
        #expect((Deadline.now.nanoseconds - start.nanoseconds) / 1_000_000 < 3500)
    }
}
