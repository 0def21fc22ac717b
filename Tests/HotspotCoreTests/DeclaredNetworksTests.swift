import Testing
import TestSupport
@testable import HotspotCore

/// Helpers that declare their networks are chosen by the declaration, never sent evaluate;
/// helpers that declare nothing evaluate as before.
@Suite struct DeclaredNetworksTests {
    @Test func anExactSSIDWinsWithoutAnyEvaluate() async {
        let harness = Harness([FakeHelper("evaluates"), FakeHelper("cafe", declaring: NetworkDeclaration(ssids: ["Cafe"]))])
        harness.transport.answer("evaluates", .evaluate, .claims(.high))
        harness.transport.answer("cafe", .authenticate, .success)
        #expect(await harness.machine.join(cafe) == .authenticated)
        #expect(await harness.machine.chosenHelper(of: "Cafe") == "cafe")
        #expect(harness.transport.sent == ["cafe:authenticate"])
        #expect(harness.events.logs.contains { $0.message == "Cafe matches the declaration of cafe (ssid \"Cafe\", high confidence)" })
    }

    @Test func aPatternIsLowAndAnEvaluatedHighBeatsIt() async {
        let harness = Harness([FakeHelper("chain", declaring: NetworkDeclaration(ssidPatterns: [pattern("Caf?*")])),
                               FakeHelper("venue"), FakeHelper("other", declaring: NetworkDeclaration(ssids: ["Library"]))])
        harness.transport.answer("venue", .evaluate, .claims(.high))
        harness.transport.answer("venue", .authenticate, .success)
        #expect(await harness.machine.join(cafe) == .authenticated)
        #expect(await harness.machine.chosenHelper(of: "Cafe") == "venue")
        #expect(harness.transport.sent == ["venue:evaluate", "venue:authenticate"])
    }

    @Test func aPatternWinsOverEvaluatedLows() async {
        let harness = Harness([FakeHelper("venue"), FakeHelper("chain", declaring: NetworkDeclaration(ssidPatterns: [pattern("C*")]))])
        harness.transport.answer("venue", .evaluate, .claims(.low))
        harness.transport.answer("chain", .authenticate, .success)
        #expect(await harness.machine.join(cafe) == .authenticated)
        #expect(await harness.machine.chosenHelper(of: "Cafe") == "chain")
        #expect(harness.transport.sent == ["venue:evaluate", "chain:authenticate"])
    }

    @Test func bssidPrefixesNarrowTheSSIDs() async {
        let elsewhere = NetworkDeclaration(ssids: ["Cafe"], bssidPrefixes: ["02:00:00:00:01"])
        let here = NetworkDeclaration(ssids: ["Cafe"], bssidPrefixes: ["02:00:00:00:00"])
        #expect(elsewhere.match(cafe) == nil)
        #expect(here.match(cafe) == .init(confidence: .high, entry: "ssid \"Cafe\" at bssid 02:00:00:00:00"))
        #expect(NetworkDeclaration(bssidPrefixes: ["02:00:00"]).match(cafe)?.confidence == .low)
        let harness = Harness([FakeHelper("elsewhere", declaring: elsewhere), FakeHelper("here", declaring: here)])
        harness.transport.answer("here", .authenticate, .success)
        #expect(await harness.machine.join(cafe) == .authenticated)
        #expect(harness.transport.sent == ["here:authenticate"])
    }

    @Test func twoHelpersDeclaringTheSameSSIDAreReportedAndTheFirstChosen() async {
        let harness = Harness([FakeHelper("a", declaring: NetworkDeclaration(ssids: ["Cafe"])),
                               FakeHelper("b", declaring: NetworkDeclaration(ssids: ["Cafe", "Bar"]))])
        harness.transport.answer("a", .authenticate, .success)
        #expect(await harness.machine.join(cafe) == .authenticated)
        #expect(await harness.machine.chosenHelper(of: "Cafe") == "a")
        #expect(harness.events.logs.contains { $0.level == .warn && $0.message.hasPrefix("Cafe matches the declarations of a, b alike") })
        let shared = NetworkDeclaration.sharedEntries([
            NetworkDeclaration(ssids: ["Cafe"], bssidPrefixes: ["02:00"]), nil,
            NetworkDeclaration(ssids: ["Cafe"], bssidPrefixes: ["04:00"]),  // other access points
            NetworkDeclaration(ssids: ["Bar", "Cafe"], bssidPrefixes: ["04:00:01"]),
            NetworkDeclaration(ssidPatterns: [try! SSIDPattern.parse("Bar*").get()]),
            NetworkDeclaration(bssidPrefixes: ["06:00"]), NetworkDeclaration(bssidPrefixes: ["06:00"]),
        ])
        #expect(shared.map { "\($0.index)<\($0.earlier): \($0.entry)" } == ["3<2: ssid \"Cafe\"", "6<5: bssid prefix 06:00"])
    }

