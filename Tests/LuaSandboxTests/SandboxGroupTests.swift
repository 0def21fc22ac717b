import Foundation
import Testing
import TestSupport
@testable import LuaSandbox

/// Scripts sharing one Lua state (`SandboxGroup`), as a worker's scripts do: each keeps
/// its own globals, memory cap and host objects, and none holds up the others for long.
@Suite struct SandboxGroupTests {
    func script(_ text: String, in group: SandboxGroup, memoryLimit: Int = 8 << 20) throws -> SandboxedState {
        let state = try SandboxedState(memoryLimit: memoryLimit, in: group)
        _ = try state.load(ScriptSource(path: "venue.lua", text: text)).get()
        return state
    }

    @Test func scriptsOfAGroupKeepTheirOwnGlobals() throws {
        let group = try SandboxGroup()
        let first = try script("""
            visits = 0
            return { visit = function() visits = visits + 1 shared = 'first' print = nil return visits end }
            """, in: group)
        let second = try script("""
            return { look = function() return visits, shared, type(print), rawget(_G, 'visits') end }
            """, in: group)
        #expect(try first.call("visit").get() == [1])
        #expect(try first.call("visit").get() == [2])
        #expect(try second.call("look").get() == [nil, nil, "function", nil])
        let error = try #require(throws: LuaScriptError.self) { try second.call("visit").get() }
        #expect(error.message.contains("no function 'visit'"))
    }

    /// What a call does to its script's standard globals ends with it: they are restored as
    /// the next call starts, or before, by a worker with nothing else to do.
    @Test func aScriptsStandardGlobalsComeBackForItsNextCall() throws {
        let group = try SandboxGroup()
        let venue = try script("""
            return {
              spoil = function() kept = 'mine' print, string, type = nil, 1, nil _G = nil end,
              look = function() return type(print), type(string), rawequal(_G, _ENV), kept end,
            }
            """, in: group)
        _ = try venue.call("spoil").get()
        #expect(try venue.call("look").get() == ["function", "userdata", true, "mine"])
        _ = try venue.call("spoil").get()
        #expect(venue.standardGlobalsChanged)
        while group.tidyStep() == .more {}
        #expect(!venue.standardGlobalsChanged)
        #expect(try venue.call("look").get() == ["function", "userdata", true, "mine"])
    }

    /// Threats 15 and 16 of the catalogue, with the bystander in the attacker's state.
    @Test func aScriptCannotChangeWhatAnotherOfItsGroupSees() throws {
        let group = try SandboxGroup()
        let attacker = try script("""
            return { attack = function()
              local refused = {}
              for _, attempt in ipairs {
                function() string.upper = nil end,
                function() rawset(string, 'format', print) end,
                function() getmetatable('').__index = {} end,
                function() setmetatable(string, {}) end,
              } do refused[#refused + 1] = not pcall(attempt) end
              print, string, type = nil, nil, nil
              return refused
            end }
            """, in: group)
        let bystander = try script("""
            return { check = function() return string.upper('a'), ('b'):upper(), type(print), type(string) end }
            """, in: group)
        #expect(try attacker.call("attack").get() == [[true, true, true, true]])
        #expect(try bystander.call("check").get() == ["A", "B", "function", "userdata"])
    }

    @Test func eachScriptHasItsOwnMemoryCap() throws {
        let group = try SandboxGroup()
        let hoarder = try script("""
            return {
              keep = function() kept = ('x'):rep(400000) return collectgarbage('count') end,
              grab = function() return #('y'):rep(2000000) end,
            }
            """, in: group, memoryLimit: 1 << 20)
        let frugal = try script("""
            return {
              grab = function() return #('z'):rep(2000000) end,
              count = function() return collectgarbage('count') end,
            }
            """, in: group)
        let kept = try #require(hoarder.call("keep").get().first?.numberValue)
        #expect(kept > 390)  // KiB: the kept string is charged to the script that made it
        #expect(try #require(frugal.call("count").get().first?.numberValue) < 100)
        #expect(hoarder.memoryUsed > 400_000 && frugal.memoryUsed < 100_000)
        let error = try #require(throws: LuaScriptError.self) { try hoarder.call("grab").get() }
        #expect(error.kind == .memoryLimit)
        #expect(try frugal.call("grab").get() == [2_000_000])
    }

