import Foundation
import Locking
import Testing
import TestSupport

/// NetworkManager's Wi-Fi, mocked. The machines these tests run on have no Wi-Fi at all (no
/// nl80211, no mac80211_hwsim), so a real NetworkManager shows no Wi-Fi device, access point or
/// scan; python3-dbusmock's networkmanager template stands in for it on a private bus, with
/// the devices, access points and activations each test makes. It has no AgentManager: the
/// test adds one whose AskAgent asks the registered agent for secrets as NetworkManager would,
/// from NetworkManager's own connection.
final class MockNetworkManager: Sendable {
    let bus: PrivateBus
    private let mock = PlainLock<BackgroundProcess?>(nil)

    static let unavailableReason: String? = {
        if let reason = PrivateBus.unavailableReason { return reason }
        let check = Process()
        check.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        check.arguments = ["-c", "import dbusmock"]
        check.standardError = FileHandle.nullDevice
        guard (try? check.run()) != nil else { return "needs /usr/bin/python3 with python3-dbusmock (`make test` installs it)" }
        check.waitUntilExit()
        return check.terminationStatus == 0 ? nil : "needs python3-dbusmock (`make test` installs it)"
    }()

    static let wifiDevice = "/org/freedesktop/NetworkManager/Devices/wlan0"

    /// The stock template, but for Startup, a parameter here: NetworkManager says it is still
    /// starting until it has activated what it activates at its start. The stock template has
    /// announced the manager (InterfacesAdded, Startup false) by the time Startup is set, so the
    /// change is announced too: a daemon that reads that signal after its GetManagedObjects
    /// would otherwise take the manager for started, as no NetworkManager says.
    private static let template = """
        from dbusmock.templates.networkmanager import *
        from dbusmock.templates import networkmanager as stock

        def load(mock, parameters):
            stock.load(mock, parameters)
            manager = dbusmock.get_object(MANAGER_OBJ)
            starting = dbus.Boolean(parameters.get('Startup', False))
            manager.props[MANAGER_IFACE]['Startup'] = starting
            manager.EmitSignal('org.freedesktop.DBus.Properties', 'PropertiesChanged', 'sa{sv}as',
                               [MANAGER_IFACE, {'Startup': starting}, []])
        """

    init() async throws {
        bus = try PrivateBus()
        try await startMock(starting: false)
    }

    /// The bus stops and starts again, with a NetworkManager of its own that makes the objects
    /// of `setUp` again as it starts.
    func restartBus(setUp: String) async throws {
        bus.stop()
        mock.withLock { $0.take() }?.stop()
        try bus.start()
        try await startMock(starting: true)
        _ = try await python(setUp + """

            mock.SetProperty('/org/freedesktop/NetworkManager', 'org.freedesktop.NetworkManager', 'Startup', dbus.Boolean(False, variant_level=1))
            """)
    }

