import HotspotCore
import HotspotNetwork
import LuaSandbox
import ScriptContract
import Testing

/// The context the runtime encodes is the one the libraries decode.
@Suite struct HelperContextTests {
    @Test func aContextDecodesAsItWasEncoded() throws {
        let context = HelperContext(
            hosts: try ["portal.example", "*.venue.example"].map { try HostPattern.parse($0).get() },
            secrets: ["password": "latte"], helper: "venue", interface: "wlan0", resolvers: ["10.0.0.1"],
            probes: ["http://probe.example/"], caFile: "/etc/venue-ca.pem", captivePortalAPI: "https://capport.example/api",
            allowsPlainHTTPCaptivePortalAPI: true, followsPortal: true, session: "join-1")
        #expect(HelperContext(try #require(context.luaValue.tableValue)) == context)
    }

    @Test func emptyListsAndFalseFlagsAreLeftOut() throws {
        let context = HelperContext(
            hosts: [], secrets: [:], helper: "venue", interface: nil, resolvers: [], probes: [], caFile: nil,
            captivePortalAPI: nil, allowsPlainHTTPCaptivePortalAPI: false, followsPortal: false)
        let table = try #require(context.luaValue.tableValue)
        #expect(Set(table.entries.keys.compactMap(\.stringValue)) == [HelperContext.Key.helper.rawValue])
        #expect(HelperContext(table) == context)
    }
}
