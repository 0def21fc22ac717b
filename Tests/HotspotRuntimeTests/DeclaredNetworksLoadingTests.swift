import HotspotCore
@testable import HotspotRuntime
import LuaSandbox
import Testing

/// A script's `networks`: read at load, checked where it is written, and used to choose the
/// helper at a join without running any of its code.
@Suite struct DeclaredNetworksLoadingTests {
    static let declared = """
        return {
          name = "Campus",
          hosts = { "portal.example" },
          networks = { ssids = { "Venue-Guest" }, ssid_patterns = { "Campus-*" }, bssid_prefixes = { "02:00:00" } },
          authenticate = function(cmd) return "success" end,
        }
        """

    /// The count is the engine's own: every call into any script, so a declared helper's
    /// `evaluate`, an undeclared one's, or any other entry would show.
    @Test func aDeclaredHelperIsChosenWithNoLuaCallButItsAuthenticate() async throws {
        let fixture = try await RuntimeFixture(scripts: [
            "campus": Self.declared,
            "other": venue("Other", confidence: "none"),
            "elsewhere": "return { name = 'Elsewhere', hosts = {}, networks = { ssids = { 'Library' } },"
                + " authenticate = function(cmd) return 'success' end }\n",
        ])
        defer { fixture.engine.shutdown() }
        let helper = try #require(await fixture.runtime.helpers.first { $0.id == "campus" })
        #expect(helper.declaredNetworks == NetworkDeclaration(ssids: ["Venue-Guest"], ssidPatterns: [try SSIDPattern.parse("Campus-*").get()],
                                                              bssidPrefixes: ["02:00:00"]))
        let before = fixture.engine.callsMade
        #expect(await fixture.runtime.join(guest) == .authenticated)
        #expect(fixture.engine.callsMade - before == 1)
        #expect(fixture.events.commands().map { "\($0.helper):\($0.command.rawValue)" } == ["campus:authenticate"])
        #expect(await fixture.runtime.chosenHelper(of: guest.ssid) == "campus")

        // A pattern is low: the helper that declares nothing is still asked.
        let campus = NetworkDescription(ssid: "Campus-East", bssid: "02:00:00:00:00:07")
        let again = fixture.engine.callsMade
        #expect(await fixture.runtime.join(campus) == .authenticated)
        #expect(fixture.engine.callsMade - again == 2)
        #expect(fixture.events.commands().suffix(2).map { "\($0.helper):\($0.command.rawValue)" } == ["other:evaluate", "campus:authenticate"])
    }

    @Test(arguments: [
        ("networks = 'Campus'", "`networks` must be a table of `ssids`, `ssid_patterns`, `bssid_prefixes`"),
        ("networks = { ssid = { 'Campus' } }", "`networks` has an unknown field `ssid`; its fields are `ssids`, `ssid_patterns`, `bssid_prefixes`"),
        ("networks = { ssids = 'Campus' }", "`networks.ssids` must be a list of strings"),
        ("networks = { ssids = { 'Campus', 7 } }", "`networks.ssids[2]` must be a string"),
        ("networks = { ssids = { '' } }", "`networks.ssids`: \"\" is 0 bytes; an SSID has 1 to 32"),
        ("networks = { ssid_patterns = { '*' } }",
         "`networks.ssid_patterns`: the SSID pattern \"*\" matches every SSID; declare the venue's own names, or leave the choice to `evaluate`"),
        ("networks = { bssid_prefixes = { '02:00:0' } }",
         "`networks.bssid_prefixes`: \"02:00:0\" is no BSSID prefix; give 1 to 6 hexadecimal octets separated by colons, such as \"02:5e:10\""),
        ("networks = {}", "`networks` declares no network; leave it out to have `evaluate` judge each network"),
    ])
    func anInvalidDeclarationIsRefusedWhereItIsWritten(_ line: String, _ message: String) async throws {
        let engine = try LuaEngine(HotspotRuntime.engineConfiguration())
        defer { engine.shutdown() }
        let script = "return {\n  name = 'Campus', hosts = {},\n  \(line),\n  authenticate = function(cmd) return 'success' end,\n}\n"
        guard case .failure(let found) = await HelperScript.load(path: "campus.lua", text: script, into: engine) else {
            Issue.record("the script loaded")
            return
        }
        #expect(found.problems.map(\.description) == ["campus.lua:3: \(message)"])
    }

    @Test func aDeclaredScriptWithEvaluateIsRefused() async throws {
        let engine = try LuaEngine(HotspotRuntime.engineConfiguration())
        defer { engine.shutdown() }
        let script = "return {\n  name = 'Campus', hosts = {}, networks = { ssids = { 'Campus' } },\n"
            + "  evaluate = function(cmd) end,\n}\n"
        guard case .failure(let found) = await HelperScript.load(path: "campus.lua", text: script, into: engine) else {
            Issue.record("the script loaded")
            return
        }
        #expect(found.problems.map(\.description) == ["campus.lua:3: a script that declares its `networks` is never asked to evaluate; "
                                                      + "leave out `evaluate`, or `networks` to have it judge each network"])
    }

    @Test func twoScriptsDeclaringOneSSIDAreReported() async throws {
        let fixture = try await RuntimeFixture(scripts: ["campus": Self.declared, "copy": Self.declared.replacing("Campus\"", with: "Copy\"")])
        defer { fixture.engine.shutdown() }
        let problems = HelperScript.sharedDeclarations(among: await fixture.runtime.helpers)
        #expect(problems.map(\.description) == [
            "\(fixture.scripts)/copy.lua: `networks`: campus declares ssid \"Venue-Guest\" as well; campus would be chosen and copy never asked",
            "\(fixture.scripts)/copy.lua: `networks`: campus declares ssid pattern \"Campus-*\" as well; campus would be chosen and copy never asked",
        ])
    }
}
