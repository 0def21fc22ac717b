import HotspotNetwork
import LuaSandbox
import ScriptLibraries
import Testing

/// The host libraries, called from Lua in a sandboxed state as scripts call them.
@Suite struct ScriptLibraryTests {
    func run(_ body: String) throws -> [LuaValue] {
        let state = try SandboxedState(memoryLimit: 16 << 20, modules: ScriptLibraries.modules)
        _ = try state.load(ScriptSource(path: "lib.lua", text: "return { go = function() \(body) end }")).get()
        return try state.call("go", deadline: .after(.seconds(5))).get()
    }

    func error(_ body: String) -> String? {
        do {
            _ = try run(body)
            return nil
        } catch {
            return (error as? LuaScriptError)?.message
        }
    }

    @Test func jsonRoundTrips() throws {
        #expect(try run(#"return json.encode({ a = 1, b = { true, false, 'x\n"y' }, c = 2.5 })"#)
            == [#"{"a":1,"b":[true,false,"x\n\"y"],"c":2.5}"#])
        let decoded = try run(#"local v = json.decode([[{"n": -12, "f": 1e3, "s": "\u00e9\ud83d\ude00", "l": [1, null, 3], "o": {}}]]) return v.n, math.type(v.n), v.f, v.s, v.l[1], v.l[2], v.l[3], type(v.o)"#)
        #expect(decoded == [-12, "integer", 1000.0, "é😀", 1, nil, 3, "table"])
    }

    /// What `json.decode` reads at its depth limit, `json.encode` writes again; the state
    /// could not hand it to `json.encode` (found by `make fuzz`, json-decode).
    @Test func jsonAtTheDepthLimitRoundTrips() throws {
        let deepest = String(repeating: "[", count: 32) + "{}" + String(repeating: "]", count: 32)
        #expect(try run("return json.encode(json.decode('\(deepest)'))") == [.text(deepest)])
    }

    @Test func jsonRefusesMalformedAndHostileInput() {
        #expect(error("return json.decode('{\"a\": }')")?.contains("json.decode: unexpected character at byte 7") == true)
        #expect(error("return json.decode('[1, 2')")?.contains("json.decode:") == true)
        #expect(error("return json.decode('01')")?.contains("may not start with 0") == true)
        #expect(error("return json.decode(('['):rep(100) .. (']'):rep(100))")?.contains("nested deeper than 32") == true)
        #expect(error("return json.decode('\"abc')")?.contains("unterminated string") == true)
        #expect(error("return json.encode({ [true] = 1 })")?.contains("a boolean key has no JSON form") == true)
        #expect(error("return json.encode(0/0)")?.contains("has no JSON form") == true)
        #expect(error("return json.encode({ f = print })")?.contains("cannot be passed") == true)
    }

    @Test func base64RoundTripsBytes() throws {
        #expect(try run("return base64.encode(''), base64.encode('f'), base64.encode('fo'), base64.encode('foo'), base64.encode('\\0\\255')")
            == ["", "Zg==", "Zm8=", "Zm9v", "AP8="])
        #expect(try run("return base64.decode('Zm9v'), base64.decode('Zm8'), base64.decode('AP8=\\n')") == ["foo", "fo", .string([0, 255])])
        #expect(error("return base64.decode('Zm9v!')") == "base64.decode: the text is not base64")
    }

    @Test func urlsEncodeParseAndResolve() throws {
        #expect(try run("return url.encode('a b&c=d/é'), url.decode('a%20b%26c%3Dd%2F%C3%A9%zz')")
            == ["a%20b%26c%3Dd%2F%C3%A9", "a b&c=d/é%zz"])
        let parsed = try run("local u = url.parse('HTTPS://user:pw@Portal.Example:8443/login/form?next=%2F#top') return u.scheme, u.user, u.password, u.host, u.port, u.path, u.query, u.fragment")
        #expect(parsed == ["https", "user", "pw", "portal.example", 8443, "/login/form", "next=%2F", "top"])
        #expect(try run("return url.parse('http://[::1]:8080/').host") == ["::1"])
        #expect(try run("return url.query({ b = 'x y', a = { 1, 2 }, c = true })") == ["a=1&a=2&b=x%20y&c=true"])
    }

    /// RFC 3986 section 5.4's examples.
    @Test(arguments: [
        ("g:h", "g:h"), ("g", "http://a/b/c/g"), ("./g", "http://a/b/c/g"), ("g/", "http://a/b/c/g/"),
        ("/g", "http://a/g"), ("//g", "http://g"), ("?y", "http://a/b/c/d;p?y"), ("g?y", "http://a/b/c/g?y"),
        ("#s", "http://a/b/c/d;p?q#s"), ("g#s", "http://a/b/c/g#s"), (";x", "http://a/b/c/;x"), ("", "http://a/b/c/d;p?q"),
        (".", "http://a/b/c/"), ("./", "http://a/b/c/"), ("..", "http://a/b/"), ("../g", "http://a/b/g"),
        ("../..", "http://a/"), ("../../g", "http://a/g"), ("../../../g", "http://a/g"), ("/./g", "http://a/g"),
        ("g.", "http://a/b/c/g."), ("g/../h", "http://a/b/c/h"), ("g;x=1/../y", "http://a/b/c/y"),
    ])
    func urlResolveFollowsRFC3986(_ reference: String, _ expected: String) {
        #expect(URLReference("http://a/b/c/d;p?q").resolving(URLReference(reference)).text == expected)
    }

    @Test func logLinesAndTimeAreThere() throws {
        let state = try SandboxedState(memoryLimit: 16 << 20, modules: ScriptLibraries.modules)
        _ = try state.load(ScriptSource(path: "lib.lua", text: """
            return { go = function() log.warn('portal slow', 3) log.debug({}) return time.now() > 1.7e9 end }
            """)).get()
        let outcome = state.call("go")
        #expect(try outcome.get() == [true])
        #expect(outcome.logs.map(\.level) == [.warn, .debug])
        #expect(outcome.logs.first?.message == "portal slow\t3")
    }
}
