import Testing
import LuaSandbox

/// One entry of the threat catalogue in docs/SANDBOX-THREATS.md.
struct Threat: Sendable, CustomTestStringConvertible {
    let group: Int
    let name: String
    /// The body of the attacking function.
    let body: String
    /// What may come of it: error kinds, or nil for a normal answer.
    let outcomes: Set<LuaScriptError.Kind?>

    init(_ group: Int, _ name: String, _ body: String, _ outcomes: Set<LuaScriptError.Kind?>) {
        self.group = group
        self.name = name
        self.body = body
        self.outcomes = outcomes
    }

    var testDescription: String { "\(group). \(name)" }
}

let deadline: LuaScriptError.Kind? = .deadlineExceeded
let memory: LuaScriptError.Kind? = .memoryLimit
let runtime: LuaScriptError.Kind? = .runtime
let answered: LuaScriptError.Kind? = nil

let bigPage = "local page = ('<div class=\"x\">' .. ('a'):rep(60) .. '</div>\\n'):rep(3000)"

let threatCatalogue: [Threat] = [
    Threat(1, "infinite while", "while true do end", [deadline]),
    Threat(1, "infinite goto", "::a:: goto a", [deadline]),
    Threat(2, "pcall swallowing the deadline", "local f = function() while true do end end while true do pcall(f) end", [deadline]),
    Threat(3, "coroutine.resume swallowing", "local f = function() while true do end end while true do coroutine.resume(coroutine.create(f)) end", [deadline]),
    Threat(3, "coroutine.wrap swallowing", "local f = function() while true do end end while true do pcall(coroutine.wrap(f)) end", [deadline]),
    Threat(4, "looping xpcall handler", "xpcall(function() while true do end end, function() while true do end end)", [deadline]),
    Threat(5, "debug.sethook", "debug.sethook() while true do end", [runtime]),
    Threat(6, "backtracking a*^12", "return ('a'):rep(3000):find(('a*'):rep(12) .. 'b')", [deadline]),
    Threat(6, "backtracking .-.-.-", "return ('a'):rep(3000):find('.-.-.-b')", [deadline]),
    Threat(6, "backtracking through gsub on a page", "\(bigPage) return page:gsub('.-.-.-<b>', '')", [deadline]),
    Threat(6, "backtracking through gmatch on a page", "\(bigPage) for m in page:gmatch('.-.-.-<b>') do end", [deadline]),
    Threat(6, "backtracking through match on a page", "\(bigPage) return page:match('(.-)(.-)(.-)<b>')", [deadline]),
    Threat(7, "sorting millions", "local t = {} for i = 1, 3e6 do t[i] = (i * 7919) % 1000003 end table.sort(t)", [deadline, memory]),
    Threat(7, "rep of 250 MB", "return ('x'):rep(2.5e8)", [memory]),
    Threat(8, "string doubling", "local s = 'x' while true do s = s .. s end", [memory]),
    Threat(8, "table fill", "local t = {} local i = 0 while true do i = i + 1 t[i] = i end", [memory, deadline]),
    Threat(8, "concat of a million strings", "local t = {} for i = 1, 1e6 do t[i] = tostring(i) .. 'xxxxxxxxxxxxxxxx' end return #table.concat(t)", [memory, deadline]),
    Threat(8, "gsub doubling", "local s = ('x'):rep(1000) while true do s = s:gsub('x', 'xx') end", [memory, deadline]),
    Threat(8, "millions of coroutines", "local t = {} for i = 1, 1e7 do t[i] = coroutine.create(print) end", [memory, deadline]),
    Threat(8, "rep of 100 MB", "return ('x'):rep(1e8)", [memory]),
    Threat(9, "unbounded recursion", "local function f() return 1 + f() end return f()", [runtime, memory]),
    Threat(9, "recursive __index function", "local t t = setmetatable({}, { __index = function(_, k) return t[k] end }) return t.x", [runtime]),
    Threat(9, "recursive __index table", "local t = {} setmetatable(t, { __index = t }) return t.x", [runtime]),
    Threat(9, "nested coroutine.wrap", "local function f() return coroutine.wrap(f)() end return f()", [runtime, memory]),
    Threat(9, "deeply nested parentheses", "return assert(load(('('):rep(1e5) .. '1' .. (')'):rep(1e5)))", [runtime]),
    Threat(10, "unpack of 1e8", "return table.unpack({}, 1, 1e8)", [runtime]),
    Threat(11, "string.dump", "return load(string.dump(function() end))", [runtime]),
    Threat(11, "binary chunk literal", "return assert(load('\\27Lua\\x54\\0\\x19\\x93\\r\\n\\x1a\\n'))", [runtime]),
    Threat(12, "__gc finalizer", "setmetatable({}, { __gc = function() while true do end end })", [runtime]),
    Threat(12, "__gc finalizer and a collection", "setmetatable({}, { __gc = function() while true do end end }) collectgarbage()", [runtime]),
    Threat(13, "__close looping while an error unwinds", "local x <close> = setmetatable({}, { __close = function() while true do end end }) error('boom')", [deadline]),
    Threat(14, "__tostring that loops", "error(setmetatable({}, { __tostring = function() while true do end end }))", [runtime]),
    Threat(14, "__tostring that returns a table", "error(setmetatable({}, { __tostring = function() return {} end }))", [runtime]),
    Threat(15, "string metatable", "getmetatable('').__index = { upper = function() return 'x' end }", [runtime]),
    Threat(16, "string.upper = nil", "string.upper = nil", [runtime]),
    Threat(16, "rawset on string", "rawset(string, 'format', print)", [runtime]),
    Threat(16, "rawset on _G", "rawset(_G, 'tostring', nil) rawset(_G, 'string', {})", [answered]),
    Threat(17, "collectgarbage('stop')", "collectgarbage('stop')", [runtime]),
    Threat(18, "os.execute", "os.execute('true')", [runtime]),
    Threat(18, "io.popen", "io.popen('id')", [runtime]),
    Threat(18, "io.open", "io.open('/etc/passwd')", [runtime]),
    Threat(18, "require", "require('os')", [runtime]),
    Threat(18, "package.loadlib", "package.loadlib('libc.so.6', 'system')", [runtime]),
    Threat(18, "dofile", "dofile('/etc/passwd')", [runtime]),
    Threat(18, "loadfile", "loadfile('/etc/passwd')", [runtime]),
    // Answered on a quiet machine; on a loaded one the deadline may come first: contained either way.
    Threat(19, "flooding print", "for i = 1, 1e5 do print(('x'):rep(100), i) end", [answered, .deadlineExceeded]),
    Threat(20, "top-level yield", "coroutine.yield()", [runtime]),
    Threat(21, "returning a cyclic table", "local t = {} t[1] = t return t", [.invalidValue]),
    Threat(21, "returning tables whose __index and __pairs error", "return setmetatable({ 1 }, { __index = function() error('x') end, __pairs = function() error('y') end })", [answered]),
    Threat(21, "returning strings with NULs", "return 'a\\0b'", [answered]),
    Threat(22, "string.format width", "return string.format('%99999d', 1)", [runtime]),
    Threat(22, "string.pack size", "return string.pack('i17', 1)", [runtime]),
    Threat(22, "utf8.char range", "return utf8.char(0x80000000)", [runtime, answered]),
    Threat(22, "mininteger // -1", "return math.mininteger // -1", [answered]),
    Threat(22, "sort comparator always true", "local t = {} for i = 1, 200 do t[i] = i end table.sort(t, function() return true end)", [runtime, answered]),
]

