#if canImport(Glibc)
import Glibc
#endif
import Locking
import Synchronization
import Testing
@testable import LuaSandbox

/// Counts the Swift resources host objects hold, so tests can see them released.
final class ResourceTracker: Sendable {
    let alive = Atomic<Int>(0)
    let closed = Atomic<Int>(0)
    /// Calls of `wait()` that have begun: a test waits on it for a script to be in its host.
    let waitsBegun = Atomic<Int>(0)
}

final class Resource: Sendable {
    let tracker: ResourceTracker
    let total = PlainLock<Int64>(0)

    init(_ tracker: ResourceTracker) {
        self.tracker = tracker
        tracker.alive.add(1, ordering: .relaxed)
    }

    deinit { tracker.alive.subtract(1, ordering: .relaxed) }
}

/// Host objects: methods on userdata, their locked metatable, self checks, release by
/// `close`, `<close>`, the collector and the end of a call, and the threats around them.
@Suite struct HostClassTests {
    /// `objects.new()` makes a `resource` with `add(n)`, `get()`, `fail()` and `wait()`
    /// (which returns when the call's deadline passes); `objects.other()` makes an object
    /// of another class; `objects.count(...)` counts its arguments.
    static func module(_ tracker: ResourceTracker, lifetime: HostObjectLifetime = .collected) -> HostModule {
        let resource = HostClass<Resource>("resource", lifetime: lifetime, methods: [
            ("add", { object, call in
                let amount = try call.number(0)
                object.total.withLock { $0 += Int64(amount) }
                return []
            }),
            ("get", { object, _ in [.integer(object.total.withLock { $0 })] }),
            ("fail", { _, _ in throw HostError("the resource refused") }),
            ("wait", { object, call in
                object.tracker.waitsBegun.add(1, ordering: .relaxed)
                // Stands for host work that lasts until the call's deadline (real time is what
                // is tested) or an interrupt, which a host sees only by polling.
                while let deadline = call.deadline, !deadline.hasPassed, !call.isInterrupted { usleep(1000) }
                return []
            }),
        ], close: { $0.tracker.closed.add(1, ordering: .relaxed) })
        let other = HostClass<Resource>("other", methods: [("get", { _, _ in ["other"] })])
        let shared = resource.object(Resource(tracker))
        return HostModule("objects", functions: [
            ("new", { _ in [resource.object(Resource(tracker))] }),
            ("other", { _ in [other.object(Resource(tracker))] }),
            ("shared", { _ in [shared] }),
            ("count", { call in [.integer(Int64(call.arguments.count))] }),
        ])
    }

    func state(_ text: String, _ tracker: ResourceTracker, lifetime: HostObjectLifetime = .collected,
               memoryLimit: Int = 8 << 20) throws -> SandboxedState {
        let state = try SandboxedState(memoryLimit: memoryLimit, modules: [Self.module(tracker, lifetime: lifetime)])
        _ = try state.load(ScriptSource(path: "venue.lua", text: text)).get()
        return state
    }

    @Test func methodsReachTheSwiftObject() throws {
        let tracker = ResourceTracker()
        let script = try state("""
            return { go = function()
              local r = objects.new()
              r:add(2) r:add(3)
              return r:get(), type(r), getmetatable(r), (tostring(r):match('^resource: ')) ~= nil,
                rawequal(objects.shared(), objects.shared())
            end }
            """, tracker)
        #expect(try script.call("go").get() == [5, "userdata", "locked", true, true])
    }

    @Test func theMetatableAndMethodsCannotBeReplaced() throws {
        let tracker = ResourceTracker()
        let script = try state("""
            return {
              set = function() local r = objects.new() r.get = function() return 99 end end,
              meta = function() setmetatable(objects.new(), {}) end,
              raw = function() rawset(objects.new(), 'get', print) end,
            }
            """, tracker)
        for entry in ["set", "meta", "raw"] {
            let error = try #require(throws: LuaScriptError.self) { try script.call(entry).get() }
            #expect(error.kind == .runtime, "\(entry): \(error)")
        }
    }

    @Test(arguments: [
        ("{}", "table"), ("'text'", "string"), ("nil", "nil"), ("string", "userdata"), ("objects.other()", "other"),
    ])
    func aMethodOnAForgedSelfIsACleanError(forged: String, got: String) throws {
        let tracker = ResourceTracker()
        let script = try state("return { go = function() local r = objects.new()\n return r.get(\(forged)) end }", tracker)
        let error = try #require(throws: LuaScriptError.self) { try script.call("go").get() }
        #expect(error.kind == .runtime)
        #expect(error.message == "venue.lua:2: bad self to 'resource:get' (resource expected, got \(got)); call it as object:get(...)")
        #expect(error.location == "venue.lua:2")
    }

    @Test func methodsAfterCloseFailCleanlyAndCloseIsIdempotent() throws {
        let tracker = ResourceTracker()
        let script = try state("""
            return { go = function()
              local r = objects.new()
              r:close() r:close()
              return pcall(r.get, r)
            end }
            """, tracker)
        #expect(try script.call("go").get() == [false, "attempt to use a closed resource"])
        #expect(tracker.closed.load(ordering: .relaxed) == 1)
        #expect(tracker.alive.load(ordering: .relaxed) == 1)  // only the shared object, which the module keeps
    }

