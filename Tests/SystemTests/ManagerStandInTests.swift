import Foundation
import Testing
import TestSupport
import TestbedRecipes

/// What the daemon makes of a peer that owns a manager's name on the bus but does not answer
/// as the manager does, and of calls to ConnMan's agent it cannot satisfy: a stand-in in
/// Python (dbus-python, which python3-dbusmock brings) on a private bus. No network is joined,
/// so the daemon runs where the test does.
extension PrivateBus {
    /// Why a stand-in for a manager, in Python, cannot run on a private bus here, or nil.
    static let standInUnavailableReason: String? = PrivateBus.unavailableReason
        ?? ((try? shellStatus("/usr/bin/python3 -c 'import dbus, dbusmock' 2>/dev/null")) == 0
            ? nil : "needs /usr/bin/python3 with python3-dbusmock (`make test` installs it)")
}

@Suite("Peers that own a manager's name", .serialized,
       .enabled(if: PrivateBus.standInUnavailableReason == nil, "\(PrivateBus.standInUnavailableReason ?? "")"))
struct ManagerStandInTests {
    /// ARGV: the bus, the stand-in's kind. `connman`: an idle ethernet service, and once the
    /// daemon registers as the agent, requests it should refuse, their answers printed;
    /// `connman-portal`: a ready ethernet service on the interface ARGV[3], and RequestBrowser
    /// for it, its answer printed;
    /// `connman-wrong`: GetServices answers a string; `networkd-number`, `networkd-nonsense`:
    /// Describe answers a number, or text that is not JSON.
    static let standIn = """
        import sys, dbus, dbus.service, dbus.mainloop.glib
        from gi.repository import GLib
        dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
        bus = dbus.bus.BusConnection(sys.argv[1])
        kind = sys.argv[2]
        WIRED = "/net/connman/service/ethernet_cable"

        def ask(sender, path):
            agent = bus.get_object(sender, path)
            requests = [("RequestBrowser", (dbus.ObjectPath(WIRED), "http://198.18.0.1/"))] if kind == "connman-portal" else [
                ("RequestBrowser", (dbus.ObjectPath("/net/connman/service/unknown"), "http://198.18.0.1/")),
                ("RequestInput", (dbus.ObjectPath(WIRED), {"Passphrase": {"Type": "psk", "Requirement": "mandatory"}}))]
            for method, arguments in requests:
                try:
                    getattr(agent, method)(*arguments, dbus_interface="net.connman.Agent", timeout=60)
                    print(method, "answered", flush=True)
                except dbus.DBusException as error:
                    print(method, "refused:", error.get_dbus_name(), error.get_dbus_message(), flush=True)
            return False

        class ConnMan(dbus.service.Object):
            @dbus.service.method("net.connman.Manager", out_signature="a(oa{sv})")
            def GetServices(self):
                ready = kind == "connman-portal"
                return [(dbus.ObjectPath(WIRED), {"State": "ready" if ready else "idle", "Name": "Wired", "Type": "ethernet",
                                                  "Ethernet": {"Interface": sys.argv[3] if ready else "standin0"},
                                                  "Nameservers": dbus.Array(["198.18.0.1"] if ready else [], signature="s")})]

            @dbus.service.method("net.connman.Manager", in_signature="o", sender_keyword="sender")
            def RegisterAgent(self, path, sender):
                GLib.idle_add(ask, sender, path)

        class WrongConnMan(dbus.service.Object):
            @dbus.service.method("net.connman.Manager", out_signature="s")
            def GetServices(self):
                return "nonsense"

        class Networkd(dbus.service.Object):
            @dbus.service.method("org.freedesktop.network1.Manager", out_signature="i" if kind == "networkd-number" else "s")
            def Describe(self):
                return 7 if kind == "networkd-number" else '{"Interfaces": ['

        if kind.startswith("connman"):
            name = dbus.service.BusName("net.connman", bus)
            (WrongConnMan if kind == "connman-wrong" else ConnMan)(bus, "/")
        else:
            name = dbus.service.BusName("org.freedesktop.network1", bus)
            Networkd(bus, "/org/freedesktop/network1")
        print("ready", flush=True)
        GLib.MainLoop().run()
        """

