#if canImport(Glibc)
import Glibc
#endif
import CLuaSandbox
import Foundation
import Testing
import LuaSandbox
import TestSupport

/// What bounds a call besides its deadline (its CPU time, its worker's memory, its cancel),
/// and what becomes of the calls that share a worker with one that had to be stopped by
/// ending the worker: they run again on the new worker.
@Suite struct WorkerLimitsTests {
    /// Backtracks in C practically forever: no count hook stops it.
    static let backtracking = "return { attack = function() return ('a'):rep(3000):find('.-.-.-b') end }"
    /// Runs about `seconds` of the process's CPU time (os.clock), in Lua.
    static let working = """
        return { work = function(seconds) local t = os.clock() while os.clock() - t < seconds do end return 'finished' end }
        """

    static func engine(memoryLimit: Int = 16 << 20, workerMemoryLimit: Int = 160 << 20,
                       cancelGrace: Duration = .seconds(5)) throws -> LuaEngine {
        try LuaEngine(.init(
            workerExecutable: LuaEngine.Configuration.executableBesideCurrent(named: "lua-sandbox-worker"),
            workerCount: 1, memoryLimit: memoryLimit, workerMemoryLimit: workerMemoryLimit,
            defaultDeadline: .seconds(30), killGrace: .milliseconds(200), cancelGrace: cancelGrace))
    }

    /// A worker holds venue passwords: a crash once wrote them into a core file wherever
    /// cores were enabled. Its core size limit is 0, the hard one too (which a test process
    /// leaves above 0), so nothing in it can raise the soft one again.
    @Test func aWorkerWritesNoCoreFile() async throws {
        let engine = try Self.engine()
        defer { engine.shutdown() }
        // Loaded, so the worker has set itself up before its limits are read.
        _ = try await engine.load(ScriptSource(path: "work.lua", text: Self.working))
        let limits = try String(contentsOfFile: "/proc/\(engine.workerProcessIDs[0])/limits", encoding: .utf8)
        let core = try #require(limits.split(separator: "\n").first { $0.hasPrefix("Max core file size") })
        #expect(core.split(separator: " ", omittingEmptySubsequences: true).dropFirst(4).prefix(2) == ["0", "0"], "\(core)")
    }

