import Foundation
import HotspotCore
@testable import HotspotRuntime
import LuaSandbox
import PortalSimulator
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
        ("networks = 'Campus'", "`networks` must be a table of `ssids`, `ssid_patterns`, `bssid_prefixes`, `portal_hosts`, `gateway_families`"),
        ("networks = { ssid = { 'Campus' } }", "`networks` has an unknown field `ssid`; its fields are `ssids`, `ssid_patterns`, `bssid_prefixes`, `portal_hosts`, `gateway_families`"),
        ("networks = { ssids = 'Campus' }", "`networks.ssids` must be a list of strings"),
        ("networks = { ssids = { 'Campus', 7 } }", "`networks.ssids[2]` must be a string"),
        ("networks = { ssids = { '' } }", "`networks.ssids`: \"\" is 0 bytes; an SSID has 1 to 32"),
        ("networks = { ssid_patterns = { '*' } }",
         "`networks.ssid_patterns`: the SSID pattern \"*\" matches every SSID; declare the venue's own names, or leave the choice to `evaluate`"),
        ("networks = { bssid_prefixes = { '02:00:0' } }",
         "`networks.bssid_prefixes`: \"02:00:0\" is no BSSID prefix; give 1 to 6 hexadecimal octets separated by colons, such as \"02:5e:10\""),
        ("networks = {}", "`networks` declares no network; leave it out to have `evaluate` judge each network"),
        ("networks = { portal_hosts = { 'https://login.campus.example/' } }",
         "`networks.portal_hosts`: host pattern \"https://login.campus.example/\" has a label that is not letters, digits and inner hyphens; "
            + "give the host the network's portal redirects to, such as \"login.campus.example\", or \"*.campus.example\" for any name below that domain"),
        ("networks = { portal_hosts = { '*.example' } }",
         "`networks.portal_hosts`: host pattern \"*.example\" would match every name under a top-level domain; "
            + "give the host the network's portal redirects to, such as \"login.campus.example\", or \"*.campus.example\" for any name below that domain"),
        ("networks = { gateway_families = { 'chillispot' } }",
         "`networks.gateway_families`: \"chillispot\" is no gateway family; the families are coovachilli, meraki, unifi, aruba, opennds, pfsense"),
        ("networks = { gateway_families = { 'mikrotik' } }",
         "`networks.gateway_families`: \"mikrotik\" is told apart only by its login page, which no code has read when a declared helper "
            + "is chosen; declare its `portal_hosts`, or leave the choice to `evaluate`"),
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

    /// SCRIPTING.md's example of a declared portal host, as written but for the host (the
    /// simulator's, on loopback): the join's probe finds the portal, the helper is chosen by
    /// its host with no Lua call but its authenticate, and its login holds.
    @Test func theDocumentedPortalHostExampleIsChosenWithNoLuaCallButItsAuthenticate() async throws {
        let guide = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../docs/SCRIPTING.md")
        let text = try String(contentsOf: guide.standardized, encoding: .utf8)
        let example = try #require(text.components(separatedBy: "```lua\n").dropFirst().compactMap { $0.components(separatedBy: "```").first }
            .first { $0.contains("portal_hosts =") })
        #expect(example.contains(#"portal_hosts = { "login.marina.example" }"#))
        let portal = try await SimulatedPortal.start(.clickThrough)
        let fixture = try await RuntimeFixture(scripts: [
            "marina": example.replacing("login.marina.example", with: "127.0.0.1"),
            "other": venue("Other", confidence: "high"),
        ], configuration: .init(policy: .init(commandDeadline: .seconds(10), verifyAuthentication: true)))
        let network = NetworkDescription(ssid: "Marina Berth 12", probes: [Probe(url: portal.url + "generate_204", expectation: .status(204))])
        let before = fixture.engine.callsMade
        let state = await fixture.runtime.join(network)
        let calls = fixture.engine.callsMade - before
        await portal.stop()
        fixture.engine.shutdown()
        #expect(state == .authenticated)
        #expect(calls == 1)
        #expect(fixture.events.commands().map { "\($0.helper):\($0.command.rawValue)" } == ["marina:authenticate"])
        #expect(fixture.events.logs.contains { $0.message == "Marina Berth 12 matches the declaration of marina (portal host 127.0.0.1, high confidence)" })
        // The join's probe, then the check of the helper's success.
        #expect(fixture.events.connectivity.map(\.verdict) == [.captive, .connected])
    }

    /// A CoovaChilli gateway named by its redirect: the declared family is low, so the helper
    /// that declares nothing is still asked, and answering none leaves it to the family.
    @Test func aGatewayFamilyIsMatchedByTheRedirectsShape() async throws {
        let portal = try await SimulatedPortal.start(.coovachilli)
        let fixture = try await RuntimeFixture(scripts: [
            "chilli": "return { name = 'Chilli', hosts = {}, networks = { gateway_families = { 'coovachilli' } },"
                + " authenticate = function(cmd) return 'success' end }\n",
            "other": venue("Other", confidence: "none"),
        ])
        let network = NetworkDescription(ssid: "Harbour", probes: [Probe(url: portal.url + "generate_204", expectation: .status(204))])
        let state = await fixture.runtime.join(network)
        await portal.stop()
        fixture.engine.shutdown()
        #expect(state == .authenticated)
        #expect(fixture.events.commands().map { "\($0.helper):\($0.command.rawValue)" } == ["other:evaluate", "chilli:authenticate"])
        #expect(fixture.events.logs.contains { $0.message.hasPrefix("Harbour's portal is at 127.0.0.1, a coovachilli gateway by its redirect") })
        #expect(fixture.events.logs.contains { $0.message == "Harbour matches the declaration of chilli (gateway family coovachilli, low confidence)" })
    }

    /// A declared script with a handler it would never be sent: `evaluate`, or
    /// `filter_scan_list` when it names only portals.
    @Test func aDeclaredScriptWithAHandlerItIsNeverSentIsRefused() async throws {
        let engine = try LuaEngine(HotspotRuntime.engineConfiguration())
        defer { engine.shutdown() }
        func problems(_ path: String, networks: String, handler: String) async -> [String] {
            let script = "return {\n  name = 'Campus', hosts = {}, networks = \(networks),\n  \(handler) = function(cmd) end,\n}\n"
            guard case .failure(let found) = await HelperScript.load(path: path, text: script, into: engine) else { return ["loaded"] }
            return found.problems.map(\.description)
        }
        #expect(await problems("campus.lua", networks: "{ ssids = { 'Campus' } }", handler: "evaluate") == [
            "campus.lua:3: a script that declares its `networks` is never asked to evaluate; "
                + "leave out `evaluate`, or `networks` to have it judge each network",
        ])
        #expect(await problems("marina.lua", networks: "{ portal_hosts = { 'login.marina.example' } }", handler: "filter_scan_list") == [
            "marina.lua:3: a script whose `networks` name only portal hosts and gateway families is never sent filter_scan_list, "
                + "since a scan list shows no portal; declare the SSIDs it claims there, or leave out `filter_scan_list`",
        ])
    }

    @Test func twoScriptsDeclaringOneSSIDAreReported() async throws {
        let fixture = try await RuntimeFixture(scripts: ["campus": Self.declared, "copy": Self.declared.replacing("Campus\"", with: "Copy\"")])
        defer { fixture.engine.shutdown() }
        let problems = HelperScript.sharedDeclarations(among: await fixture.runtime.helpers)
        #expect(problems.map(\.description) == [
            "\(fixture.scripts)/copy.lua: `networks`: campus declares ssid \"Venue-Guest\" as well; campus would be chosen and copy never asked",
            "\(fixture.scripts)/copy.lua: `networks`: campus declares ssid pattern \"Campus-*\" as well; campus would be chosen and copy never asked",
        ])
        let marina = "return { name = 'Marina', hosts = {}, networks = { portal_hosts = { 'login.marina.example' }, gateway_families = { 'unifi' } },"
            + " authenticate = function(cmd) return 'success' end }\n"
        let hosts = try await RuntimeFixture(scripts: ["marina": marina, "quay": marina.replacing("'unifi'", with: "'aruba'")])
        defer { hosts.engine.shutdown() }
        #expect(HelperScript.sharedDeclarations(among: await hosts.runtime.helpers).map(\.description) == [
            "\(hosts.scripts)/quay.lua: `networks`: marina declares portal host login.marina.example as well; marina would be chosen and quay never asked",
        ])
    }
}
