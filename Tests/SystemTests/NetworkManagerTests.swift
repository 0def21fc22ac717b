import Foundation
import Testing
import TestSupport
import TestbedRecipes

/// A real NetworkManager, run as it runs on these machines (no Wi-Fi, no udev): in a
/// network namespace of its own (the client), with a private system bus, managing one end of a
/// veth pair; the other end's namespace (the venue) has dnsmasq for DHCP (option 114 too) and
/// DNS, and the portal simulator at 198.18.0.1:80, which also answers NetworkManager's
/// connectivity check (204 once logged in, a redirect before). NetworkManager uses dhclient,
/// the one DHCP client of its that shows option 114. Everything is stopped by its process id
/// and the namespaces deleted by `tearDown`, or when the testbed is dropped. Setting it up,
/// stopping NetworkManager and tearing down wait for processes: a test does them on a thread
/// of its own (`onOwnThread`), not on one of Swift concurrency's few, which every other test
/// of the process needs meanwhile.
final class NetworkManagerTestbed: @unchecked Sendable {  // set up in init, torn down once by tearDown
    let recipe: NetworkManagerRecipe
    var client: String { recipe.client }
    var venue: String { recipe.venue }
    var interface: String { recipe.interface }
    let directory: String
    let bus: PrivateBus
    private var services: [BackgroundProcess] = []
    private var networkManager: BackgroundProcess?
    private var tornDown = false

    static let unavailableReason: String? = {
        guard getuid() == 0 else { return "a real NetworkManager needs root (network namespaces, mounts); CI runs these tests as root" }
        let tools = ["/usr/sbin/NetworkManager": "network-manager", "/usr/sbin/dnsmasq": "dnsmasq-base", "/sbin/dhclient": "isc-dhcp-client",
                     "/usr/bin/nmcli": "network-manager", "/usr/bin/dbus-daemon": "dbus"]
        for (tool, package) in tools.sorted(by: { $0.key < $1.key }) where !FileManager.default.isExecutableFile(atPath: tool) {
            return "needs \(tool) (Debian's \(package); `make test` installs it)"
        }
        return TwoNetworks.unavailableReason
    }()

    init(portalScenario: String = "click-through") throws {
        directory = try scratchDirectory("networkmanager")
        recipe = NetworkManagerRecipe(prefix: "hn\(getpid() % 100_000)", directory: directory)
        bus = try PrivateBus()
        for folder in recipe.folders {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        }
        try recipe.networkManagerConfiguration(dhcp: "dhclient", connectivityCheck: (uri: "http://198.18.0.1/generate_204", interval: 5))
            .write(toFile: "\(directory)/NetworkManager.conf", atomically: true, encoding: .utf8)
        // What a user puts in NetworkManager's dhclient.conf for option 114 (docs/GETTING-STARTED.md).
        try "also request default-url;\n".write(toFile: "\(directory)/etc/dhclient.conf", atomically: true, encoding: .utf8)
        let profile = "\(directory)/connections/aroma.nmconnection"
        try recipe.profile(named: "Aroma-Guest").write(toFile: profile, atomically: true, encoding: .utf8)
        chmod(profile, 0o600)
        services = try Self.startVenue(recipe, portalScenario: portalScenario)
    }

    /// The namespaces with the veth pair between them, then in the venue's the portal
    /// simulator (first: a connectivity check that finds nothing listening says LIMITED) and
    /// dnsmasq, with option 114; the namespaces are removed again if that fails.
    static func startVenue(_ recipe: NetworkManagerRecipe, portalScenario: String) throws -> [BackgroundProcess] {
        try recipe.dnsmasqConfiguration(leaseTime: "2m", captivePortalAPI: "https://portal.example.test/api/captive")
            .write(toFile: "\(recipe.directory)/dnsmasq.conf", atomically: true, encoding: .utf8)
        guard try shellStatus(recipe.namespacesScript) == 0 else {
            _ = try? shellStatus(recipe.removalScript)
            throw CocoaError(.featureUnsupported, userInfo: [NSLocalizedDescriptionKey: "cannot make the namespaces"])
        }
        do {
            let portal = try BackgroundProcess("/usr/sbin/ip", ["netns", "exec", recipe.venue, CLI.path, "simulate", "--scenario", portalScenario,
                                                                "--host", "198.18.0.1", "--port", "80"])
            try wait("the portal simulator listens") { portal.output.contains("http://198.18.0.1:80/") }
            let dnsmasq = try BackgroundProcess("/usr/sbin/ip", ["netns", "exec", recipe.venue, "/usr/sbin/dnsmasq", "--keep-in-foreground",
                                                                 "--conf-file=\(recipe.directory)/dnsmasq.conf",
                                                                 "--pid-file=\(recipe.directory)/dnsmasq.pid"])
            return [portal, dnsmasq]
        } catch {
            _ = try? shellStatus(recipe.removalScript)
            throw error
        }
    }

