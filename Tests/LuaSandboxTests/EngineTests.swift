#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
import LuaSandbox
import TestSupport

/// The engine with real worker processes (the `lua-sandbox-worker` executable built
/// beside the tests).
func makeEngine(workers: Int = 2, deadline: Duration = .milliseconds(300)) throws -> LuaEngine {
    try LuaEngine(.init(
        workerExecutable: LuaEngine.Configuration.executableBesideCurrent(named: "lua-sandbox-worker"),
        workerCount: workers, memoryLimit: 16 << 20, defaultDeadline: deadline,
        killGrace: .milliseconds(200)))
}

func milliseconds(since start: Deadline) -> Int64 { (Deadline.now.nanoseconds - start.nanoseconds) / 1_000_000 }

@Suite struct EngineTests {
    @Test func callsRoundTripThroughAWorker() async throws {
        let engine = try makeEngine()
        let script = try await engine.load(ScriptSource(path: "echo.lua", text: """
            local calls = 0
            return { echo = function(...) calls = calls + 1 print('call', calls) return calls, ... end }
            """))
        let outcome = await engine.call(script, "echo", ["a\0b", ["k": 1.5]])
        #expect(try outcome.get() == [1, "a\0b", ["k": 1.5]])
        #expect(outcome.logs == [LogRecord(level: .print, message: "call\t1")])
        #expect(try await engine.call(script, "echo").get() == [2])
    }

    /// Workers die with their parent through PR_SET_PDEATHSIG, which fires when the thread
    /// that spawned them exits: an engine made on a short-lived thread must keep its workers.
    @Test func workersOutliveTheThreadThatStartedTheEngine() async throws {
        let workersServe = ScriptSchedulerTests.Gate()
        let (engine, thread) = try await withCheckedThrowingContinuation { continuation in
            Thread {
                let made = Result { try makeEngine(workers: 1) }
                // "<pid>/task/<tid>", which /proc keeps until the thread has ended.
                let me = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self")
                continuation.resume(with: made.map { ($0, me) })
                // A worker asks to die with its parent before it serves: the thread must not
                // end before then, or the request would outlive it and prove nothing.
                workersServe.wait()
            }.start()
        }
        let pids = engine.workerProcessIDs
        let script = try await engine.load(ScriptSource(path: "alive.lua", text: "return { ping = function() return 'pong' end }"))
        workersServe.open()
        let threadEntry = "/proc/" + (try #require(thread))
        try await eventually("the thread that made the engine has ended") { access(threadEntry, F_OK) != 0 }
        #expect(try await engine.call(script, "ping").get() == ["pong"])
        #expect(engine.workerProcessIDs == pids, "the first workers still serve")
    }

    /// A load with its first call: the call runs once the load has, and each answers as
    /// alone; one write takes both to the worker.
    @Test func aLoadAndTheCallThatFollowsIt() async throws {
        let engine = try makeEngine(workers: 1, deadline: .seconds(10))
        let (script, described) = try await engine.load(ScriptSource(path: "counter.lua", text: """
            local loads = (loads or 0) + 1
            return { describe = function() loads = loads + 10 return 'loaded', loads end, count = function() return loads end }
            """), thenCalling: "describe")
        #expect(try described.get() == ["loaded", 11])
        #expect(try await engine.call(script, "count").get() == [11])

        let (_, missing) = try await engine.load(ScriptSource(path: "plain.lua", text: "return {}"), thenCalling: "describe")
        #expect(throws: LuaScriptError.self) { try missing.get() }

        let error = await #expect(throws: LuaScriptError.self) {
            _ = try await engine.load(ScriptSource(path: "broken.lua", text: "return {\n  x = \n}"), thenCalling: "describe")
        }
        #expect(error?.location == "broken.lua:3")
        // The call that went with the failed load answered too, and the worker serves on.
        let (_, next) = try await engine.load(ScriptSource(path: "next.lua", text: "return { describe = function() return 1 end }"),
                                              thenCalling: "describe")
        #expect(try next.get() == [1])
        #expect(engine.requestsInFlight == 0)
    }