    /// The stand-in of `kind` on a bus of the test's own, running, and the daemon following
    /// `source` there; in the namespace `namespace`, when the daemon joins a network.
    static func start(_ kind: String, source: String, in namespace: (name: String, interface: String)? = nil) async throws
        -> (bus: PrivateBus, standIn: BackgroundProcess, daemon: RunningCLI) {
        let bus = try PrivateBus()
        let script = try CLI.temporaryDirectory() + "/standin.py"
        try standIn.write(toFile: script, atomically: true, encoding: .utf8)
        let standIn = try BackgroundProcess("/usr/bin/python3", [script, bus.address, kind] + (namespace.map { [$0.interface] } ?? []))
        try await eventually("the stand-in owns its name") { standIn.output.contains("ready") }
        return (bus, standIn, try daemon(source: source, on: bus, in: namespace?.name))
    }

    /// `hotspot-helper run --source SOURCE` on `bus` with the click-through helper, in `namespace` if any.
    static func daemon(source: String, on bus: PrivateBus, in namespace: String?) throws -> RunningCLI {
        let scripts = try CLI.temporaryDirectory()
        try FileManager.default.copyItem(atPath: CLI.bundledScripts + "/click-through.lua", toPath: scripts + "/click-through.lua")
        // In a namespace, the helper's success is checked at the venue's portal.
        let inNamespace = namespace.map { ["/usr/sbin/ip", "netns", "exec", $0] } ?? []
        let probes = namespace == nil ? [] : ["--probe-url", "http://198.18.0.1/generate_204"]
        return try RunningCLI(["DBUS_SYSTEM_BUS_ADDRESS=\(bus.address)"] + inNamespace + [CLI.path, "run", "--json", "--source", source,
                               "--scripts", scripts, "--state-dir", try CLI.temporaryDirectory(), "--probe-interval", "0"] + probes,
                              executable: "/usr/bin/env")
    }

    static func stop(_ daemon: RunningCLI) async throws {
        daemon.signal(SIGTERM)
        #expect(try await daemon.waitForExit() == 0, "no crash: \(daemon.standardError)")
    }