    /// Starts NetworkManager in the client namespace (see `NetworkManagerRecipe.networkManagerScript`).
    func startNetworkManager() throws {
        networkManager = try BackgroundProcess("/usr/sbin/ip", ["netns", "exec", client, "/bin/sh", "-c", recipe.networkManagerScript],
                                               environment: ["DBUS_SYSTEM_BUS_ADDRESS=\(bus.address)"])
    }

    /// Stops NetworkManager with SIGTERM, as a service manager does.
    func stopNetworkManager() {
        networkManager?.stop()
        networkManager = nil
    }

    /// `nmcli` on the testbed's bus.
    func nmcli(_ arguments: [String]) async throws -> CLI.Run {
        try await CLI.run(["DBUS_SYSTEM_BUS_ADDRESS=\(bus.address)", "/usr/bin/nmcli"] + arguments, executable: "/usr/bin/env")
    }

    /// `hotspot-helper run --source networkmanager` in the client namespace, on the testbed's bus.
    func daemon(_ arguments: [String]) throws -> RunningCLI {
        try RunningCLI(["DBUS_SYSTEM_BUS_ADDRESS=\(bus.address)", "/usr/sbin/ip", "netns", "exec", client, CLI.path, "run", "--json",
                        "--source", "networkmanager"] + arguments, executable: "/usr/bin/env")
    }

    static func wait(_ what: String, _ condition: () -> Bool) throws {
        guard holdsBlocking(within: .seconds(20), condition) else {
            throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "gave up waiting: \(what)"])
        }
    }

    private func removeNamespaces() {
        _ = try? shellStatus(recipe.removalScript)
    }

    /// Stops everything and deletes the namespaces; once.
    func tearDown() {
        guard !tornDown else { return }
        tornDown = true
        stopNetworkManager()
        services.forEach { $0.stop() }
        services = []
        removeNamespaces()
    }

    deinit { tearDown() }
}

@Suite("run --source networkmanager, with a real NetworkManager", .serialized,
       .enabled(if: NetworkManagerTestbed.unavailableReason == nil, "\(NetworkManagerTestbed.unavailableReason ?? "")"))
struct NetworkManagerTests {
    static func isMessage(_ text: String) -> (EventLine) -> Bool {
        { $0.message?.contains(text) == true }
    }

    /// NetworkManager activates the venue's network: the daemon joins it (the connection's
    /// name for the SSID), evaluates, authenticates and is authenticated, with the network's
    /// Captive Portal API URI from DHCP option 114. Deactivated, it is left; activated again,
    /// joined; NetworkManager stopped and started, the daemon reads it again and the network
    /// stays as it was.
    @Test func followsActivationDeactivationAndARestartOfNetworkManager() async throws {
        let testbed = try await onOwnThread { try NetworkManagerTestbed() }
        let scripts = try CLI.temporaryDirectory()
        try FileManager.default.copyItem(atPath: CLI.bundledScripts + "/click-through.lua", toPath: scripts + "/click-through.lua")
        let daemon = try testbed.daemon(["--scripts", scripts, "--state-dir", try CLI.temporaryDirectory(),
                                         "--probe-url", "http://198.18.0.1/generate_204"])
        try await daemon.waitForEvent(Self.isMessage("NetworkManager is not on the system bus; its devices are followed once it is"))

        try testbed.startNetworkManager()
        try await daemon.waitForEvent(Self.isMessage("NetworkManager is on the system bus: reading its devices"))
        try await daemon.waitForEvent(Self.isMessage("NetworkManager has \(testbed.interface) on Aroma-Guest"))
        try await daemon.waitForEvent(EventLine.isCommand("evaluate"))
        try await daemon.waitForEvent(EventLine.isCommand("authenticate"))
        try await daemon.waitForEvent(EventLine.isState("authenticated"))
        // Option 114 reached the network: the runtime reads the API it names after the login.
        try await daemon.waitForEvent(Self.isMessage("the Captive Portal API at https://portal.example.test/api/captive"))
        // NetworkManager's own check, once it runs again, finds the network open.
        try await daemon.waitForEvent { $0.event == "connectivity" && $0.verdict == "connected" && $0.keys.contains("helper") && $0.helper == nil }

        let down = try await testbed.nmcli(["connection", "down", "Aroma-Guest"])
        #expect(down.status == 0, "\(down.errors)")
        try await daemon.waitForEvent(Self.isMessage("NetworkManager deactivated \(testbed.interface)"))
        try await daemon.waitForEvent(EventLine.isState("inactive"))

        let up = try await testbed.nmcli(["connection", "up", "Aroma-Guest"])
        #expect(up.status == 0, "\(up.errors)")
        try await daemon.waitForEvent(count: 2, EventLine.isState("authenticated"))
        #expect(daemon.events.filter(EventLine.isCommand("maintain")).count == 1, "joined again: the cached helper maintains")

        let statesBefore = daemon.events.filter { $0.event == "state" }.count
        try await onOwnThread { testbed.stopNetworkManager() }
        try await daemon.waitForEvent(Self.isMessage("NetworkManager left the system bus; its networks stay as they were until it is back"))
        try testbed.startNetworkManager()
        try await daemon.waitForEvent(count: 2, Self.isMessage("NetworkManager is on the system bus: reading its devices"))
        try await Task.sleep(for: .seconds(3))  // real time is the point: nothing happens for longer than a device may be missing before its network is left
        #expect(daemon.events.filter { $0.event == "state" }.count == statesBefore,
                "NetworkManager's restart is not a leave and a join: \(daemon.events.suffix(8))")