    /// Not dumpable either: no core through a core_pattern pipe, whatever the limit, and no
    /// /proc/PID/mem or ptrace by other processes of its user. Read in a process of its own
    /// (the test process stays dumpable) through prctl, which Swift cannot call as declared
    /// (variadic): by its address, as a function of five integers, which is how x86-64 and
    /// arm64 Linux pass a variadic call's integers too. That the worker calls this very
    /// function shows in its core limit above.
    @Test func forbiddingCoreDumpsMakesTheProcessUndumpable() async {
        await #expect(processExitsWith: .exitCode(0)) {
            typealias Prctl = @convention(c) (Int32, UInt, UInt, UInt, UInt) -> Int32
            let prctl = unsafeBitCast(dlsym(UnsafeMutableRawPointer(bitPattern: 0), "prctl"), to: Prctl.self)
            let getDumpable: Int32 = 3  // PR_GET_DUMPABLE
            guard prctl(getDumpable, 0, 0, 0, 0) == 1 else { exit(1) }
            guard sbx_forbid_core_dumps() == 0 else { exit(2) }
            var core = rlimit()
            guard getrlimit(Int32(RLIMIT_CORE.rawValue), &core) == 0, core.rlim_cur == 0, core.rlim_max == 0 else { exit(3) }
            exit(prctl(getDumpable, 0, 0, 0, 0) == 0 ? 0 : 4)
        }
    }

    /// Runaways in C, one in each group of the worker, hold every group's state past the
    /// deadline; the calls queued behind them all ended "deadline exceeded; stopped by ending
    /// its worker process" with them, so one hostile helper cost every other its evaluate.
    /// The worker says which calls never ran before it is ended: those run again on the new
    /// worker with their whole deadline, and only the runaways are reported past theirs.
    @Test func callsThatOnlyWaitedBehindRunawaysRunAgainWithTheirWholeDeadline() async throws {
        let engine = try Self.engine()
        defer { engine.shutdown() }
        // A worker has as many groups as cores; scripts take them in turn as they load.
        let groups = ProcessInfo.processInfo.activeProcessorCount
        var calls: [ScriptCall] = []
        for index in 0..<groups {
            calls.append(ScriptCall(try await engine.load(ScriptSource(path: "runaway\(index).lua", text: Self.backtracking)), "attack"))
        }
        for index in 0..<3 {
            let innocent = try await engine.load(ScriptSource(path: "innocent\(index).lua", text: "return { answer = function() return 'fine' end }"))
            calls.append(ScriptCall(innocent, "answer"))
        }
        var outcomes: [Int: CallOutcome] = [:]
        // Short: the runaways keep every core busy until their worker is ended.
        for await (index, outcome) in engine.callAll(calls, deadline: .after(.milliseconds(500))) { outcomes[index] = outcome }
        for index in 0..<groups {
            let error = try #require(outcomes[index]?.result.failure)
            #expect(error.kind == .deadlineExceeded, "\(error)")
        }
        for index in groups..<calls.count {
            let outcome = try #require(outcomes[index])
            #expect(try outcome.result.get() == ["fine"])
            #expect(outcome.rerunReason?.contains("another call there overran its deadline") == true, "\(outcome.rerunReason ?? "not run again")")
        }
    }

    @Test func aCPULimitStopsALuaLoopThatHasNoDeadline() async throws {
        let engine = try Self.engine()
        let script = try await engine.load(ScriptSource(path: "spin.lua", text: """
            return { spin = function() while true do end end, ping = function() return 'pong' end }
            """))
        let worker = engine.workerProcessIDs[0]
        let outcome = await engine.call(script, "spin", deadline: .unlimited, cpuLimit: .milliseconds(200))
        let error = try #require(outcome.result.failure)
        #expect(error.kind == .cpuLimit && error.message.contains("CPU time limit exceeded"), "\(error)")
        // The hook stopped it: the worker is the same.
        #expect(engine.workerProcessIDs[0] == worker)
        #expect(try await engine.call(script, "ping").get() == ["pong"])
    }

    /// ThreadSanitizer intercepts `_exit` and finalizes first, so under it the worker ends
    /// after the bystander's call is done, too late to see that call run again.
    @Test(.disabled(if: dlsym(UnsafeMutableRawPointer(bitPattern: 0), "__tsan_init") != nil, "the worker ends late under ThreadSanitizer"))
    func aCPULimitStopsACFunctionByEndingItsWorkerAndTheOtherCallsThereRunAgain() async throws {
        let engine = try Self.engine()
        let attacker = try await engine.load(ScriptSource(path: "attacker.lua", text: Self.backtracking))
        let bystander = try await engine.load(ScriptSource(path: "bystander.lua", text: Self.working))
        let worker = engine.workerProcessIDs[0]
        let working = Task { await engine.call(bystander, "work", [2.0]) }
        try await eventually("the bystander's call has reached the worker") { engine.requestsInFlight == 1 }
        let attacked = await engine.call(attacker, "attack", deadline: .unlimited, cpuLimit: .milliseconds(200))
        let error = try #require(attacked.result.failure)
        #expect(error.kind == .cpuLimit && error.message.contains("in a C function"), "\(error)")
        let worked = await working.value
        #expect(try worked.get() == ["finished"])
        #expect(worked.rerunReason?.contains("used up its CPU time in a C function") == true, "\(worked.rerunReason ?? "not run again")")
        #expect(engine.workerProcessIDs[0] != worker)
    }

    @Test func callsThatSharedAWorkerKilledForAnOverrunRunAgain() async throws {
        let engine = try Self.engine()
        let attacker = try await engine.load(ScriptSource(path: "attacker.lua", text: Self.backtracking))
        let bystander = try await engine.load(ScriptSource(path: "bystander.lua", text: Self.working))
        let working = Task { await engine.call(bystander, "work", [2.0]) }
        try await eventually("the bystander's call has reached the worker") { engine.requestsInFlight == 1 }
        let attacked = await engine.call(attacker, "attack", deadline: .after(.milliseconds(300)))
        #expect(attacked.result.failure?.kind == .deadlineExceeded)
        #expect(attacked.rerunReason == nil)
        let worked = await working.value
        #expect(try worked.get() == ["finished"])
        #expect(worked.rerunReason == "its worker was restarted because another call there overran its deadline")
    }

    /// A worker that dies of something no call is known to have caused (a crash, a signal
    /// from outside) may die of any of its calls: they are not run again.
    @Test func callsOfAWorkerThatDiedAreNotRunAgain() async throws {
        let engine = try Self.engine()
        let bystander = try await engine.load(ScriptSource(path: "bystander.lua", text: Self.working))
        let working = Task { await engine.call(bystander, "work", [5.0]) }
        try await eventually("the call has reached the worker") { engine.requestsInFlight == 1 }
        kill(engine.workerProcessIDs[0], SIGKILL)
        #expect(await working.value.result.failure?.kind == .workerLost)
    }

    @Test func aCancelledCallStuckInCEndsItsWorkerAfterTheGrace() async throws {
        let engine = try Self.engine(cancelGrace: .milliseconds(300))
        let attacker = try await engine.load(ScriptSource(path: "attacker.lua", text: Self.backtracking))
        let worker = engine.workerProcessIDs[0]
        let busy = Self.cpuTicks(of: worker)
        let attacking = Task { await engine.call(attacker, "attack", deadline: .unlimited) }
        // Cancelled before it starts, it would never run: it must be running in C first.
        try await eventually("the worker runs the call") { Self.cpuTicks(of: worker) > busy + 10 }
        attacking.cancel()
        #expect(await attacking.value.result.failure?.kind == .cancelled)
        try await eventually("the worker stuck in the cancelled call is replaced") { engine.workerProcessIDs[0] != worker }
        #expect(await engine.call(attacker, "attack", deadline: .after(.milliseconds(100))).result.failure?.kind == .deadlineExceeded)
    }

    @Test func aCancelledCallThatStopsKeepsItsWorker() async throws {
        let engine = try Self.engine(cancelGrace: .milliseconds(300))
        let script = try await engine.load(ScriptSource(path: "spin.lua", text: "return { spin = function() while true do end end }"))
        let worker = engine.workerProcessIDs[0]
        let spinning = Task { await engine.call(script, "spin", deadline: .unlimited) }
        try await eventually("the call has reached the worker") { engine.requestsInFlight == 1 }
        spinning.cancel()
        #expect(await spinning.value.result.failure?.kind == .cancelled)
        try await Task.sleep(for: .seconds(1))  // real time is the point: past the cancel grace, when a stuck worker is ended
        #expect(engine.workerProcessIDs[0] == worker)
    }

    /// Each script may hold 8 MiB; the worker's scripts 12 MiB together: the second script
    /// to fill 7 MiB is refused, with a message that names the worker's limit. (Garbage
    /// counts until its state collects it: the scripts make none, so the figures are exact.)
    @Test func theWorkersScriptsAreCappedTogether() async throws {
        let engine = try Self.engine(memoryLimit: 8 << 20, workerMemoryLimit: LuaEngine.Configuration.hostMemoryReserve + (12 << 20))
        let filling = """
            local held = {}
            return {
              fill = function(kilobytes) for i = 1, kilobytes do held[i] = string.rep(string.format('%09d', i), 100) end return #held end,
              kilobytes = function() return collectgarbage('count') end,
            }
            """
        let first = try await engine.load(ScriptSource(path: "first.lua", text: filling))
        let second = try await engine.load(ScriptSource(path: "second.lua", text: filling))
        #expect(try await engine.call(first, "fill", [.integer(7 * 1024)]).get() == [.integer(7 * 1024)])
        let error = try #require(await engine.call(second, "fill", [.integer(7 * 1024)]).result.failure)
        #expect(error.kind == .memoryLimit)
        #expect(error.message == "memory limit exceeded: this worker's scripts together hold its limit of 12 MiB", "\(error)")
        // The first keeps what it holds; the second, rebuilt, can run.
        let kilobytes = try #require(try await engine.call(first, "kilobytes").get().first?.numberValue)
        #expect(kilobytes > 6 * 1024)
        #expect(try await engine.call(second, "fill", [.integer(16)]).get() == [.integer(16)])
    }

    /// Here the cap is below what any worker process holds: one with a call in flight is
    /// replaced at the watchdog's next check, within about a second.
    @Test(.enabled(if: LuaEngine.checksResidentSize, "a sanitizer's shadow memory counts as resident: the cap is not checked"))
    func aWorkerPastItsResidentCapIsReplaced() async throws {
        let engine = try Self.engine(memoryLimit: 1 << 20, workerMemoryLimit: 1 << 20)
        let script = try await engine.load(ScriptSource(path: "work.lua", text: Self.working))
        let worker = engine.workerProcessIDs[0]
        let error = try #require(await engine.call(script, "work", [10.0]).result.failure)
        #expect(error.kind == .workerLost)
        #expect(error.message.contains("more than its limit of 1 MiB, so it was replaced"), "\(error)")
        #expect(engine.workerProcessIDs[0] != worker)
        #expect((engine.workerReplacements[.memory] ?? 0) >= 1)
    }
}

extension WorkerLimitsTests {
    /// The CPU time a process has used, in clock ticks (utime and stime of /proc/PID/stat).
    static func cpuTicks(of pid: Int32) -> Int {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return 0 }
        // After "pid (name)": state is field 3, utime and stime fields 14 and 15.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Int(fields[11]), let system = Int(fields[12]) else { return 0 }
        return user + system
    }
}

extension Result {
    var failure: Failure? {
        if case .failure(let error) = self { error } else { nil }
    }
}
