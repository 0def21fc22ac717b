import Foundation
import Testing
import TestSupport
import TestbedRecipes

/// A real ConnMan (Debian 12's 1.41) in a `ManagerTestbed`, managing the client's end of the
/// veth as ethernet; ConnMan's online check reaches the portal simulator too, whose page
/// (a body) leaves 1.41 `ready`.
extension ManagerTestbed {
    static let connmanUnavailableReason = unavailableReason("ConnMan", tools: ["/usr/sbin/connmand": "connman", "/usr/sbin/ethtool": "ethtool"])
}

@Suite("run --source connman, with a real ConnMan", .serialized,
       .enabled(if: ManagerTestbed.connmanUnavailableReason == nil, "\(ManagerTestbed.connmanUnavailableReason ?? "")"))
struct ConnManTests {
    /// ConnMan brings the ethernet service up: the daemon joins it as "Wired", the helper logs
    /// in through the portal. The daemon is ConnMan's agent, and its agent answers no one
    /// else. The link loses its carrier: left; back: joined again, and the cached helper
    /// maintains.
    @Test func joinsTheEthernetServiceAndLogsInThroughThePortal() async throws {
        let testbed = try await onOwnThread {
            let recipe = ConnManRecipe(prefix: "hc\(getpid() % 100_000)", directory: try scratchDirectory("connman"))
            return try ManagerTestbed(recipe.testbed, folders: recipe.folders, files: recipe.files, managerScript: recipe.connmanScript,
                                      venueScript: recipe.checksumScript)
        }
        let daemon = try testbed.daemon(source: "connman")
        try await daemon.waitForEvent(NetworkManagerTests.isMessage("ConnMan is not on the system bus; its services are followed once it is"))

        try testbed.startManager()
        try await daemon.waitForEvent(NetworkManagerTests.isMessage("ConnMan is on the system bus: reading its services"))
        try await daemon.waitForEvent(NetworkManagerTests.isMessage("ConnMan has \(testbed.interface) on Wired"))
        try await daemon.waitForEvent(EventLine.isCommand("evaluate"))
        try await daemon.waitForEvent(EventLine.isState("authenticated", "Wired"))
        #expect(!daemon.events.contains(where: NetworkManagerTests.isMessage("cannot register as ConnMan's agent")))

        // The agent, called by anyone but ConnMan, refuses.
        let names = try await testbed.busctl(["list", "--json=short"])
        let list = try JSONSerialization.jsonObject(with: Data(names.output.utf8)) as? [[String: Any]] ?? []
        let daemonName = try #require(list.first {
            $0["pid"] as? Int == Int(daemon.process.processIdentifier) && ($0["name"] as? String)?.hasPrefix(":") == true
        }?["name"] as? String)
        let intruder = try await testbed.busctl(["call", daemonName, "/hotspot_helper/connman_agent", "net.connman.Agent", "RequestInput",
                                                 "oa{sv}", "/net/connman/service/x", "0"])
        #expect(intruder.status != 0 && intruder.errors.contains("Access denied"), "\(intruder.errors)")
        // The bus delivers calls to the agent's object: of another interface, the agent does not know the method.
        let other = try await testbed.busctl(["call", daemonName, "/hotspot_helper/connman_agent", "org.example.Other", "Ping"])
        #expect(other.status != 0 && other.errors.contains("Unknown method"), "\(other.errors)")

        #expect(try await onOwnThread { try testbed.setVenueLink(up: false) } == 0)
        try await daemon.waitForEvent(EventLine.isState("inactive", "Wired"))
        #expect(try await onOwnThread { try testbed.setVenueLink(up: true) } == 0)
        try await daemon.waitForEvent(count: 2, timeout: .seconds(40), EventLine.isState("authenticated", "Wired"))
        #expect(daemon.events.filter(EventLine.isCommand("maintain")).count == 1, "joined again: the cached helper maintains")
        daemon.signal(SIGTERM)
        #expect(try await daemon.waitForExit() == 0)
        try await onOwnThread { testbed.tearDown() }
    }
}
