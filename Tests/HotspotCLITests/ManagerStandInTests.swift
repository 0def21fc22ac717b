import Foundation
import Testing
import TestSupport

/// What the daemon makes of a peer that owns a manager's name on the bus but does not answer
/// as the manager does, and of calls to ConnMan's agent it cannot satisfy: a stand-in in
/// Python (dbus-python, which python3-dbusmock brings) on a private bus. No network is joined,
/// so the daemon runs where the test does.
extension PrivateBus {
    /// Why a stand-in for a manager, in Python, cannot run on a private bus here, or nil.
    static let standInUnavailableReason: String? = PrivateBus.unavailableReason
        ?? ((try? TwoNetworks.shell("/usr/bin/python3 -c 'import dbus, dbusmock' 2>/dev/null")) == 0
            ? nil : "needs /usr/bin/python3 with python3-dbusmock (`make test` installs it)")
}

@Suite("Peers that own a manager's name", .serialized,
       .enabled(if: PrivateBus.standInUnavailableReason == nil, "\(PrivateBus.standInUnavailableReason ?? "")"))
struct ManagerStandInTests {
    /// ARGV: the bus, the stand-in's kind. `connman`: an idle ethernet service, and once the
    /// daemon registers as the agent, requests it should refuse, their answers printed;
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
            for method, arguments in [("RequestBrowser", (dbus.ObjectPath("/net/connman/service/unknown"), "http://198.18.0.1/")),
                                      ("RequestInput", (dbus.ObjectPath(WIRED), {"Passphrase": {"Type": "psk", "Requirement": "mandatory"}}))]:
                try:
                    getattr(agent, method)(*arguments, dbus_interface="net.connman.Agent")
                    print(method, "answered", flush=True)
                except dbus.DBusException as error:
                    print(method, "refused:", error.get_dbus_name(), error.get_dbus_message(), flush=True)
            return False

        class ConnMan(dbus.service.Object):
            @dbus.service.method("net.connman.Manager", out_signature="a(oa{sv})")
            def GetServices(self):
                return [(dbus.ObjectPath(WIRED), {"State": "idle", "Name": "Wired", "Type": "ethernet",
                                                  "Ethernet": {"Interface": "standin0"}})]

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
            (ConnMan if kind == "connman" else WrongConnMan)(bus, "/")
        else:
            name = dbus.service.BusName("org.freedesktop.network1", bus)
            Networkd(bus, "/org/freedesktop/network1")
        print("ready", flush=True)
        GLib.MainLoop().run()
        """

    /// The stand-in of `kind` on a bus of the test's own, running, and the daemon following `source` there.
    static func start(_ kind: String, source: String) async throws -> (bus: PrivateBus, standIn: BackgroundProcess, daemon: RunningCLI) {
        let bus = try PrivateBus()
        let script = try CLI.temporaryDirectory() + "/standin.py"
        try standIn.write(toFile: script, atomically: true, encoding: .utf8)
        let standIn = try BackgroundProcess("/usr/bin/python3", [script, bus.address, kind])
        try await eventually("the stand-in owns its name") { standIn.output.contains("ready") }
        let scripts = try CLI.temporaryDirectory()
        try FileManager.default.copyItem(atPath: DaemonTests.bundledScripts + "/click-through.lua", toPath: scripts + "/click-through.lua")
        let daemon = try RunningCLI(["DBUS_SYSTEM_BUS_ADDRESS=\(bus.address)", CLI.path, "run", "--json", "--source", source, "--scripts", scripts,
                                     "--state-dir", try CLI.temporaryDirectory(), "--probe-interval", "0"], executable: "/usr/bin/env")
        return (bus, standIn, daemon)
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
        #expect(!daemon.events.contains { $0["event"] as? String == "state" }, "an idle service is no network")
        try await Self.stop(daemon)
        withExtendedLifetime(bus) {}
    }

    /// Answers of the wrong type, or not JSON, are named in a warning; the daemon goes on.
    @Test(arguments: [
        ("connman-wrong", "connman", "ConnMan answered GetServices with a string, not its services"),
        ("networkd-number", "networkd", "systemd-networkd answered Describe with a signed integer, not a string of JSON"),
        ("networkd-nonsense", "networkd", "systemd-networkd's description of its links is not JSON"),
    ])
    func answersOfTheWrongShapeAreNamedAndSurvived(kind: String, source: String, warning: String) async throws {
        let (bus, standIn, daemon) = try await Self.start(kind, source: source)
        try await daemon.waitForEvent { $0["level"] as? String == "warn" && ($0["message"] as? String)?.hasPrefix(warning) == true }
        try await Self.stop(daemon)
        withExtendedLifetime((bus, standIn)) {}
    }
}
