import HotspotRuntime
import Testing
import HotspotCore

/// Helpers the user switched off (`hotspot-helper disable`), everywhere or for one network,
/// are not asked, and the rest are asked as before.
@Suite struct SwitchedOffHelpersTests {
    static let claiming = venue("Claiming", confidence: "high", handlers: [
        "authenticate": "return 'success'",
        "filter_scan_list": """
            local response = cmd:create_response('success')
            response:set_network_list(cmd.network_list)
            response:deliver()
            """,
    ])

    static func evaluated(_ fixture: RuntimeFixture) -> Set<String> {
        Set(fixture.events.commands(.evaluate).compactMap(\.helper))
    }

    @Test func aHelperSwitchedOffEverywhereIsNeitherEvaluatedNorAskedToFilter() async throws {
        let fixture = try await RuntimeFixture(scripts: ["first": Self.claiming, "second": Self.claiming])
        try await fixture.runtime.setHelper("first", enabled: false)
        #expect(await fixture.runtime.join(guest) == .authenticated)
        #expect(Self.evaluated(fixture) == ["second"])
        #expect(await fixture.runtime.chosenHelper(of: guest.ssid) == "second")
        let claims = await fixture.runtime.filterScanList([guest])
        #expect(claims.map(\.helper) == ["second"])

        try await fixture.runtime.setHelper("first", enabled: true)
        #expect(await fixture.runtime.filterScanList([guest]).map(\.helper).sorted() == ["first", "second"])
    }

    @Test func aHelperSwitchedOffForOneNetworkIsStillAskedAboutOthers() async throws {
        let fixture = try await RuntimeFixture(scripts: ["first": Self.claiming, "second": Self.claiming])
        try await fixture.runtime.setHelper("first", enabled: false, ssid: guest.ssid)
        #expect(await fixture.runtime.join(guest) == .authenticated)
        #expect(Self.evaluated(fixture) == ["second"])

        let elsewhere = NetworkDescription(ssid: "Elsewhere-Guest")
        #expect(await fixture.runtime.join(elsewhere) == .authenticated)
        #expect(fixture.events.commands(.evaluate).filter { $0.network == elsewhere.ssid }.compactMap(\.helper).sorted()
            == ["first", "second"])
    }

    /// The helper remembered for a network is not used once it is switched off there: the
    /// rejoin evaluates the others instead of maintaining with it.
    @Test func theRememberedHelperIsNotUsedOnceSwitchedOff() async throws {
        let fixture = try await RuntimeFixture(scripts: ["only": Self.claiming, "other": venue("Other", confidence: "low",
                                                                                          handlers: ["authenticate": "return 'success'"])])
        #expect(await fixture.runtime.join(guest) == .authenticated)
        #expect(await fixture.runtime.chosenHelper(of: guest.ssid) == "only")
        await fixture.runtime.leave(guest.ssid)

        try await fixture.runtime.setHelper("only", enabled: false, ssid: guest.ssid)
        let evaluatesBefore = fixture.events.commands(.evaluate).count
        #expect(await fixture.runtime.join(guest) == .authenticated)
        #expect(fixture.events.commands(.maintain).filter { $0.helper == "only" }.isEmpty)
        #expect(fixture.events.commands(.evaluate).dropFirst(evaluatesBefore).compactMap(\.helper) == ["other"])
        #expect(await fixture.runtime.chosenHelper(of: guest.ssid) == "other")
    }
}
