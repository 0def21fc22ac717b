import HotspotCore
@testable import HotspotRuntime
import LuaSandbox
import Testing

/// A helper that declares its networks keeps no Lua state while idle: its state is built when
/// it is first sent a command, and the least recently used are dropped beyond
/// `keptDeclaredStates`. Counted in the engine's workers (`scriptsLoaded`) and the transport.
@Suite struct LazyHelperStatesTests {
    static let count = 200

    static func declared(_ index: Int, filterScanList: Bool = false) -> String {
        """
        return {
          name = "Venue \(index)",
          hosts = { "portal.example" },
          networks = { ssids = { "Venue-\(index)" } },
          authenticate = function(cmd) return "success" end,
          \(filterScanList ? "filter_scan_list = function(cmd) local r = cmd:create_response('success') "
                + "r:set_network_list({ cmd.network_list[#cmd.network_list] }) r:deliver() end," : "")
        }
        """
    }

    static func helperID(_ index: Int) -> String { "venue-\(index + 10_000)" }

    static func fixture(keeping kept: Int = 16, filterScanList: Bool = false) async throws -> RuntimeFixture {
        var scripts = ["evaluating": venue("Evaluating", confidence: "none")]
        for index in 0..<count { scripts[helperID(index)] = declared(index, filterScanList: filterScanList) }
        var configuration = HotspotRuntime.Configuration(policy: .init(commandDeadline: .seconds(5)))
        configuration.keptDeclaredStates = kept
        return try await RuntimeFixture(scripts: scripts, configuration: configuration)
    }

    static func network(_ index: Int) -> NetworkDescription {
        NetworkDescription(ssid: "Venue-\(index)", bssid: "02:00:00:00:01:01", signalStrength: 0.8)
    }

    @Test func startBuildsNoDeclaredStateAndAJoinBuildsExactlyThatHelpers() async throws {
        let fixture = try await Self.fixture()
        defer { fixture.engine.shutdown() }
        #expect(await fixture.runtime.helpers.count == Self.count + 1)
        #expect(fixture.engine.scriptsLoaded == 1)  // the helper that evaluates
        #expect(fixture.runtime.transport.declaredStatesBuilt == 0)

        #expect(await fixture.runtime.join(Self.network(17)) == .authenticated)
        #expect(fixture.engine.scriptsLoaded == 2)
        #expect(fixture.runtime.transport.declaredStatesBuilt == 1)
        #expect(fixture.events.commands().map { "\($0.helper):\($0.command.rawValue)" } == ["\(Self.helperID(17)):authenticate"])

        // Joined again, the state is still there.
        await fixture.runtime.leave(Self.network(17).ssid)
        #expect(await fixture.runtime.join(Self.network(17)) == .authenticated)
        #expect(fixture.runtime.transport.declaredStatesBuilt == 1)
        #expect(fixture.engine.scriptsLoaded == 2)
    }

    @Test func beyondTheKeptStatesTheLeastRecentlyUsedIsDroppedAndBuiltAgainWhenNeeded() async throws {
        let fixture = try await Self.fixture(keeping: 2)
        defer { fixture.engine.shutdown() }
        for index in [3, 4, 5] {
            #expect(await fixture.runtime.join(Self.network(index)) == .authenticated)
            await fixture.runtime.leave(Self.network(index).ssid)
        }
        #expect(fixture.runtime.transport.declaredStatesBuilt == 3)
        #expect(fixture.engine.scriptsLoaded == 1 + 2)
        #expect(await fixture.runtime.join(Self.network(3)) == .authenticated)
        #expect(fixture.runtime.transport.declaredStatesBuilt == 4)
        #expect(fixture.engine.scriptsLoaded == 1 + 2)
    }

    @Test func aDeclaredHelperIsSentTheScanListOnlyWhenOneOfItsNetworksIsInIt() async throws {
        let fixture = try await Self.fixture(filterScanList: true)
        defer { fixture.engine.shutdown() }
        let elsewhere = NetworkDescription(ssid: "Elsewhere", bssid: "02:00:00:00:02:01")
        #expect(await fixture.runtime.filterScanList([elsewhere]).isEmpty)
        #expect(fixture.runtime.transport.declaredStatesBuilt == 0)

        let claims = await fixture.runtime.filterScanList([elsewhere, Self.network(42)])
        #expect(fixture.runtime.transport.declaredStatesBuilt == 1)
        #expect(claims.map(\.helper) == [Self.helperID(42)])
    }

    /// What a catalog update of one helper among many costs: that helper loaded again, every
    /// other one the same load, and no declared state built.
    @Test func updatingOneHelperLeavesTheOthersStatesAlone() async throws {
        let fixture = try await Self.fixture()
        defer { fixture.engine.shutdown() }
        let catalog = HelperCatalog(path: fixture.scripts, engine: fixture.engine)
        #expect(await catalog.refresh().added.count == Self.count + 1)
        let before = await catalog.helpers
        let loaded = fixture.engine.scriptsLoaded
        let id = Self.helperID(99)
        try (Self.declared(99) + "\n-- version 2\n").write(toFile: "\(fixture.scripts)/\(id).lua", atomically: true, encoding: .utf8)
        #expect(await catalog.refresh() == HelperCatalog.Change(reloaded: [id]))
        let after = await catalog.helpers
        #expect(zip(before, after).filter { $0 != $1 }.map { $0.0.id } == [id])
        #expect(fixture.engine.scriptsLoaded == loaded)
    }
}