    @Test func loadErrorsArriveWithTheirLine() async throws {
        let engine = try makeEngine(deadline: .seconds(10))
        let error = await #expect(throws: LuaScriptError.self) {
            _ = try await engine.load(ScriptSource(path: "broken.lua", text: "return {\n  x = \n}"))
        }
        #expect(error?.kind == .syntax)
        #expect(error?.location == "broken.lua:3")
        let runtime = await #expect(throws: LuaScriptError.self) {
            _ = try await engine.load(ScriptSource(path: "top.lua", text: "local x = nil\nreturn x.y"))
        }
        #expect(runtime?.kind == .runtime)
        #expect(runtime?.location == "top.lua:2")
    }

    /// A worker with nothing to run collects the garbage its scripts left (so the next burst
    /// of calls runs no collection steps of its own): what a call dropped is freed soon after
    /// the worker goes quiet, where the collector alone would wait for more allocations.
    @Test func aQuietWorkerCollectsTheGarbageScriptsLeft() async throws {
        let engine = try makeEngine(workers: 1)
        let script = try await engine.load(ScriptSource(path: "litter.lua", text: """
            return {
                litter = function() local kept = {} for i = 1, 20000 do kept[i] = { i } end return collectgarbage("count") end,
                kilobytes = function() return collectgarbage("count") end,
            }
            """))
        // Counted as the call ends, while its table still holds the litter: a worker quiet
        // for a moment under a loaded machine may collect it before a second call could.
        let littered = try #require(try await engine.call(script, "litter").get().first?.numberValue)
        var now = littered
        try await eventually("the quiet worker to collect the litter") {
            now = try #require(try await engine.call(script, "kilobytes").get().first?.numberValue)
            return now <= littered / 2
        }
        #expect(littered > 1000, "the litter should hold more than 1 MiB until it is collected")
        #expect(now < littered / 2, "\(now) KiB still charged to the script, \(littered) KiB after littering")
    }

    @Test func aLoadThatNeverEndsIsStopped() async throws {
        let engine = try makeEngine()
        let error = await #expect(throws: LuaScriptError.self) {
            _ = try await engine.load(ScriptSource(path: "spin.lua", text: "while true do end"))
        }
        #expect(error?.kind == .deadlineExceeded)
    }

    @Test func replacingAScriptKeepsTheLastGoodVersion() async throws {
        let engine = try makeEngine()
        let script = try await engine.load(ScriptSource(path: "v.lua", text: "return { version = function() return 1 end }"))
        await #expect(throws: LuaScriptError.self) {
            try await engine.replace(script, with: ScriptSource(path: "v.lua", text: "return { version = "))
        }
        #expect(try await engine.call(script, "version").get() == [1])
        try await engine.replace(script, with: ScriptSource(path: "v.lua", text: "return { version = function() return 2 end }"))
        #expect(try await engine.call(script, "version").get() == [2])
    }

    @Test func unlimitedCallsMayRunPastTheDefaultDeadline() async throws {
        let engine = try makeEngine(deadline: .milliseconds(100))
        let script = try await engine.load(ScriptSource(path: "slow.lua", text: """
            return { wait = function(s) local t = os.clock() while os.clock() - t < s do end return 'done' end }
            """))
        #expect(try await engine.call(script, "wait", [0.4], deadline: .unlimited).get() == ["done"])
        #expect(await engine.call(script, "wait", [0.4]).result.isSuccess == false)
    }

    @Test func aCancelledCallStopsAndTheScriptServesAgain() async throws {
        let engine = try makeEngine(deadline: .seconds(30))
        let script = try await engine.load(ScriptSource(path: "spin.lua", text: """
            return { spin = function() while true do end end, ping = function() return 'pong' end }
            """))
        let start = Deadline.now
        let task = Task { await engine.call(script, "spin") }
        try await eventually("the spin call has reached its worker") { engine.requestsInFlight == 1 }
        task.cancel()
        let error = await #expect(throws: LuaScriptError.self) { try await task.value.get() }
        #expect(error?.kind == .cancelled)
        #expect(milliseconds(since: start) < 5000)  // far below the 30 s deadline, with room for a loaded machine
        #expect(try await engine.call(script, "ping").get() == ["pong"])
    }

    @Test func callAllAnswersEveryCallWithItsIndex() async throws {
        let engine = try makeEngine(deadline: .seconds(10))
        var scripts: [ScriptHandle] = []
        for number in 0..<6 {
            scripts.append(try await engine.load(ScriptSource(path: "s\(number).lua", text: """
                return { who = function(x) if x == 'boom' then error('boom') end return \(number), x end }
                """)))
        }
        let calls = scripts.enumerated().map { ScriptCall($1, "who", [$0 == 4 ? "boom" : .text("call \($0)")]) }
        var answers: [Int: CallOutcome] = [:]
        for await (index, outcome) in engine.callAll(calls) { answers[index] = outcome }
        #expect(answers.count == 6)
        for index in [0, 1, 2, 3, 5] {
            #expect(try answers[index]?.get() == [.integer(Int64(index)), .text("call \(index)")])
        }
        #expect(answers[4]?.result.isSuccess == false)
        var none = 0
        for await _ in engine.callAll([]) { none += 1 }
        #expect(none == 0)
    }

    /// The values every call shares come after each call's own arguments, and each call
    /// gets a copy of its own: a script that changes its copy changes nobody else's, though
    /// the scripts share a worker's states.
    @Test func callAllGivesEveryCallTheSharedValuesAfterItsOwn() async throws {
        let engine = try makeEngine(workers: 1, deadline: .seconds(10))
        var scripts: [ScriptHandle] = []
        for number in 0..<4 {
            scripts.append(try await engine.load(ScriptSource(path: "s\(number).lua", text: """
                return { run = function(own, shared, flag)
                  local seen = shared.network.ssid
                  shared.network.ssid = 'changed by \(number)'
                  return own, seen, flag, select('#', own, shared, flag)
                end }
                """)))
        }
        let shared: [LuaValue] = [["network": ["ssid": "Cafe"]], true]
        var answers: [Int: [LuaValue]] = [:]
        for _ in 0..<2 {
            for await (index, outcome) in engine.callAll(count: scripts.count, sharing: shared, deadline: .default, {
                ScriptCall(scripts[$0], "run", [.text("own \($0)")])
            }) {
                answers[index] = try outcome.get()
            }
            for index in scripts.indices {
                #expect(answers[index] == [.text("own \(index)"), "Cafe", true, 3])
            }
        }
    }

    @Test func leavingCallAllEarlyCancelsTheCallsNotAnswered() async throws {
        let engine = try makeEngine(deadline: .seconds(30))
        let spin = "return { run = function() while true do end end, ping = function() return 'pong' end }"
        let fast = try await engine.load(ScriptSource(path: "fast.lua", text: "return { run = function() return 'first' end }"))
        let spinners = [try await engine.load(ScriptSource(path: "spin1.lua", text: spin)),
                        try await engine.load(ScriptSource(path: "spin2.lua", text: spin))]
        let start = Deadline.now
        for await (index, outcome) in engine.callAll([ScriptCall(fast, "run")] + spinners.map { ScriptCall($0, "run") }) {
            #expect(index == 0)
            #expect(try outcome.get() == ["first"])
            break
        }
        // Each script's calls run one at a time: these answer only once the spins stopped.
        for spinner in spinners {
            #expect(try await engine.call(spinner, "ping").get() == ["pong"])
        }
        #expect(milliseconds(since: start) < 5000)  // far below the 30 s deadline, with room for a loaded machine
    }

    /// A runner that goes on to another job holds its answer back to write several at once;
    /// a long call after it must not hold that answer too: it goes out once the call has
    /// run a moment (here the spin runs until its 5 s deadline). Held back, the two answers
    /// would arrive together; the gap between them is measured rather than the quick one's
    /// time from the start, which a process starting every module suite at once has stretched
    /// to 2.7 s.
    @Test func anAnswerIsNotHeldBackBehindALongCall() async throws {
        let engine = try makeEngine(workers: 1, deadline: .seconds(5))
        let script = try await engine.load(ScriptSource(path: "both.lua", text: """
            return { quick = function() return 'done' end, spin = function() while true do end end }
            """))
        let start = Deadline.now
        var answers: [(index: Int, milliseconds: Int64)] = []
        for await (index, _) in engine.callAll([ScriptCall(script, "quick"), ScriptCall(script, "spin")]) {
            answers.append((index, milliseconds(since: start)))
        }
        #expect(answers.map(\.index) == [0, 1])
        let (quick, spin) = (try #require(answers.first), try #require(answers.last))
        let gap = spin.milliseconds - quick.milliseconds
        #expect(gap > 1000, "the quick answer waited for the spin (it came \(gap) ms before the spin's)")
    }

    @Test func aScriptsCallsRunOneAtATimeInTheirOrder() async throws {
        let engine = try makeEngine(workers: 1, deadline: .seconds(10))
        let counter = try await engine.load(ScriptSource(path: "counter.lua", text: """
            local count = 0
            return { next = function() local seen = count for _ = 1, 200 do end count = seen + 1 return count end }
            """))
        let other = try await engine.load(ScriptSource(path: "other.lua", text: "return { next = function() return 0 end }"))
        let calls = (0..<300).map { ScriptCall($0 % 3 == 2 ? other : counter, "next") }
        var answers: [Int: LuaValue] = [:]
        for await (index, outcome) in engine.callAll(calls) { answers[index] = try outcome.get().first }
        let counted = calls.indices.filter { $0 % 3 != 2 }
        #expect(counted.map { answers[$0] } == (1...200).map { .integer(Int64($0)) })
    }

    /// The worker runs scripts on about as many threads as there are cores; a call that runs
    /// long (here a loop on every one of them, and one more) must not hold up the others.
    @Test func callsThatRunLongDoNotHoldUpOtherScripts() async throws {
        let engine = try makeEngine(workers: 1, deadline: .seconds(10))
        let spin = "return { run = function() while true do end end }"
        var spinners: [ScriptHandle] = []
        for number in 0...ProcessInfo.processInfo.activeProcessorCount {
            spinners.append(try await engine.load(ScriptSource(path: "spin\(number).lua", text: spin)))
        }
        let quick = try await engine.load(ScriptSource(path: "quick.lua", text: "return { ping = function() return 'pong' end }"))
        let spinning = Task { [spinners] in
            for await _ in engine.callAll(spinners.map { ScriptCall($0, "run") }, deadline: .after(.seconds(8))) {}
        }
        defer { spinning.cancel() }
        try await eventually("every spinner's call has reached the worker") { engine.requestsInFlight == spinners.count }
        let start = Deadline.now
        #expect(try await engine.call(quick, "ping").get() == ["pong"])
        #expect(milliseconds(since: start) < 4000)  // not the 8 s of the spinners' deadline
    }

    @Test func aWorkerThatDiesIsReplacedAndItsScriptsReloaded() async throws {
        let engine = try makeEngine(workers: 1, deadline: .seconds(10))
        let script = try await engine.load(ScriptSource(path: "s.lua", text: """
            return { wait = function() local t = os.clock() while os.clock() - t < 5 do end end, ping = function() return 'pong' end }
            """))
        let pid = engine.workerProcessIDs[0]
        let call = Task { await engine.call(script, "wait") }
        try await eventually("the wait call has reached the worker") { engine.requestsInFlight == 1 }
        kill(pid, SIGSEGV)
        let error = await #expect(throws: LuaScriptError.self) { try await call.value.get() }
        #expect(error?.kind == .workerLost)
        #expect(error?.message.contains("signal 11") == true)
        #expect(try await engine.call(script, "ping").get() == ["pong"])
        #expect(engine.workerProcessIDs[0] != pid)
        #expect(engine.workerReplacements == [.crash: 1])
        #expect(engine.workerResidentBytes[0].map { $0 > 0 } == true)
    }

    /// A stopped worker (SIGSTOP, a debugger) answers nothing: it is noticed within about a
    /// second and replaced, and its calls run again on the new one and say why, instead of
    /// waiting for their deadlines and reporting "deadline exceeded".
    @Test func aStoppedWorkerIsNoticedSoonAndReplaced() async throws {
        let engine = try makeEngine(workers: 1, deadline: .seconds(30))
        let script = try await engine.load(ScriptSource(path: "s.lua", text: "return { ping = function() return 'pong' end }"))
        let pid = engine.workerProcessIDs[0]
        kill(pid, SIGSTOP)
        let start = Deadline.now
        let outcome = await engine.call(script, "ping")
        #expect(try outcome.get() == ["pong"])
        #expect(outcome.rerunReason?.contains("its worker process was stopped (SIGSTOP or a debugger), so it was replaced") == true,
                "\(outcome.rerunReason ?? "not run again")")
        #expect(milliseconds(since: start) < 10_000, "noticed after \(milliseconds(since: start)) ms, not at the 30 s deadline")
        #expect(try await engine.call(script, "ping").get() == ["pong"])
        #expect(engine.workerProcessIDs[0] != pid)
        #expect(engine.workerReplacements == [.stopped: 1])
    }

    @Test func callsOnOtherWorkersCarryOnWhileOneIsKilled() async throws {
        // Loads get the default deadline: generous, so a loaded machine does not fail them.
        let engine = try makeEngine(workers: 2, deadline: .seconds(10))
        let attacker = try await engine.load(ScriptSource(path: "attacker.lua", text: """
            return { attack = function() return ('a'):rep(3000):find('.-.-.-b') end }
            """))
        let bystander = try await engine.load(ScriptSource(path: "bystander.lua", text: """
            return { work = function() local t = os.clock() while os.clock() - t < 0.5 do end return 'finished' end }
            """))
        async let attacked = engine.call(attacker, "attack", deadline: .after(.milliseconds(300)))
        // os.clock() counts CPU time, which a loaded machine hands out slowly: the deadline
        // is generous, the point is that the kill next door does not touch this call.
        async let worked = engine.call(bystander, "work", deadline: .after(.seconds(30)))
        #expect(await attacked.result.isSuccess == false)
        #expect(try await worked.get() == ["finished"])
        #expect(engine.workerReplacements == [.deadline: 1])
    }

    @Test func shutdownFailsCallsInFlight() async throws {
        let engine = try makeEngine(deadline: .seconds(10))
        let script = try await engine.load(ScriptSource(path: "s.lua", text: "return { spin = function() while true do end end }"))
        let call = Task { await engine.call(script, "spin") }
        try await eventually("the spin call has reached its worker") { engine.requestsInFlight == 1 }
        engine.shutdown()
        let error = await #expect(throws: LuaScriptError.self) { try await call.value.get() }
        #expect(error?.kind == .workerLost)
    }

    /// A stopped engine's worker sockets are closed and their numbers free for the system to
    /// hand out again: nothing the engine is asked afterwards may write to whoever got one.
    @Test func aStoppedEngineWritesToNoDescriptorItClosed() async throws {
        let engine = try makeEngine(workers: 1)
        let script = try await engine.load(ScriptSource(path: "s.lua", text: "return {}"))
        let worker = engine.workerProcessIDs[0]
        engine.shutdown()
        // Reaped, no longer even a zombie: its reader has closed the socket too.
        try await eventually("the stopped worker to be reaped") { kill(worker, 0) != 0 }
        #expect(kill(worker, 0) != 0)
        // The lowest free numbers come first, so one of these takes the worker's old one.
        var pairs: [[Int32]] = []
        defer { pairs.joined().forEach { close($0) } }
        for _ in 0..<32 {
            var ends: [Int32] = [-1, -1]
            #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &ends) == 0)
            pairs.append(ends)
        }
        engine.unload(script)
        engine.shutdown()
        var byte: UInt8 = 0
        let received = pairs.joined().filter { recv($0, &byte, 1, Int32(MSG_DONTWAIT)) > 0 }
        #expect(received.isEmpty, "descriptors \(received) received bytes meant for a worker")
    }

    /// A worker gets only its standard descriptors and its socket: an inherited write end
    /// of someone's pipe would keep that reader from ever seeing end of file.
    @Test func workersInheritNoOtherDescriptors() async throws {
        var pipeEnds: [Int32] = [-1, -1]
        #expect(pipe(&pipeEnds) == 0)
        defer { pipeEnds.forEach { close($0) } }
        let pipeName = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(pipeEnds[1])")
        let engine = try makeEngine(workers: 1, deadline: .seconds(5))
        defer { engine.shutdown() }
        let directory = "/proc/\(engine.workerProcessIDs[0])/fd"
        // What the worker opened itself since (its event queues) is its own business, and a
        // descriptor it closes meanwhile (a library file as libcurl loads) was not inherited.
        let targets = try FileManager.default.contentsOfDirectory(atPath: directory).compactMap {
            try? FileManager.default.destinationOfSymbolicLink(atPath: directory + "/" + $0)
        }
        #expect(pipeName.hasPrefix("pipe:"))
        #expect(!targets.contains(pipeName), "worker descriptors: \(targets)")
        #expect(targets.filter { $0.hasPrefix("socket:") }.count == 1)
    }
}