    /// The agent refuses a browser for a service ConnMan did not list, and a passphrase no
    /// helper supplied, each with ConnMan's Canceled error; nothing is joined.
    @Test func theConnManAgentRefusesWhatNoHelperClaimed() async throws {
        let (bus, standIn, daemon) = try await Self.start("connman", source: "connman")
        try await eventually("the stand-in has both answers") { standIn.output.components(separatedBy: "Request").count == 3 }
        #expect(standIn.output.contains(
            "RequestBrowser refused: net.connman.Agent.Error.Canceled hotspot-helper knows no service /net/connman/service/unknown"), "\(standIn.output)")
        #expect(standIn.output.contains("RequestInput refused: net.connman.Agent.Error.Canceled no helper supplied a password for Wired"),
                "\(standIn.output)")
        try await daemon.waitForEvent(NetworkManagerTests.isMessage("ConnMan asked for a browser for /net/connman/service/unknown, which it did not list: refused"))
        #expect(!daemon.events.contains { $0.event == "state" }, "an idle service is no network")
        try await Self.stop(daemon)
        withExtendedLifetime(bus) {}
    }

    /// ConnMan's RequestBrowser for a service it has ready is a portal for the helpers: the
    /// call is answered only once the helper logged in (through the portal simulator, in the
    /// NetworkManager testbed's namespaces, the client's end addressed by hand).
    @Test(.enabled(if: TwoNetworks.unavailableReason == nil, "\(TwoNetworks.unavailableReason ?? "")"))
    func connMansPortalRequestIsAnsweredOnceAHelperLoggedIn() async throws {
        let (recipe, venue) = try await Self.venue("hs")
        let (bus, standIn, daemon) = try await Self.start("connman-portal", source: "connman", in: (recipe.client, recipe.interface))
        try await daemon.waitForEvent(NetworkManagerTests.isMessage("ConnMan found a portal on Wired (http://198.18.0.1/)"))
        try await daemon.waitForEvent(EventLine.isState("authenticated", "Wired"))
        try await eventually("ConnMan is answered") { standIn.output.contains("RequestBrowser") }
        #expect(standIn.output.contains("RequestBrowser answered"), "\(standIn.output)")
        try await daemon.waitForEvent(NetworkManagerTests.isMessage("answered ConnMan's portal request for Wired: logged in"))
        try await Self.stop(daemon)
        withExtendedLifetime((bus, standIn)) {}
        try await Self.remove(recipe, venue)
    }

    /// ConnMan leaving the bus while the helpers log in (its portal request still kept): a
    /// note, the network kept and logged in, no crash.
    @Test(.enabled(if: TwoNetworks.unavailableReason == nil, "\(TwoNetworks.unavailableReason ?? "")"))
    func connManVanishingMidJoinKeepsTheNetwork() async throws {
        let (recipe, venue) = try await Self.venue("hv")
        let (bus, standIn, daemon) = try await Self.start("connman-portal", source: "connman", in: (recipe.client, recipe.interface))
        try await daemon.waitForEvent(NetworkManagerTests.isMessage("ConnMan found a portal on Wired"))
        try await onOwnThread { standIn.stop() }
        try await daemon.waitForEvent(NetworkManagerTests.isMessage("ConnMan left the system bus; its networks stay as they were until it is back"))
        try await daemon.waitForEvent(EventLine.isState("authenticated", "Wired"))
        #expect(!daemon.events.contains(where: EventLine.isState("inactive", "Wired")), "not left")
        try await Self.stop(daemon)
        withExtendedLifetime(bus) {}
        try await Self.remove(recipe, venue)
    }

    /// `--source auto` with no manager on the bus follows the interfaces that are up, each a
    /// network of its name, and says so.
    @Test(.enabled(if: TwoNetworks.unavailableReason == nil, "\(TwoNetworks.unavailableReason ?? "")"))
    func autoWithoutAManagerFollowsTheInterfacesThatAreUp() async throws {
        let (recipe, venue) = try await Self.venue("ha")
        let (bus, standIn, daemon) = try await Self.start("networkd-number", source: "auto", in: (recipe.client, recipe.interface))
        // The stand-in owns networkd's name: auto follows it. Gone, auto finds no manager.
        try await daemon.waitForEvent(NetworkManagerTests.isMessage("--source auto follows networkd"))
        try await Self.stop(daemon)
        try await onOwnThread { standIn.stop() }
        let alone = try Self.daemon(source: "auto", on: bus, in: recipe.client)
        try await alone.waitForEvent(NetworkManagerTests.isMessage(
            "--source auto follows the interfaces that are up, each as a network of its name (\(recipe.interface)): no network manager is on the system bus"))
        try await alone.waitForEvent(EventLine.isState("authenticated", recipe.interface))
        try await Self.stop(alone)
        try await Self.remove(recipe, venue)
    }

    /// The NetworkManager testbed's namespaces with the venue running, the client's end
    /// addressed by hand (no manager configures it).
    static func venue(_ prefix: String) async throws -> (NetworkManagerRecipe, [BackgroundProcess]) {
        let recipe = NetworkManagerRecipe(prefix: "\(prefix)\(getpid() % 100_000)", directory: try scratchDirectory("standin"))
        let (venue, addressed) = try await onOwnThread { () throws -> ([BackgroundProcess], Int32) in
            let services = try NetworkManagerTestbed.startVenue(recipe, portalScenario: "click-through")
            return (services, try shellStatus("ip -n \(recipe.client) addr add 198.18.0.50/24 dev \(recipe.interface)"))
        }
        #expect(addressed == 0)
        return (recipe, venue)
    }

    static func remove(_ recipe: NetworkManagerRecipe, _ venue: [BackgroundProcess]) async throws {
        try await onOwnThread {
            venue.forEach { $0.stop() }
            _ = try shellStatus(recipe.removalScript)
        }
    }

    /// Answers of the wrong type, or not JSON, are named in a warning; the daemon goes on.
    @Test(arguments: [
        ("connman-wrong", "connman", "ConnMan answered GetServices with a string, not its services"),
        ("networkd-number", "networkd", "systemd-networkd answered Describe with a signed integer, not a string of JSON"),
        ("networkd-nonsense", "networkd", "systemd-networkd's description of its links is not JSON"),
    ])
    func answersOfTheWrongShapeAreNamedAndSurvived(kind: String, source: String, warning: String) async throws {
        let (bus, standIn, daemon) = try await Self.start(kind, source: source)
        try await daemon.waitForEvent { $0.level == "warn" && $0.message?.hasPrefix(warning) == true }
        try await Self.stop(daemon)
        withExtendedLifetime((bus, standIn)) {}
    }
}
