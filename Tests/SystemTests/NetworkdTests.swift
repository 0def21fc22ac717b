import Foundation
import Testing
import TestSupport
import TestbedRecipes

/// A real systemd-networkd, run as it runs on these machines (systemd is not PID 1, no udev),
/// in a `ManagerTestbed`: the client's end of the veth configured by Aroma-Guest.network.
extension ManagerTestbed {
    static let networkdUnavailableReason: String? = {
        if getpwnam("systemd-network") == nil { return "needs the systemd-network user (Debian's systemd package makes it)" }
        return unavailableReason("systemd-networkd", tools: ["/lib/systemd/systemd-networkd": "systemd"])
    }()
}

@Suite("run --source networkd, with a real systemd-networkd", .serialized,
       .enabled(if: ManagerTestbed.networkdUnavailableReason == nil, "\(ManagerTestbed.networkdUnavailableReason ?? "")"))
struct NetworkdTests {
    static func testbed() async throws -> ManagerTestbed {
        try await onOwnThread {
            let recipe = NetworkdRecipe(prefix: "hd\(getpid() % 100_000)", directory: try scratchDirectory("networkd"), networkName: "Aroma-Guest")
            return try ManagerTestbed(recipe.testbed, folders: [recipe.networkDirectory], files: [recipe.networkFile],
                                      managerScript: recipe.networkdScript)
        }
    }

    /// networkd brings the link up with a DHCP lease: the daemon joins it (the .network file's
    /// name for the SSID, with networkd's name server) and the helper logs in through the
    /// portal. The link loses its carrier: the network is left; it comes back: joined again,
    /// and the cached helper maintains. networkd stopped and started: no leave, no join.
    @Test func joinsTheLinkNetworkdBringsUpAndLeavesItWhenItGoesDown() async throws {
        let testbed = try await Self.testbed()
        let daemon = try testbed.daemon(source: "networkd")
        try await daemon.waitForEvent(NetworkManagerTests.isMessage("systemd-networkd is not on the system bus; its links are followed once it is"))

        try testbed.startManager()
        try await daemon.waitForEvent(NetworkManagerTests.isMessage("systemd-networkd is on the system bus: reading its links"))
        try await daemon.waitForEvent(NetworkManagerTests.isMessage("systemd-networkd has \(testbed.interface) on Aroma-Guest"))
        try await daemon.waitForEvent(EventLine.isCommand("evaluate"))
        try await daemon.waitForEvent(EventLine.isCommand("authenticate"))
        try await daemon.waitForEvent(EventLine.isState("authenticated"))

        #expect(try await onOwnThread { try testbed.setVenueLink(up: false) } == 0)
        try await daemon.waitForEvent(NetworkManagerTests.isMessage("systemd-networkd deactivated \(testbed.interface)"))
        try await daemon.waitForEvent(EventLine.isState("inactive"))
        #expect(try await onOwnThread { try testbed.setVenueLink(up: true) } == 0)
        try await daemon.waitForEvent(count: 2, EventLine.isState("authenticated"))
        #expect(daemon.events.filter(EventLine.isCommand("maintain")).count == 1, "joined again: the cached helper maintains")

        let statesBefore = daemon.events.filter { $0.event == "state" }.count
        try await onOwnThread { testbed.stopManager() }
        try await daemon.waitForEvent(NetworkManagerTests.isMessage("systemd-networkd left the system bus; its networks stay as they were until it is back"))
        try await onOwnThread { try testbed.startManager() }
        try await daemon.waitForEvent(count: 2, NetworkManagerTests.isMessage("systemd-networkd is on the system bus: reading its links"))
        try await Task.sleep(for: .seconds(3))  // real time is the point: nothing happens for longer than a link may be missing before its network is left
        #expect(daemon.events.filter { $0.event == "state" }.count == statesBefore,
                "networkd's restart is not a leave and a join: \(daemon.events.suffix(8))")
        daemon.signal(SIGTERM)
        #expect(try await daemon.waitForExit() == 0)
        try await onOwnThread { testbed.tearDown() }
    }

    /// With systemd-networkd on the bus, `--source auto` follows it and says so; the network
    /// is joined as with `--source networkd`.
    @Test func autoFollowsNetworkdWhenItIsOnTheBus() async throws {
        let testbed = try await Self.testbed()
        try await onOwnThread { try testbed.startManager() }
        // networkd takes its name on the bus a moment after it starts.
        try await eventually("systemd-networkd is on the bus") { try await testbed.busctl(["status", "org.freedesktop.network1"]).status == 0 }
        let daemon = try testbed.daemon(source: "auto")
        try await daemon.waitForEvent(NetworkManagerTests.isMessage(
            "--source auto follows networkd: org.freedesktop.network1 has an owner on the system bus"))
        try await daemon.waitForEvent(EventLine.isState("authenticated"))
        daemon.signal(SIGTERM)
        #expect(try await daemon.waitForExit() == 0)
        try await onOwnThread { testbed.tearDown() }
    }
}