    private func startMock(starting: Bool) async throws {
        let template = scratchPath("networkmanager-template") + ".py"
        try Self.template.write(toFile: template, atomically: true, encoding: .utf8)
        let started = try BackgroundProcess("/usr/bin/python3", ["-m", "dbusmock", "--system", "--template", template,
                                                                 "--parameters", starting ? #"{"Startup": true}"# : "{}"],
                                            environment: ["DBUS_SYSTEM_BUS_ADDRESS=\(bus.address)"])
        mock.withLock { $0 = started }
        _ = try await python("""
            mock.AddObject('/org/freedesktop/NetworkManager/AgentManager', 'org.freedesktop.NetworkManager.AgentManager', {}, [
                ('Register', 's', '', ''),
                ('AskAgent', 'sssasu', 'a{sa{sv}}',
                 "agent = self.connection.get_object(args[0], '/org/freedesktop/NetworkManager/SecretAgent', introspect=False)\\n"
                 "ret = agent.GetSecrets({'802-11-wireless': {'ssid': dbus.ByteArray(args[1].encode())}, "
                 "'802-11-wireless-security': {'key-mgmt': args[2]}}, '/org/freedesktop/NetworkManager/Settings/1', "
                 "'802-11-wireless-security', args[3], args[4], "
                 "dbus_interface='org.freedesktop.NetworkManager.SecretAgent', signature='a{sa{sv}}osasu')\\n"),
            ])
            """)
    }

    /// Runs Python with `bus` (the private bus), `mock` (the template's org.freedesktop.DBus.Mock
    /// on NetworkManager's object) and `NM` (its bus name) at hand, once the mock is on the
    /// bus; returns what it printed, or throws with what it wrote on error.
    func python(_ code: String) async throws -> String {
        let script = """
            import dbus, time
            bus = dbus.SystemBus()
            NM = 'org.freedesktop.NetworkManager'
            for _ in range(1000):
                if bus.name_has_owner(NM): break
                time.sleep(0.01)  # polls on real time: the mock tells no one it is on the bus
            mock = dbus.Interface(bus.get_object(NM, '/org/freedesktop/NetworkManager'), 'org.freedesktop.DBus.Mock')
            def unique_name_of(pid):
                for name in bus.list_names():
                    if name.startswith(':') and bus.call_blocking('org.freedesktop.DBus', '/org/freedesktop/DBus', 'org.freedesktop.DBus',
                                                                  'GetConnectionUnixProcessID', 's', (name,)) == pid:
                        return name
            \(code)
            """
        let run = try await CLI.run(["DBUS_SYSTEM_BUS_ADDRESS=\(bus.address)", "/usr/bin/python3", "-c", script], executable: "/usr/bin/env")
        guard run.status == 0 else {
            let output = mock.withLock { $0?.output ?? "" }
            throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "python failed: \(run.errors)\nthe mock: \(output)"])
        }
        return run.output
    }

    /// A Wi-Fi device, wlan0, with Cafe-Secure (WPA2, 73 %) and Open-Net (40 %) in range.
    static let wifiWithTwoAccessPoints = """
        device = mock.AddWiFiDevice('wlan0', 'wlan0', 30)
        mock.AddAccessPoint(device, 'cafe', 'Cafe-Secure', '02:00:00:00:00:01', 2, 2412, 54000, 73, 0x100)
        mock.AddAccessPoint(device, 'open', 'Open-Net', '02:00:00:00:00:02', 2, 2437, 54000, 40, 0)
        """

    /// wlan0 activated on Cafe-Secure, as NetworkManager does by itself.
    static let cafeActivated = """
        connection = mock.AddWiFiConnection('\(wifiDevice)', 'cafe', 'Cafe-Secure', 'wpa-psk')
        mock.AddActiveConnection(['\(wifiDevice)'], connection, '/org/freedesktop/NetworkManager/AccessPoint/cafe', 'cafe', 2)
        """

    func addWiFiWithTwoAccessPoints() async throws {
        _ = try await python(Self.wifiWithTwoAccessPoints)
    }

    /// `hotspot-helper` on the mock's bus.
    func hotspotHelper(_ arguments: [String]) throws -> RunningCLI {
        try RunningCLI(["DBUS_SYSTEM_BUS_ADDRESS=\(bus.address)", CLI.path] + arguments, executable: "/usr/bin/env")
    }
}

@Suite("NetworkManager's Wi-Fi (mocked: no Wi-Fi here)",
       .enabled(if: MockNetworkManager.unavailableReason == nil, "\(MockNetworkManager.unavailableReason ?? "")"))
struct NetworkManagerWiFiTests {
    /// Prints what it is given, claims Cafe-Secure with a password, and logs in there.
    static let wifi = """
        return {
          name = "Cafe Wi-Fi",
          hosts = {},
          filter_scan_list = function(cmd)
            local ours = {}
            for _, network in ipairs(cmd.network_list) do
              print("scan " .. network.ssid .. " " .. network.bssid .. " " .. network.signal_strength .. " " .. tostring(network.is_secure))
              if network.ssid == "Cafe-Secure" then
                network:set_confidence("high")
                network:set_password("hunter22")
                ours[#ours + 1] = network
              end
            end
            local response = cmd:create_response("success")
            response:set_network_list(ours)
            response:deliver()
          end,
          evaluate = function(cmd)
            local network = cmd.network
            print("network " .. network.ssid .. " " .. network.bssid .. " " .. network.signal_strength .. " "
                  .. tostring(network.is_secure) .. " " .. tostring(network.did_auto_join))
            return network.ssid == "Cafe-Secure" and "high" or "none"
          end,
          authenticate = function(cmd) return "success" end,
          maintain = function(cmd) return "success" end,
        }
        """