    @Test func aSwitchedOffDeclaredHelperIsNotChosen() async throws {
        let harness = Harness([FakeHelper("cafe", declaring: NetworkDeclaration(ssids: ["Cafe"]))])
        try await harness.machine.setHelper("cafe", enabled: false, ssid: "Cafe")
        #expect(await harness.machine.declaredHelper(for: cafe) == nil)
        #expect(await harness.machine.join(cafe) == .authenticated)
        #expect(harness.transport.sent.isEmpty)
        #expect(await harness.machine.chosenHelper(of: "Cafe") == nil)
    }

    /// No SSID entry names the network, so the join probes it: an exact portal host is the
    /// venue's own and wins at once, with no evaluate.
    @Test func aPortalHostIsMatchedByTheJoinsProbeAndWinsAtOnce() async {
        let harness = Harness([FakeHelper("evaluates"), FakeHelper("marina", declaring: NetworkDeclaration(portalHosts: [host("login.marina.example")]))])
        harness.checks.portal(PortalSighting(url: "http://login.marina.example/", host: "LOGIN.marina.example", family: nil))
        harness.transport.answer("marina", .authenticate, .success)
        #expect(await harness.machine.join(cafe) == .authenticated)
        #expect(harness.checks.portalProbes == 1)
        #expect(harness.transport.sent == ["marina:authenticate"])
        #expect(harness.events.logs.contains { $0.message == "Cafe matches the declaration of marina (portal host login.marina.example, high confidence)" })
    }

    /// A declared SSID is known before anything is probed, and wins over a host.
    @Test func aDeclaredSSIDWinsOverAPortalHostWithoutAProbe() async {
        let harness = Harness([FakeHelper("host", declaring: NetworkDeclaration(portalHosts: [host("login.marina.example")])),
                               FakeHelper("ssid", declaring: NetworkDeclaration(ssids: ["Cafe"]))])
        harness.checks.portal(PortalSighting(url: "http://login.marina.example/", host: "login.marina.example", family: nil))
        harness.transport.answer("ssid", .authenticate, .success)
        #expect(await harness.machine.join(cafe) == .authenticated)
        #expect(harness.checks.portalProbes == 0)
        #expect(harness.transport.sent == ["ssid:authenticate"])
    }

    /// A family is every venue on that gateway, a host pattern several hosts: both low, so an
    /// evaluated high beats them and they beat an evaluated low.
    @Test func aGatewayFamilyOrAHostPatternIsLow() async {
        let chilli = FakeHelper("chilli", declaring: NetworkDeclaration(gatewayFamilies: [.coovachilli]))
        let marina = FakeHelper("marina", declaring: NetworkDeclaration(portalHosts: [host("*.marina.example")]))
        let sighting = PortalSighting(url: "http://gw.marina.example:3990/?res=notyet", host: "gw.marina.example", family: .coovachilli)
        #expect(chilli.declaredNetworks?.match(cafe, portal: sighting) == .init(confidence: .low, entry: "gateway family coovachilli"))
        #expect(marina.declaredNetworks?.match(cafe, portal: sighting) == .init(confidence: .low, entry: "portal host *.marina.example"))
        #expect(NetworkDeclaration(gatewayFamilies: [.meraki]).match(cafe, portal: sighting) == nil)
        #expect(NetworkDeclaration(portalHosts: [host("marina.example")]).match(cafe, portal: sighting) == nil)
        // BSSID prefixes narrow a host as they narrow an SSID, and with a host no longer match alone.
        let elsewhere = NetworkDeclaration(bssidPrefixes: ["04:00"], portalHosts: [host("gw.marina.example")])
        #expect(elsewhere.match(cafe, portal: sighting) == nil && elsewhere.match(cafe) == nil)
        #expect(NetworkDeclaration(bssidPrefixes: ["02:00"], portalHosts: [host("gw.marina.example")]).match(cafe, portal: sighting)
                == .init(confidence: .high, entry: "portal host gw.marina.example at bssid 02:00"))

        let beaten = Harness([chilli, FakeHelper("venue")])
        beaten.checks.portal(sighting)
        beaten.transport.answer("venue", .evaluate, .claims(.high))
        beaten.transport.answer("venue", .authenticate, .success)
        #expect(await beaten.machine.join(cafe) == .authenticated)
        #expect(beaten.transport.sent == ["venue:evaluate", "venue:authenticate"])