/// Every threat runs in an engine holding a second script; each must end with the expected
/// class of outcome within the deadline plus the kill grace (and a margin for a machine
/// loaded by every other suite running at once on 2 cores: precision is measured by
/// `make bench`; this bound tells a stopped script from a hung one), and leave both
/// scripts serving.
@Suite(.serialized) struct ThreatCatalogueTests {
    static let engine = try! makeEngine(workers: 2, deadline: .milliseconds(300))

    @Test(arguments: threatCatalogue)
    func threatIsContained(_ threat: Threat) async throws {
        let engine = Self.engine
        let attacker = try await engine.load(ScriptSource(path: "attacker.lua", text: """
            return {
              attack = function() \(threat.body) end,
              check = function() return string.upper('a'), ('b'):upper(), type(tostring), type(string), type(io) end,
            }
            """))
        let bystander = try await engine.load(ScriptSource(path: "bystander.lua", text: """
            local counter = 0
            return { ping = function() counter = counter + 1 return 'pong' end }
            """))
        defer {
            engine.unload(attacker)
            engine.unload(bystander)
        }
        let start = Deadline.now
        let outcome = await engine.call(attacker, "attack")
        let elapsed = milliseconds(since: start)
        let kind: LuaScriptError.Kind? = if case .failure(let error) = outcome.result { error.kind } else { nil }
        #expect(threat.outcomes.contains(kind), "got \(outcome.result)")
        #expect(elapsed <= 300 + 200 + 1500, "took \(elapsed) ms")
        #expect(try await engine.call(attacker, "check").get() == ["A", "B", "function", "userdata", "nil"])
        #expect(try await engine.call(bystander, "ping").get() == ["pong"])
    }
}