    /// `run --source networkmanager` on the mock's bus, with the script above.
    static func daemon(on nm: MockNetworkManager) throws -> RunningCLI {
        try nm.hotspotHelper(["run", "--json", "--scripts", try CLI.temporaryDirectory(scripts: ["wifi.lua": wifi]),
                              "--source", "networkmanager", "--state-dir", try CLI.temporaryDirectory()])
    }

    static func isPrint(_ text: String) -> (EventLine) -> Bool {
        { $0.level == "print" && $0.message == text }
    }

    @Test func wiFiFactsReachTheHelpersAndTheAgentGivesOnlyTheirPassword() async throws {
        let nm = try await MockNetworkManager()
        try await nm.addWiFiWithTwoAccessPoints()
        let daemon = try Self.daemon(on: nm)
        // The scan list reaches filter_scan_list, and the password claimed goes to the agent.
        try await daemon.waitForEvent(Self.isPrint("scan Cafe-Secure 02:00:00:00:00:01 0.73 true"))
        try await daemon.waitForEvent(Self.isPrint("scan Open-Net 02:00:00:00:00:02 0.4 false"))
        try await daemon.waitForEvent(NetworkManagerTests.isMessage("passwords for networkmanager to join with: Cafe-Secure (from wifi)"))

        // NetworkManager joins Cafe-Secure by itself: SSID, BSSID, strength and security reach cmd.network.
        _ = try await nm.python(MockNetworkManager.cafeActivated)
        try await daemon.waitForEvent(Self.isPrint("network Cafe-Secure 02:00:00:00:00:01 0.73 true true"))
        try await daemon.waitForEvent(EventLine.isState("authenticated", "Cafe-Secure"))

        // NetworkManager finds a portal again: the helper maintains at once.
        _ = try await nm.python("mock.SetConnectivity(2)")
        try await daemon.waitForEvent(NetworkManagerTests.isMessage("Cafe-Secure is captive again: maintaining now"))
        try await daemon.waitForEvent(EventLine.isCommand("maintain"))

        // The agent: NetworkManager gets the helper's pre-shared key for Cafe-Secure, and nothing else.
        let agent = try await nm.python("print(unique_name_of(\(daemon.process.processIdentifier)))").trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(agent.hasPrefix(":"))
        // Each request as NetworkManager makes it, and one from a stranger; one line each.
        let requests: [(ssid: String, keyManagement: String, hints: [String], flags: Int)] = [
            ("Cafe-Secure", "wpa-psk", [], 0), ("Cafe-Secure", "wpa-psk", ["psk"], 0), ("Open-Net", "wpa-psk", [], 0),
            ("Cafe-Secure", "wpa-eap", [], 0), ("Cafe-Secure", "wpa-psk", ["wep-key0"], 0), ("Cafe-Secure", "wpa-psk", [], 2),
        ]
        let answers = try await nm.python("""
            manager = dbus.Interface(bus.get_object(NM, '/org/freedesktop/NetworkManager/AgentManager'), 'org.freedesktop.NetworkManager.AgentManager')
            for ssid, key_management, hints, flags in [\(requests.map { "('\($0.ssid)', '\($0.keyManagement)', \($0.hints), \($0.flags))" }.joined(separator: ", "))]:
                try:
                    print(manager.AskAgent('\(agent)', ssid, key_management, hints, flags)['802-11-wireless-security']['psk'])
                except dbus.exceptions.DBusException as error:
                    print('refused:', error.get_dbus_message().strip().splitlines()[-1])
            agent = bus.get_object('\(agent)', '/org/freedesktop/NetworkManager/SecretAgent', introspect=False)
            try:
                agent.GetSecrets({'802-11-wireless': {'ssid': dbus.ByteArray(b'Cafe-Secure')}, '802-11-wireless-security': {'key-mgmt': 'wpa-psk'}},
                                 '/org/freedesktop/NetworkManager/Settings/1', '802-11-wireless-security', [], 0,
                                 dbus_interface='org.freedesktop.NetworkManager.SecretAgent', signature='a{sa{sv}}osasu')
                print('given to a stranger')
            except dbus.exceptions.DBusException as error:
                print('stranger:', error.get_dbus_name())
            """).split(separator: "\n").map(String.init)
        let expected = [
            "hunter22", "hunter22", "no helper supplied a password for Open-Net",
            "hotspot-helper gives pre-shared keys only (wpa-psk, sae), not wpa-eap", "hotspot-helper gives the psk only, not wep-key0",
            "the password a helper supplied for Cafe-Secure did not work, and there is no other",
            "stranger: org.freedesktop.DBus.Error.AccessDenied",  // anyone but NetworkManager, whatever it asks
        ]
        #expect(answers.count == expected.count, "\(answers)")
        for (answer, wanted) in zip(answers, expected) { #expect(answer.hasSuffix(wanted)) }
        #expect(!daemon.standardOutput.contains("hunter22") && !daemon.standardError.contains("hunter22"), "a password is never logged")
        try await daemon.waitForEvent(NetworkManagerTests.isMessage("gave NetworkManager the password a helper supplied for Cafe-Secure"))

        // Deactivated: left.
        _ = try await nm.python("mock.RemoveActiveConnection('\(MockNetworkManager.wifiDevice)', '/org/freedesktop/NetworkManager/ActiveConnection/cafe')")
        try await daemon.waitForEvent(NetworkManagerTests.isMessage("NetworkManager deactivated wlan0"))
        try await daemon.waitForEvent(EventLine.isState("inactive", "Cafe-Secure"))
        daemon.signal(SIGTERM)
        #expect(try await daemon.waitForExit() == 0)
    }

    /// An SSID with a NUL and a byte that is not UTF-8, values of types NetworkManager never
    /// sends, signals of the wrong shape: each is a clear warning, and the daemon goes on.
    @Test func badInputIsReportedAndTheDaemonGoesOn() async throws {
        let nm = try await MockNetworkManager()
        try await nm.addWiFiWithTwoAccessPoints()
        let daemon = try Self.daemon(on: nm)
        try await daemon.waitForEvent(Self.isPrint("scan Open-Net 02:00:00:00:00:02 0.4 false"))
        let weird = "/org/freedesktop/NetworkManager/AccessPoint/weird"
        _ = try await nm.python("""
            mock.AddObject('\(weird)', 'org.freedesktop.NetworkManager.AccessPoint', {
                'Ssid': dbus.ByteArray(b'Caf\\x00\\xff'), 'HwAddress': dbus.String('02:00:00:00:00:09'), 'Strength': dbus.String('strong'),
                'Flags': dbus.UInt32(0), 'WpaFlags': dbus.UInt32(0), 'RsnFlags': dbus.UInt32(0)}, [])
            device = bus.get_object(NM, '\(MockNetworkManager.wifiDevice)')
            points = device.Get('org.freedesktop.NetworkManager.Device.Wireless', 'AccessPoints', dbus_interface='org.freedesktop.DBus.Properties')
            device.Set('org.freedesktop.NetworkManager.Device.Wireless', 'AccessPoints', dbus.Array(list(points) + [dbus.ObjectPath('\(weird)')], signature='o'),
                       dbus_interface='org.freedesktop.DBus.Properties')
            mock.AddObject('/org/freedesktop/NetworkManager/Devices/odd', 'org.freedesktop.NetworkManager.Device', {
                'Interface': dbus.String('odd0'), 'State': dbus.String('activated')}, [])
            mock.EmitSignal('org.freedesktop.DBus.Properties', 'PropertiesChanged', 'ss', ['nonsense', 'signal'])
            mock.EmitSignal('org.freedesktop.NetworkManager', 'DeviceAdded', 's', ['not a path'])
            mock.AddObject('/org/freedesktop/NetworkManager/ActiveConnection/weird', 'org.freedesktop.NetworkManager.Connection.Active', {
                'Id': dbus.String('weird profile'), 'SpecificObject': dbus.ObjectPath('\(weird)')}, [])
            mock.SetDeviceActive('\(MockNetworkManager.wifiDevice)', '/org/freedesktop/NetworkManager/ActiveConnection/weird')
            """)
        try await daemon.waitForEvent(NetworkManagerTests.isMessage(
            "the SSID of NetworkManager's \(weird) is not plain UTF-8 text; helpers see it written Caf\\x00\\xff"))
        try await daemon.waitForEvent(NetworkManagerTests.isMessage(
            "NetworkManager's \(weird) has a Strength that is a string, not an unsigned integer; it is left out"))
        try await daemon.waitForEvent(NetworkManagerTests.isMessage(
            "NetworkManager's /org/freedesktop/NetworkManager/Devices/odd has a State that is a string, not an unsigned integer; it is left out"))
        // The network is joined under its SSID written with escapes, and helpers see it so.
        try await daemon.waitForEvent(Self.isPrint("network Caf\\x00\\xff 02:00:00:00:00:09 1.0 false true"))
        try await daemon.waitForEvent(EventLine.isState("authenticated", "Caf\\x00\\xff"))
        #expect(daemon.process.isRunning)
        daemon.signal(SIGTERM)
        #expect(try await daemon.waitForExit() == 0)
    }

    /// The bus going away is said; the source connects again once it is back and reads
    /// NetworkManager again, and a network still on is not left.
    @Test func aBusThatGoesAwayIsConnectedToAgainWhenItIsBack() async throws {
        let nm = try await MockNetworkManager()
        try await nm.addWiFiWithTwoAccessPoints()
        _ = try await nm.python(MockNetworkManager.cafeActivated)
        let daemon = try Self.daemon(on: nm)
        try await daemon.waitForEvent(EventLine.isState("authenticated", "Cafe-Secure"))

        try await nm.restartBus(setUp: MockNetworkManager.wifiWithTwoAccessPoints + "\n" + MockNetworkManager.cafeActivated)
        try await daemon.waitForEvent(NetworkManagerTests.isMessage("NetworkManager cannot be followed: the connection to the system bus ended"))
        try await daemon.waitForEvent(NetworkManagerTests.isMessage("the system bus is back"))
        try await Task.sleep(for: .seconds(3))  // real time is the point: nothing happens for longer than a device may be missing before its network is left
        #expect(!daemon.events.contains(where: EventLine.isState("inactive", "Cafe-Secure")), "\(daemon.events.suffix(6))")

        _ = try await nm.python("mock.RemoveActiveConnection('\(MockNetworkManager.wifiDevice)', '/org/freedesktop/NetworkManager/ActiveConnection/cafe')")
        try await daemon.waitForEvent(EventLine.isState("inactive", "Cafe-Secure"))
        daemon.signal(SIGTERM)
        #expect(try await daemon.waitForExit() == 0)
    }

    @Test func networksShowsNetworkManagersScanListWithTheHelpersClaims() async throws {
        let nm = try await MockNetworkManager()
        try await nm.addWiFiWithTwoAccessPoints()
        let scripts = try CLI.temporaryDirectory(scripts: ["wifi.lua": Self.wifi])
        let listing = try nm.hotspotHelper(["networks", "--scripts", scripts, "--source", "networkmanager"])
        #expect(try await listing.waitForExit() == 0, "\(listing.standardError)")
        #expect(listing.standardOutput == """
            SSID         HELPER
            Cafe-Secure  Cafe Wi-Fi (wifi), password supplied
            Open-Net     -

            """)
    }

    @Test func networksSaysSoWhenNetworkManagerIsNotThere() async throws {
        let bus = try PrivateBus()
        let scripts = try CLI.temporaryDirectory(scripts: ["wifi.lua": Self.wifi])
        let listing = try RunningCLI(["DBUS_SYSTEM_BUS_ADDRESS=\(bus.address)", CLI.path, "networks", "--scripts", scripts,
                                      "--source", "networkmanager"], executable: "/usr/bin/env")
        #expect(try await listing.waitForExit(timeout: .seconds(15)) == 1)
        #expect(listing.standardOutput.contains("NetworkManager is not on the system bus; its devices are followed once it is"))
        #expect(listing.standardError.contains("NetworkManager gave no scan list within 5 seconds"))
    }
}