        let winning = Harness([marina, FakeHelper("venue")])
        winning.checks.portal(sighting)
        winning.transport.answer("venue", .evaluate, .claims(.low))
        winning.transport.answer("marina", .authenticate, .success)
        #expect(await winning.machine.join(cafe) == .authenticated)
        #expect(winning.transport.sent == ["venue:evaluate", "marina:authenticate"])
    }

    /// Connected, or captive with no portal URL: nothing declared by portal matches, and the
    /// helpers that declare nothing evaluate as before.
    @Test func withNoPortalTheJoinEvaluatesAsBefore() async {
        let harness = Harness([FakeHelper("marina", declaring: NetworkDeclaration(portalHosts: [host("login.marina.example")])),
                               FakeHelper("venue")])
        harness.transport.answer("venue", .evaluate, .claims(.low))
        harness.transport.answer("venue", .authenticate, .success)
        #expect(await harness.machine.join(cafe) == .authenticated)
        #expect(harness.checks.portalProbes == 1)
        #expect(harness.transport.sent == ["venue:evaluate", "venue:authenticate"])
        #expect(harness.events.logs.contains { $0.message == "Cafe shows no portal; the declared portal hosts and gateway families do not match it" })
    }

    @Test func twoHelpersDeclaringOneHostOrFamilyAreReported() {
        let shared = NetworkDeclaration.sharedEntries([
            NetworkDeclaration(portalHosts: [host("login.marina.example")], gatewayFamilies: [.unifi]),
            NetworkDeclaration(portalHosts: [host("LOGIN.marina.example"), host("*.marina.example")]),
            NetworkDeclaration(bssidPrefixes: ["06:00"], gatewayFamilies: [.unifi, .aruba]),
            NetworkDeclaration(portalHosts: [host("*.marina.example")]),
        ])
        #expect(shared.map { "\($0.index)<\($0.earlier): \($0.entry)" } == [
            "1<0: portal host login.marina.example", "2<0: gateway family unifi", "3<1: portal host *.marina.example",
        ])
    }

    /// The shapes the bundled family helpers look for in the probe's redirect.
    @Test(arguments: [
        ("/", ["res": "notyet", "challenge": "0a1b", "uamip": "10.1.0.1", "uamport": "3990"], GatewayFamily.coovachilli),
        ("/", ["res": "notyet", "challenge": "0a1b", "uamip": "10.1.0.1", "uamport": "x"], nil),
        ("/splash", ["base_grant_url": "https://n1.network-auth.com/grant", "user_continue_url": "http://x/"], .meraki),
        ("/splash", ["login_url": "https://n1.network-auth.com/login", "continue_url": "http://x/"], .meraki),
        ("/guest/s/default/", ["id": "02:00:00:00:00:01", "url": "http://x/"], .unifi),
        ("/guest/s//", ["id": "02:00:00:00:00:01", "url": "http://x/"], nil),
        ("/cgi-bin/login", ["cmd": "login", "mac": "02:00:00:00:00:01"], .aruba),
        ("/opennds_preauth/", ["fas": "aGlk"], .opennds),
        ("/index.php", ["zone": "guest", "redirurl": "http://x/"], .pfsense),
        ("/login", ["dst": "http://x/"], nil),
        ("/login.html", ["redirect": "x/"], nil),
    ] as [(String, [String: String], GatewayFamily?)])
    func gatewayFamiliesByTheirRedirect(_ path: String, _ query: [String: String], _ family: GatewayFamily?) {
        #expect(GatewayFamily.recognised(path: path, query: query) == family)
    }

    @Test(arguments: [("Caf?", "Cafe", true), ("*-Guest", "Hotel-Guest", true), ("*-Guest", "Hotel-Guests", false),
                      ("a*b*c", "aXXbYYc", true), ("a*b*c", "aXXbYY", false), ("Café*", "Café Central", true), ("x", "xx", false)])
    func patterns(_ text: String, _ ssid: String, _ matches: Bool) {
        #expect(pattern(text).matches(ssid) == matches)
    }

    @Test func aPatternMatchingEverySSIDIsRefused() {
        for text in ["*", "?*", "**"] {
            #expect(throws: SSIDPattern.PatternError.self) { try SSIDPattern.parse(text).get() }
        }
    }

    private func pattern(_ text: String) -> SSIDPattern { try! SSIDPattern.parse(text).get() }
    private func host(_ text: String) -> HostPattern { try! HostPattern.parse(text).get() }
}
