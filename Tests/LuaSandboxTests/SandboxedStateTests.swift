import Testing
@testable import LuaSandbox

/// The sandbox inside one state, in this process: values, errors, the standard library
/// the sandbox leaves, host functions and the prelude.
@Suite struct SandboxedStateTests {
    func state(_ text: String, modules: [HostModule] = [], prelude: String? = nil) throws -> SandboxedState {
        let state = try SandboxedState(memoryLimit: 8 << 20, modules: modules,
                                       prelude: prelude.map { ScriptSource(chunkName: "=prelude", text: Array($0.utf8)) })
        _ = try state.load(ScriptSource(path: "venue.lua", text: text)).get()
        return state
    }

    @Test func valuesRoundTrip() throws {
        let echo = try state("return { echo = function(...) return ... end }")
        let values: [LuaValue] = [
            nil, true, false, 42, -7, .integer(.min), 2.5, .number(-0.0), "plain",
            .string([0x61, 0x00, 0x62, 0xff]),  // embedded NUL and a byte that is not UTF-8
            ["a", "b", ["nested": [1, 2, 3]]],
            [1: "one", "key": 2.5, true: "yes"],
        ]
        #expect(try echo.call("echo", values).get() == values)
    }

    @Test func settingNilRemovesATablesKey() throws {
        var table = LuaTable(["kept": 1, "dropped": 2])
        table["dropped"] = nil
        table["never"] = nil
        let absent: String? = nil
        table["optional"] = absent.map(LuaValue.text) ?? nil
        #expect(table.entries == ["kept": 1])
        #expect(LuaTable(["only": 1]).isEmpty == false)
        table["kept"] = nil
        #expect(table.isEmpty)
    }

    /// Keys are found by their bytes and kind: equal strings however they were made, and
    /// an integer, a float and a string that print alike are three keys.
    @Test func tableKeysHashByContent() {
        let long = String(repeating: "portal.example ", count: 40)
        var table = LuaTable()
        table[.string(Array(long.utf8))] = 1
        table[.integer(1)] = "integer"
        table[.number(1)] = "float"
        table["1"] = "string"
        table[.string([0x61, 0x00, 0x62])] = "with NUL"
        #expect(table[.text(long)] == 1)
        #expect(table[.string(Array(long.utf8.dropLast()) + [0x20])] == 1)
        #expect(table[.text(long + " ")] == nil)
        #expect(table[.integer(1)] == "integer" && table[.number(1)] == "float" && table["1"] == "string")
        #expect(table[.string([0x61, 0x00, 0x62])] == "with NUL" && table["a"] == nil)
        #expect(Set<LuaValue>(["x", .string(Array("x".utf8)), ["k": "x"], ["k": .text("x")]]).count == 2)
    }

    @Test func integersAndFloatsStayDistinct() throws {
        let script = try state("return { kinds = function(a, b) return math.type(a), math.type(b), 3 // 2, 3 / 2 end }")
        #expect(try script.call("kinds", [1, 1.0]).get() == ["integer", "float", 1, 1.5])
    }

    @Test func cyclicAndFunctionResultsAreRefused() throws {
        let script = try state("""
            return {
              cycle = function() local t = {} t.self = t return t end,
              fn = function() return { callback = print } end,
              deep = function() local t = {} for i = 1, 100 do t = { t } end return t end,
            }
            """)
        for entry in ["cycle", "fn", "deep"] {
            let error = try #require(throws: LuaScriptError.self) { try script.call(entry).get() }
            #expect(error.kind == .invalidValue, "\(entry): \(error)")
        }
    }

    /// Tables cross as deep as the decoders read them, both ways: 33 nested, the innermost
    /// empty. A state read them but would not send them (found by `make fuzz`, json-decode).
    @Test func tablesCrossAsDeepAsTheyAreRead() throws {
        let script = try state("""
            return {
              nest = function(levels) local t = {} for i = 2, levels do t = { t } end return t end,
              echo = function(value) return value end,
            }
            """)
        var deepest = LuaValue.table(LuaTable())
        for _ in 2...33 { deepest = [deepest] }
        #expect(try script.call("nest", [33]).get() == [deepest])
        #expect(try script.call("echo", [deepest]).get() == [deepest])
        let error = try #require(throws: LuaScriptError.self) { try script.call("nest", [34]).get() }
        #expect(error.kind == .invalidValue)
    }