    /// Blocks move between the group's pool of small blocks and malloc's large ones as
    /// tables and strings grow and shrink: contents survive every move, each script is
    /// charged for its own, and freed blocks come back to it (its count does not creep up).
    @Test func blocksKeepTheirContentsAndChargesThroughThePool() throws {
        let group = try SandboxGroup()
        let text = """
            return { churn = function(n, salt)
              local t, h, parts = {}, {}, {}
              for i = 1, n do t[i] = i * salt end
              for i = 1, n do h['k' .. i] = i end
              for i = 1, n, 2 do h['k' .. i] = nil end
              for i = 1, n // 10 do parts[i] = ('%d:'):format(i * salt):rep(i % 40 + 1) end
              local sum, kept = 0, 0
              for i = 1, n do sum = sum + t[i] end
              for _, v in pairs(h) do kept = kept + v end
              local joined = table.concat(parts)
              return sum, kept, #joined, joined:sub(1, 4), collectgarbage('count')
            end }
            """
        let first = try script(text, in: group, memoryLimit: 4 << 20)
        let second = try script(text, in: group, memoryLimit: 4 << 20)
        func expected(_ n: Int, _ salt: Int) -> [LuaValue] {
            let parts = (1...(n / 10)).map { String(repeating: "\($0 * salt):", count: $0 % 40 + 1) }.joined()
            return [.integer(Int64(n * (n + 1) / 2 * salt)), .integer(Int64((n / 2) * (n / 2 + 1))),
                    .integer(Int64(parts.utf8.count)), .text(String(parts.prefix(4)))]
        }
        var counts: [Double] = []
        for round in 1...60 {
            for (state, salt) in [(first, 3), (second, 7)] {
                let values = try state.call("churn", [.integer(Int64(300 + round)), .integer(Int64(salt))]).get()
                #expect(Array(values.prefix(4)) == expected(300 + round, salt))
                if state === first { counts.append(try #require(values.last?.numberValue)) }
            }
        }
        // KiB: the garbage of 60 rounds is collected, not kept charged to the script.
        #expect(counts.suffix(10).max()! < 2 * counts.prefix(10).max()! + 256)
        #expect(first.memoryUsed < 2 << 20 && second.memoryUsed < 2 << 20)
    }

    /// The group keeps freed blocks only up to a bound: a script that fills its cap with
    /// blocks of one size class after another cannot leave the worker holding its cap
    /// once per class.
    @Test func thePoolOfFreedBlocksStaysBounded() throws {
        let group = try SandboxGroup()
        let churner = try script("""
            return { churn = function(size)
              local kept = {}
              local filler = ('x'):rep(size)
              for i = 1, 3000 do kept[i] = filler .. i end
              return #kept
            end }
            """, in: group, memoryLimit: 8 << 20)
        var peak = 0
        for round in 0..<30 {
            for size in stride(from: 24, through: 440, by: 16) {
                _ = try churner.call("churn", [.integer(Int64(size + round % 16))]).get()
                peak = max(peak, group.pooledBytes)
            }
        }
        #expect(peak > 0)  // blocks are kept for reuse
        #expect(peak <= 1 << 20)
    }

    @Test(.timedBeyondAddressSanitizer) func aScriptWaitingInItsHostLetsTheOthersRun() async throws {
        let tracker = ResourceTracker()
        let group = try SandboxGroup(modules: [HostClassTests.module(tracker)])
        let waiter = try script("return { wait = function() objects.new():wait() return 'waited' end }", in: group)
        let other = try script("return { ping = function() return 'pong' end }", in: group)
        let (waiting, pinging) = (OneThreadAtATime(waiter), OneThreadAtATime(other))
        // The waiter would hold the group for its whole deadline; the other must answer long
        // before that (the bound leaves room for a machine busy with every other suite).
        let start = Deadline.now
        async let waited = onOwnThread { waiting.state.call("wait", deadline: .after(.seconds(60))).result }
        try await eventually("the waiter is in its host method") { tracker.waitsBegun.load(ordering: .relaxed) == 1 }
        let answered = try await onOwnThread { try pinging.state.call("ping").get() }
        let answeredAfter = milliseconds(since: start)
        waiter.interruptHandle.interrupt()
        #expect(answered == ["pong"])
        #expect(answeredAfter < 30_000, "the other script waited \(answeredAfter) ms")
        _ = try await waited
    }

    @Test(.timedBeyondAddressSanitizer) func aLoopingScriptLetsTheOthersRunAfterASlice() async throws {
        let group = try SandboxGroup()
        let looper = try script("return { loop = function() while true do end end }", in: group)
        let other = try script("return { ping = function() return 'pong' end }", in: group)
        let (looping, pinging) = (OneThreadAtATime(looper), OneThreadAtATime(other))
        let start = Deadline.now
        // Its deadline is far beyond the bound below, which a loaded machine still meets.
        async let looped = onOwnThread { looping.state.call("loop", deadline: .after(.seconds(60))).result }
        try await eventually("the looper holds the group") { group.takers == 1 }
        let answered = try await onOwnThread { try pinging.state.call("ping").get() }
        let answeredAfter = milliseconds(since: start)
        looper.interruptHandle.interrupt()
        #expect(answered == ["pong"])
        #expect(answeredAfter < 30_000, "the other script waited \(answeredAfter) ms")
        guard case .failure(let loopError) = try await looped else { Issue.record("the loop returned"); return }
        #expect(loopError.kind == .cancelled)
    }

    /// A C call (here a pattern that backtracks for about a second) holds the state with no
    /// hook to hand it over; a call cancelled while it waits behind it stops as soon as it
    /// runs, instead of running to its deadline. The test sees the matcher hold the state
    /// only while it runs: long enough for a wait that other suites keep from its thread.
    @Test func aCallCancelledWhileWaitingForItsStateStops() async throws {
        let group = try SandboxGroup()
        let matcher = try script("return { match = function() return (('a'):rep(20000):find('.-b')) end }", in: group)
        let looper = try script("return { loop = function() while true do end end }", in: group)
        let (matching, looping) = (OneThreadAtATime(matcher), OneThreadAtATime(looper))
        async let matched = onOwnThread { matching.state.call("match").result }
        // Not a fixed sleep: on a loaded machine a thread may take longer to get there.
        try await eventually("the matcher holds the state") { group.takers == 1 }
        let start = Deadline.now
        // A deadline far beyond the bound below, which a loaded machine's slow matcher still meets.
        async let looped = onOwnThread { looping.state.call("loop", deadline: .after(.seconds(60))).result }
        try await eventually("the looper waits for the state behind the matcher") { group.takers == 2 }
        looper.interruptHandle.interrupt()
        guard case .failure(let error) = try await looped else { Issue.record("the loop returned"); return }
        #expect(error.kind == .cancelled)
        #expect(milliseconds(since: start) < 30_000)
        #expect(try await matched.get() == [nil])
    }

    @Test func objectsCollectedWhileAnotherScriptRunsAreReleasedForTheirOwner() throws {
        let tracker = ResourceTracker()
        let group = try SandboxGroup(modules: [HostClassTests.module(tracker)])
        let owner = try script("""
            return {
              make = function() for i = 1, 50 do objects.new():add(i) end end,
              ping = function() return 'pong' end,
            }
            """, in: group)
        let churner = try script("""
            return { churn = function() for i = 1, 2000 do local t = { ('x'):rep(1000 + i) } end end }
            """, in: group)
        _ = try owner.call("make").get()
        #expect(tracker.closed.load(ordering: .relaxed) == 0)
        // The churner's garbage drives the collector, which finds the owner's 50 objects
        // unreachable while the churner holds the group: their releases wait for the owner
        // (its host may be busy on another thread), whose next run hands them over.
        for _ in 0..<5 { _ = try churner.call("churn").get() }
        #expect(tracker.closed.load(ordering: .relaxed) == 0)
        _ = try owner.call("ping").get()
        #expect(tracker.closed.load(ordering: .relaxed) == 50)
        #expect(tracker.alive.load(ordering: .relaxed) == 1)  // the module's shared object
    }
}

/// Hands a state to another thread; each state here is used by one thread at a time.
private struct OneThreadAtATime: @unchecked Sendable {
    let state: SandboxedState
    init(_ state: SandboxedState) { self.state = state }
}