        // Followed again after the restart: a deactivation is still a leave.
        #expect(try await testbed.nmcli(["connection", "down", "Aroma-Guest"]).status == 0)
        try await daemon.waitForEvent(count: 2, EventLine.isState("inactive"))
        daemon.signal(SIGTERM)
        #expect(try await daemon.waitForExit() == 0)
        try await onOwnThread { testbed.tearDown() }
    }

    /// NetworkManager does not say why it activated a connection: a network it activates after
    /// the daemon's first look is an automatic join, but not one whose profile it never
    /// activates by itself (`autoconnect=no`), which someone asked for.
    @Test func didAutoJoinIsFalseForAProfileNetworkManagerNeverActivatesByItself() async throws {
        let testbed = try await onOwnThread { try NetworkManagerTestbed() }
        let scripts = try CLI.temporaryDirectory()
        try """
        return {
          name = "Watcher",
          hosts = {},
          evaluate = function(cmd)
            print("did_auto_join " .. tostring(cmd.network.did_auto_join))
            return "none"
          end,
        }
        """.write(toFile: scripts + "/watcher.lua", atomically: true, encoding: .utf8)
        let daemon = try testbed.daemon(["--scripts", scripts, "--state-dir", try CLI.temporaryDirectory()])
        try await daemon.waitForEvent(Self.isMessage("NetworkManager is not on the system bus; its devices are followed once it is"))

        // Whatever NetworkManager activated as the daemon first looked is joined first.
        try testbed.startNetworkManager()
        try await daemon.waitForEvent(Self.isMessage("did_auto_join "))
        for (count, autoconnect) in [(2, "yes"), (3, "no")] {  // the count of joins
            #expect(try await testbed.nmcli(["connection", "modify", "Aroma-Guest", "connection.autoconnect", autoconnect]).status == 0)
            #expect(try await testbed.nmcli(["connection", "down", "Aroma-Guest"]).status == 0)
            try await daemon.waitForEvent(count: count - 1, Self.isMessage("NetworkManager deactivated \(testbed.interface)"))
            // The helper evaluates again as the verdicts change: the first evaluate of the new join counts.
            let evaluated = daemon.events.filter(Self.isMessage("did_auto_join ")).count
            let up = try await testbed.nmcli(["connection", "up", "Aroma-Guest"])
            #expect(up.status == 0, "\(up.errors)")
            let join = try await daemon.waitForEvent(count: evaluated + 1, Self.isMessage("did_auto_join "))
            #expect(join.message == (autoconnect == "yes" ? "did_auto_join true" : "did_auto_join false"),
                    "autoconnect=\(autoconnect): \(daemon.standardOutput.suffix(3000))")
        }
        daemon.signal(SIGTERM)
        #expect(try await daemon.waitForExit() == 0)
        try await onOwnThread { testbed.tearDown() }
    }
}