    @Test func runtimeErrorsCarryTheLineAndATraceback() throws {
        let script = try state("""
            local function inner(t)
              return t.missing.field
            end
            return { go = function() local v = inner({}) return v end }
            """)
        let error = try #require(throws: LuaScriptError.self) { try script.call("go").get() }
        #expect(error.kind == .runtime)
        #expect(error.location == "venue.lua:2")
        #expect(error.message.contains("attempt to index a nil value"))
        #expect(error.traceback?.contains("venue.lua:4") == true)
        #expect(error.description.hasPrefix("venue.lua:2:"))
    }

    @Test func errorsInsideCFunctionsPointAtTheScriptLine() throws {
        let script = try state("return {\n go = function()\n return ('x'):rep(-1, 5, 6) .. string.rep()\n end }")
        let error = try #require(throws: LuaScriptError.self) { try script.call("go").get() }
        #expect(error.location == "venue.lua:3")
        #expect(error.message.contains("bad argument"))
    }

    @Test func syntaxErrorsNameTheLine() throws {
        let state = try SandboxedState(memoryLimit: 8 << 20)
        let error = try #require(throws: LuaScriptError.self) {
            try state.load(ScriptSource(path: "broken.lua", text: "return {\n  x = = 1\n}")).get()
        }
        #expect(error.kind == .syntax)
        #expect(error.location == "broken.lua:2")
    }

    @Test func errorObjectsWithMetamethodsAreNeverEvaluated() throws {
        let script = try state("""
            return {
              table = function() error(setmetatable({}, { __tostring = function() return {} end })) end,
              loop = function() error(setmetatable({}, { __tostring = function() while true do end end })) end,
              number = function() error(42) end,
            }
            """)
        let table = try #require(throws: LuaScriptError.self) { try script.call("table").get() }
        #expect(table.message == "(error object is a table value)")
        let loop = try #require(throws: LuaScriptError.self) { try script.call("loop", deadline: .after(.milliseconds(100))).get() }
        #expect(loop.message == "(error object is a table value)")
        let number = try #require(throws: LuaScriptError.self) { try script.call("number").get() }
        #expect(number.message == "42")
    }

    @Test func coroutinesWorkInsideScripts() throws {
        let script = try state("""
            return { gen = function(n)
              local co = coroutine.wrap(function() for i = 1, n do coroutine.yield(i * i) end end)
              local out = {}
              for i = 1, n do out[i] = co() end
              local ok, err = coroutine.resume(coroutine.create(function() error('inside') end))
              return out, ok, err
            end }
            """)
        let values = try script.call("gen", [4]).get()
        #expect(values[0] == [1, 4, 9, 16])
        #expect(values[1] == false)
        #expect(values[2].stringValue?.hasSuffix("inside") == true)
    }

    @Test func pcallStillCatchesOrdinaryErrors() throws {
        let script = try state("return { go = function() return pcall(error, 'plain') end }")
        #expect(try script.call("go").get() == [false, "plain"])
    }

    @Test func theStandardLibraryIsTheSandboxedOne() throws {
        let script = try state("""
            return { probe = function()
              local present = {}
              for _, name in ipairs({ 'dofile', 'loadfile', 'require', 'io', 'package', 'debug', 'warn' }) do
                if _G[name] ~= nil then present[#present + 1] = name end
              end
              local os_names = {}
              for k in pairs(os) do os_names[#os_names + 1] = k end
              table.sort(os_names)
              return present, table.concat(os_names, ','), string.dump, getmetatable(''),
                     select(2, pcall(collectgarbage, 'stop')), collectgarbage('count') > 0
            end }
            """)
        let values = try script.call("probe").get()
        #expect(values[0] == [:])
        #expect(values[1] == "clock,date,difftime,time")
        #expect(values[2] == nil)
        #expect(values[3] == "protected")
        #expect(values[4].stringValue?.contains("not allowed") == true)
        #expect(values[5] == true)
    }

    @Test func loadTakesTextOnlyAndAlwaysGetsAnEnvironment() throws {
        let script = try state("""
            secret = 'script global'
            return {
              binary = function() return load('\\27Lua...') end,
              fn = function() return pcall(load, function() return 'x' end) end,
              env = function() return load('return secret')() end,
              own = function() return load('return secret', 'chunk', 't', { secret = 'given' })() end,
            }
            """)
        let binary = try script.call("binary").get()
        #expect(binary[0] == nil)
        #expect(binary[1].stringValue?.contains("binary chunk") == true)
        #expect(try script.call("fn").get()[0] == false)
        #expect(try script.call("env").get() == ["script global"])
        #expect(try script.call("own").get() == ["given"])
    }

    @Test func finalizersAreRefused() throws {
        let script = try state("return { go = function() setmetatable({}, { __gc = function() end }) end }")
        let error = try #require(throws: LuaScriptError.self) { try script.call("go").get() }
        #expect(error.message.contains("__gc metamethods are not allowed"))
    }

    @Test func scriptsCannotChangeTheStandardLibraryForTheNextCall() throws {
        let script = try state("""
            return {
              vandalize = function()
                local results = {}
                results[1] = pcall(function() string.upper = nil end)
                results[2] = pcall(rawset, string, 'format', print)
                results[3] = pcall(function() getmetatable('').__index = {} end)
                rawset(_G, 'print', 'gone')
                tostring = nil
                string = { upper = function() return 'hacked' end }
                return results
              end,
              check = function() return string.upper('a'), ('b'):upper(), type(print), type(tostring) end,
            }
            """)
        #expect(try script.call("vandalize").get() == [[false, false, false]])
        #expect(try script.call("check").get() == ["A", "B", "function", "function"])
    }

    @Test func printAndLogsAreBoundedPerCall() throws {
        let script = try state("return { flood = function() for i = 1, 100000 do print('line', i) end return 'done' end }")
        let outcome = script.call("flood")
        #expect(try outcome.get() == ["done"])
        #expect(outcome.logs.count == 200)
        #expect(outcome.logs.first == LogRecord(level: .print, message: "line\t1"))
        #expect(outcome.droppedLogs == 100000 - 200)
    }

    @Test func aLineOverTheRecordLimitSaysItWasCutBetweenCharacters() throws {
        // 1,999 two-byte characters and one more byte: the cut would otherwise split one.
        let script = try state("return { long = function() print('x' .. ('é'):rep(3000)) end }")
        let line = try #require(script.call("long").logs.first?.message)
        #expect(line.utf8.count <= 4096)
        #expect(line.hasSuffix(" [cut: 6001 bytes in all]"), "\(line.suffix(40))")
        #expect(!line.contains("\u{FFFD}"), "the cut splits no character")
        #expect(line.hasPrefix("x" + String(repeating: "é", count: 100)))
    }

    @Test func hostFunctionsReturnValuesAndRaiseErrorsSafely() throws {
        let module = HostModule("calc", functions: [
            ("divide", { call in
                let a = try call.number(0), b = try call.number(1)
                guard b != 0 else { throw HostError("calc.divide: division by zero") }
                return [.number(a / b)]
            }),
            ("describe", { call in [.text("\(call.arguments.count) arguments, first \(call[0].typeName)")] }),
            ("log", { call in
                call.log(.warn, try call.string(0))
                return []
            }),
        ])
        let script = try state("""
            return {
              ok = function() return calc.divide(7, 2) end,
              zero = function() return calc.divide(1, 0) end,
              caught = function() return pcall(calc.divide, 1, 0) end,
              badarg = function() return calc.divide('x') end,
              describe = function() return calc.describe({ 1, 2 }, nil) end,
              fn = function() return calc.describe(print) end,
              log = function() calc.log('careful') end,
              readonly = function() calc.divide = nil end,
            }
            """, modules: [module])
        #expect(try script.call("ok").get() == [3.5])
        let zero = try #require(throws: LuaScriptError.self) { try script.call("zero").get() }
        #expect(zero.message == "calc.divide: division by zero")
        #expect(zero.location == "venue.lua:3")
        #expect(try script.call("caught").get() == [false, "calc.divide: division by zero"])
        let badarg = try #require(throws: LuaScriptError.self) { try script.call("badarg").get() }
        #expect(badarg.message == "bad argument #1 to 'calc.divide' (number expected, got string)")
        #expect(try script.call("describe").get() == ["2 arguments, first table"])
        let fn = try #require(throws: LuaScriptError.self) { try script.call("fn").get() }
        #expect(fn.message.contains("function value cannot be passed"))
        #expect(script.call("log").logs == [LogRecord(level: .warn, message: "careful")])
        let readonly = try #require(throws: LuaScriptError.self) { try script.call("readonly").get() }
        #expect(readonly.message.contains("read-only library 'calc'"))
    }

    @Test func thePreludeWrapsPrivateModulesAndProvidesEntryPoints() throws {
        let secret = HostModule("raw", isPublic: false, functions: [("answer", { _ in [42] })])
        let prelude = """
            local globals = ...
            local answer = host.raw.answer
            globals.answer = function() return answer() end
            return {
              dispatch = function(exports, name, ...)
                local handler = exports[name]
                if type(handler) ~= 'function' then return 'missing' end
                return handler(...)
              end,
            }
            """
        let script = try state("""
            return {
              hello = function(who) return 'hello ' .. who, answer(), raw end,
            }
            """, modules: [secret], prelude: prelude)
        #expect(try script.call("dispatch", ["hello", "venue"]).get() == ["hello venue", 42, nil])
        #expect(try script.call("dispatch", ["absent"]).get() == ["missing"])
        #expect(try script.call("hello", ["direct"]).get() == ["hello direct", 42, nil])
    }

    /// The prelude runs from bytecode compiled without debug information: errors in the
    /// script it calls keep the script's line; a prelude that does not compile is reported
    /// with its own line, as any chunk.
    @Test func thePreludeRunsCompiledAndErrorsKeepTheirLines() throws {
        let prelude = "return { dispatch = function(exports, name) return exports[name]() end }"
        let script = try SandboxedState(memoryLimit: 8 << 20, prelude: ScriptSource(chunkName: "=prelude", text: Array(prelude.utf8)))
        _ = try script.load(ScriptSource(path: "venue.lua", text: "return {\n  fail = function()\n    error('no portal')\n  end,\n}")).get()
        let error = try #require(throws: LuaScriptError.self) { try script.call("dispatch", ["fail"]).get() }
        #expect(error.message == "venue.lua:3: no portal")
        #expect(error.location == "venue.lua:3")

        let broken = try #require(throws: LuaScriptError.self) {
            _ = try SandboxedState(memoryLimit: 8 << 20, prelude: ScriptSource(chunkName: "=prelude", text: Array("return {\n  x = \n}".utf8)))
        }
        #expect(broken.kind == .syntax)
        #expect(broken.message.contains("prelude:3"))
    }

    @Test func aMissingFunctionIsAClearError() throws {
        let script = try state("return { }")
        let error = try #require(throws: LuaScriptError.self) { try script.call("nothing").get() }
        #expect(error.message == "the script has no function 'nothing'")
    }

    @Test func memoryCapStopsTheScriptWithAClearError() throws {
        let script = try state("return { bomb = function() local s = 'x' while true do s = s .. s end end }")
        let error = try #require(throws: LuaScriptError.self) { try script.call("bomb").get() }
        #expect(error.kind == .memoryLimit)
        #expect(error.message == "memory limit exceeded (8 MiB)")
        #expect(script.memoryUsed <= 8 << 20)
    }

    @Test func theHookStopsLuaLoopsAtTheDeadline() throws {
        let script = try state("return { spin = function() while true do end end }")
        let start = Deadline.now
        let error = try #require(throws: LuaScriptError.self) {
            try script.call("spin", deadline: .after(.milliseconds(50))).get()
        }
        let elapsed = Deadline.now.nanoseconds - start.nanoseconds
        #expect(error.kind == .deadlineExceeded)
        #expect(elapsed < 150_000_000)  // precision is a benchmark figure; this only proves the stop
        #expect(script.call("spin", deadline: .after(.milliseconds(1))).result.isSuccess == false)
    }
}

extension Result {
    var isSuccess: Bool { if case .success = self { true } else { false } }
}