    @Test func aCloseVariableReleasesTheObject() throws {
        let tracker = ResourceTracker()
        let script = try state("""
            return { go = function()
              do local r <close> = objects.new() r:add(1) end
              local ok = pcall(function() local r <close> = objects.new() error('unwinding') end)
              return ok
            end }
            """, tracker)
        #expect(try script.call("go").get() == [false])
        #expect(tracker.closed.load(ordering: .relaxed) == 2)
    }

    @Test func collectedObjectsReleaseTheirSwiftResources() throws {
        let tracker = ResourceTracker()
        var script: SandboxedState? = try state("""
            return { go = function()
              for i = 1, 1000 do objects.new():add(i) end
              local churn = {}
              for i = 1, 200000 do churn[i % 64] = { i } end
            end }
            """, tracker)
        _ = try script!.call("go").get()
        // The collector ran while the script churned, and its finalizers released objects.
        #expect(tracker.closed.load(ordering: .relaxed) > 0)
        #expect(tracker.alive.load(ordering: .relaxed) < 1001)
        script = nil
        // Closing the state finalizes the rest, and drops the module's shared object.
        #expect(tracker.closed.load(ordering: .relaxed) == 1000)
        #expect(tracker.alive.load(ordering: .relaxed) == 0)
    }

    @Test func objectsUnderMemoryPressureAreReleased() throws {
        let tracker = ResourceTracker()
        var script: SandboxedState? = try state("""
            return {
              hoard = function() local kept = {} while true do kept[#kept + 1] = objects.new() end end,
              drop = function() while true do objects.new() end end,
              ping = function() return 'pong' end,
            }
            """, tracker, memoryLimit: 2 << 20)
        let hoarded = try #require(throws: LuaScriptError.self) { try script!.call("hoard").get() }
        #expect(hoarded.kind == .memoryLimit)
        let dropped = try #require(throws: LuaScriptError.self) {
            try script!.call("drop", deadline: .after(.milliseconds(300))).get()
        }
        // Finalizers do not run in Lua's emergency collection, so objects dropped faster than
        // the collector finalizes them may reach the cap first: either way the state lives on.
        #expect([.deadlineExceeded, .memoryLimit].contains(dropped.kind))
        #expect(try script!.call("ping").get() == ["pong"])
        script = nil
        #expect(tracker.alive.load(ordering: .relaxed) == 0)
        #expect(tracker.closed.load(ordering: .relaxed) > 1000)
    }

    @Test func theDeadlineStrikesAfterABlockingMethod() throws {
        let tracker = ResourceTracker()
        let script = try state("return { go = function() local r = objects.new()\n r:wait()\n while true do end end }", tracker)
        let start = Deadline.now
        let error = try #require(throws: LuaScriptError.self) {
            try script.call("go", deadline: .after(.milliseconds(200))).get()
        }
        #expect(error.kind == .deadlineExceeded)
        #expect(Deadline.now.nanoseconds - start.nanoseconds < 450_000_000)
    }

    @Test func anErrorRaisedInAMethodShowsTheScriptLine() throws {
        let tracker = ResourceTracker()
        let script = try state("return { go = function()\n local r = objects.new()\n r:fail()\n end }", tracker)
        let error = try #require(throws: LuaScriptError.self) { try script.call("go").get() }
        #expect(error.kind == .runtime)
        #expect(error.message == "the resource refused")
        #expect(error.location == "venue.lua:3")
        #expect(error.description.hasPrefix("venue.lua:3:"))
    }

    @Test func badArgumentsToAMethodNameIt() throws {
        let tracker = ResourceTracker()
        let script = try state("return { go = function() objects.new():add('many') end }", tracker)
        let error = try #require(throws: LuaScriptError.self) { try script.call("go").get() }
        #expect(error.message == "bad argument #1 to 'resource:add' (number expected, got string)")
    }

    @Test func objectsNeverLeaveTheirState() throws {
        let tracker = ResourceTracker()
        let script = try state("""
            return {
              give = function() return objects.new() end,
              nested = function() return { conn = objects.new() } end,
              pass = function() return objects.count(objects.new()) end,
              echo = function(...) return ... end,
            }
            """, tracker)
        for entry in ["give", "nested"] {
            let error = try #require(throws: LuaScriptError.self) { try script.call(entry).get() }
            #expect(error.kind == .invalidValue)
            #expect(error.message.contains("a host object cannot be copied out of its Lua state"), "\(entry): \(error)")
        }
        let passed = try #require(throws: LuaScriptError.self) { try script.call("pass").get() }
        #expect(passed.message.contains("a host object cannot be copied out of its Lua state"))
        let object = HostClass<Resource>("resource", methods: []).object(Resource(tracker))
        let sent = try #require(throws: LuaScriptError.self) { try script.call("echo", [object]).get() }
        #expect(sent.kind == .invalidValue)
        #expect(sent.message == "a resource object cannot leave the Lua state it belongs to")
    }

    @Test func callScopedObjectsCloseWhenTheirCallEnds() throws {
        let tracker = ResourceTracker()
        let script = try state("""
            local kept
            return {
              make = function() kept = objects.new() kept:add(4) objects.new() return kept:get() end,
              use = function() return pcall(kept.get, kept) end,
            }
            """, tracker, lifetime: .call)
        #expect(try script.call("make").get() == [4])
        #expect(tracker.closed.load(ordering: .relaxed) == 2)
        #expect(script.liveObjectCount == 0)
        #expect(try script.call("use").get() == [false, "attempt to use a closed resource"])
    }
}
