import HotspotCore
import Testing
@testable import DBusClient
@testable import NetworkSources

/// NetworkManager's objects as the source mirrors them, what it makes of them, and what it
/// tells the daemon: without a bus, from objects written here as NetworkManager sends them.
@Suite("NetworkManager's objects")
struct NetworkManagerModelTests {
    /// What `report` tells the daemon next (a mutating call, which `#expect` cannot make itself).
    static func next(_ report: inout ManagerReport, _ objects: NetworkManagerObjects) -> [NetworkSourceEvent] {
        report.events(toward: ManagerView(objects))
    }

    /// `a{sa{sv}}`: interfaces and their properties.
    static func interfaces(_ entries: [String: [String: BusValue]]) -> BusValue {
        .dictionary(entries.sorted { $0.key < $1.key }.map { interface, properties in
            (interface, .dictionary(properties.sorted { $0.key < $1.key }.map { ($0.key, .variant($0.value)) }, valueSignature: "v"))
        }, valueSignature: "a{sv}")
    }

    static func bytes(_ bytes: [UInt8]) -> BusValue { .array(elementSignature: "y", bytes.map(BusValue.byte)) }
    static func paths(_ paths: [String]) -> BusValue { .array(elementSignature: "o", paths.map(BusValue.objectPath)) }

    static let device = "/org/freedesktop/NetworkManager/Devices/3"
    static let active = "/org/freedesktop/NetworkManager/ActiveConnection/7"
    static let cafe = "/org/freedesktop/NetworkManager/AccessPoint/1"
    static let open = "/org/freedesktop/NetworkManager/AccessPoint/2"

    /// A Wi-Fi device activated on Cafe-Guest (secure, 73 %), with Open-Net in range too, a
    /// name server, option 114 from dhclient, and NetworkManager seeing a portal.
    static func wifi(state: UInt32 = 100) -> NetworkManagerObjects {
        var objects = NetworkManagerObjects()
        objects.add(NetworkManagerAPI.managerPath, interfaces: interfaces([
            NetworkManagerAPI.manager: ["Connectivity": .uint32(4), "Startup": .boolean(false)],
        ]))
        objects.add(device, interfaces: interfaces([
            NetworkManagerAPI.device: [
                "Interface": .string("wlan0"), "IpInterface": .string("wlan0"), "State": .uint32(state),
                "ActiveConnection": .objectPath(active), "Ip4Config": .objectPath("/org/freedesktop/NetworkManager/IP4Config/2"),
                "Dhcp4Config": .objectPath("/org/freedesktop/NetworkManager/DHCP4Config/2"), "Ip4Connectivity": .uint32(2),
            ],
            NetworkManagerAPI.wireless: ["AccessPoints": paths([cafe, open]), "LastScan": .int64(1000)],
        ]))
        objects.add(cafe, interfaces: interfaces([NetworkManagerAPI.accessPoint: [
            "Ssid": bytes(Array("Cafe-Guest".utf8)), "HwAddress": .string("02:00:00:00:00:01"), "Strength": .byte(73),
            "Flags": .uint32(1), "WpaFlags": .uint32(0), "RsnFlags": .uint32(0x188),
        ]]))
        objects.add(open, interfaces: interfaces([NetworkManagerAPI.accessPoint: [
            "Ssid": bytes(Array("Open-Net".utf8)), "HwAddress": .string("02:00:00:00:00:02"), "Strength": .byte(40),
            "Flags": .uint32(0), "WpaFlags": .uint32(0), "RsnFlags": .uint32(0),
        ]]))
        objects.add(active, interfaces: interfaces([NetworkManagerAPI.activeConnection: [
            "Id": .string("Cafe profile"), "SpecificObject": .objectPath(cafe),
        ]]))
        objects.add("/org/freedesktop/NetworkManager/IP4Config/2", interfaces: interfaces([NetworkManagerAPI.ip4Config: [
            "NameserverData": .array(elementSignature: "a{sv}", [.dictionary([("address", .variant(.string("198.18.0.53")))], valueSignature: "v")]),
        ]]))
        objects.add("/org/freedesktop/NetworkManager/DHCP4Config/2", interfaces: interfaces([NetworkManagerAPI.dhcp4Config: [
            "Options": .dictionary([("default_url", .variant(.string("https://api.cafe.example/capport"))),
                                    ("ip_address", .variant(.string("198.18.0.7")))], valueSignature: "v"),
        ]]))
        return objects
    }

    static let cafeNetwork = NetworkDescription(
        ssid: "Cafe-Guest", bssid: "02:00:00:00:00:01", signalStrength: 0.73, isSecure: true, interface: "wlan0",
        resolvers: ["198.18.0.53"], captivePortalAPI: "https://api.cafe.example/capport", captivePortalAPIIsFromLink: true)

    @Test func aWiFiDeviceIsOnItsAccessPointsNetworkAndListsTheOthers() {
        let view = ManagerView(Self.wifi())
        #expect(view.devices == ["wlan0": .activated(Self.cafeNetwork, .captive)])
        #expect(view.scanList.map(\.ssid) == ["Cafe-Guest", "Open-Net"])
        #expect(view.scanList.last == NetworkDescription(ssid: "Open-Net", bssid: "02:00:00:00:00:02", signalStrength: 0.4, interface: "wlan0"))
        #expect(view.problems.isEmpty)
        #expect(ManagerView(Self.wifi(), only: "wlan1").devices.isEmpty, "another device only")
    }

    /// IP6Config's name servers (from DHCPv6 or a router advertisement's RDNSS) follow
    /// IP4Config's; one given by both is used once, and an entry that is no IPv6 address is left out.
    @Test func theIPv6NameServersFollowTheIPv4Ones() {
        var objects = Self.wifi()
        let config = "/org/freedesktop/NetworkManager/IP6Config/2"
        objects.change(Self.device, interface: NetworkManagerAPI.device, .dictionary([("Ip6Config", .variant(.objectPath(config)))], valueSignature: "v"))
        let server: [UInt8] = [0x20, 0x01, 0x0d, 0xb8, 0, 0x38, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x53]
        objects.add(config, interfaces: Self.interfaces([NetworkManagerAPI.ip6Config: [
            "Nameservers": .array(elementSignature: "ay", [Self.bytes(server), Self.bytes([1, 2, 3]), Self.bytes(server)]),
        ]]))
        guard case .activated(let network, _)? = ManagerView(objects).devices["wlan0"] else {
            Issue.record("wlan0 is not activated")
            return
        }
        #expect(network.resolvers == ["198.18.0.53", "2001:db8:38::53"])
    }

    @Test func anyOtherDeviceIsOnItsConnectionsNameWithTheManagersConnectivity() {
        var objects = NetworkManagerObjects()
        objects.add(NetworkManagerAPI.managerPath, interfaces: Self.interfaces([NetworkManagerAPI.manager: ["Connectivity": .uint32(4)]]))
        objects.add(Self.device, interfaces: Self.interfaces([NetworkManagerAPI.device: [
            "Interface": .string("eth0"), "IpInterface": .string(""), "State": .uint32(100), "ActiveConnection": .objectPath(Self.active),
        ]]))
        objects.add(Self.active, interfaces: Self.interfaces([NetworkManagerAPI.activeConnection: [
            "Id": .string("Hotel Lobby"), "SpecificObject": .objectPath("/"),
        ]]))
        #expect(ManagerView(objects).devices == ["eth0": .activated(NetworkDescription(ssid: "Hotel Lobby", interface: "eth0"), .connected)])
    }

    /// Seen with a real NetworkManager (make test-wifi): the access point stopped, the device
    /// stays activated with its access point gone until wpa_supplicant gives up. It keeps its
    /// network meanwhile, rather than leaving it for one named after the connection.
    @Test func aWiFiDeviceWhoseAccessPointWentKeepsItsNetwork() {
        var report = ManagerReport(manager: "NetworkManager")
        _ = Self.next(&report, Self.wifi())
        var objects = Self.wifi()
        objects.removeObject(Self.cafe)
        objects.change(Self.device, interface: NetworkManagerAPI.wireless, .dictionary([("AccessPoints", .variant(Self.paths([Self.open])))], valueSignature: "v"))
        #expect(ManagerView(objects).devices == ["wlan0": .activating])
        #expect(!Self.next(&report, objects).contains { if case .left = $0 { true } else if case .joined = $0 { true } else { false } })
        // NetworkManager 1.42 then says the connection is on no access point at all.
        objects.change(Self.active, interface: NetworkManagerAPI.activeConnection, .dictionary([("SpecificObject", .variant(.objectPath("/")))], valueSignature: "v"))
        #expect(ManagerView(objects).devices == ["wlan0": .activating])
        objects.change(Self.device, interface: NetworkManagerAPI.device, .dictionary([("State", .variant(.uint32(30)))], valueSignature: "v"))
        #expect(Self.next(&report, objects).contains { if case .left(let network, _) = $0 { network.ssid == "Cafe-Guest" } else { false } },
                "deactivated in the end: left")
    }

    /// NetworkManager 1.42 lists the loopback device and activates it as the connection "lo":
    /// no helper should ever evaluate it.
    @Test func theLoopbackDeviceIsNoNetwork() {
        var objects = NetworkManagerObjects()
        objects.add(NetworkManagerAPI.managerPath, interfaces: Self.interfaces([NetworkManagerAPI.manager: ["Connectivity": .uint32(4)]]))
        for (path, name, type, loopbackInterface) in [(Self.device, "lo", UInt32(32), true), ("/org/freedesktop/NetworkManager/Devices/9", "lo2", 32, false)] {
            var interfaces: [String: [String: BusValue]] = [NetworkManagerAPI.device: [
                "Interface": .string(name), "IpInterface": .string(name), "DeviceType": .uint32(type), "State": .uint32(100),
                "ActiveConnection": .objectPath(Self.active),
            ]]
            if loopbackInterface { interfaces[NetworkManagerAPI.loopback] = [:] }
            objects.add(path, interfaces: Self.interfaces(interfaces))
        }
        objects.add(Self.active, interfaces: Self.interfaces([NetworkManagerAPI.activeConnection: ["Id": .string("lo")]]))
        #expect(ManagerView(objects).devices.isEmpty, "by its interface and by its type alike")
        var report = ManagerReport(manager: "NetworkManager")
        #expect(Self.next(&report, objects) == [.scanList([])])
    }

    @Test func theDaemonIsToldOfJoinsLeavesChangesConnectivityAndTheScanList() {
        var report = ManagerReport(manager: "NetworkManager")
        var objects = Self.wifi()
        #expect(Self.next(&report, objects) == [
            .joined(Self.cafeNetwork, reason: "NetworkManager has wlan0 on Cafe-Guest"),
            .connectivity(ssid: "Cafe-Guest", .captive),
            .scanList(ManagerView(objects).scanList),
        ], "what is activated when the source starts is the operator's join (did_auto_join false)")
        #expect(Self.next(&report, objects).isEmpty, "nothing new")

        objects.change(Self.cafe, interface: NetworkManagerAPI.accessPoint, .dictionary([("Strength", .variant(.byte(60)))], valueSignature: "v"))
        let weaker = report.events(toward: ManagerView(objects))
        #expect(weaker.count == 1, "a strength is no change of the joined network: \(weaker)")
        guard case .scanList(let list)? = weaker.first else { Issue.record("no scan list in \(weaker)"); return }
        #expect(list.first?.signalStrength == 0.6)

        objects.change(Self.device, interface: NetworkManagerAPI.device, .dictionary([("Ip4Connectivity", .variant(.uint32(4)))], valueSignature: "v"))
        #expect(Self.next(&report, objects) == [.connectivity(ssid: "Cafe-Guest", .connected)])

        objects.change("/org/freedesktop/NetworkManager/DHCP4Config/2", interface: NetworkManagerAPI.dhcp4Config,
                       .dictionary([("Options", .variant(.dictionary([], valueSignature: "v")))], valueSignature: "v"))
        var withoutAPI = Self.cafeNetwork
        withoutAPI.signalStrength = 0.6
        withoutAPI.captivePortalAPI = nil
        withoutAPI.captivePortalAPIIsFromLink = false
        #expect(Self.next(&report, objects) == [.changed(withoutAPI)], "option 114 is read live")

        for state: UInt32 in [50, 70] {  // on its way again: the network is not left
            objects.change(Self.device, interface: NetworkManagerAPI.device, .dictionary([("State", .variant(.uint32(state)))], valueSignature: "v"))
            #expect(Self.next(&report, objects).isEmpty)
        }
        objects.change(Self.device, interface: NetworkManagerAPI.device, .dictionary([("State", .variant(.uint32(110)))], valueSignature: "v"))
        #expect(Self.next(&report, objects) == [.left(withoutAPI, reason: "NetworkManager deactivated wlan0")])

        objects.change(Self.device, interface: NetworkManagerAPI.device, .dictionary([("State", .variant(.uint32(100)))], valueSignature: "v"))
        var again = withoutAPI
        again.didAutoJoin = true
        #expect(Self.next(&report, objects) == [
            .joined(again, reason: "NetworkManager has wlan0 on Cafe-Guest"), .connectivity(ssid: "Cafe-Guest", .connected),
        ], "activated later: NetworkManager joined it by itself")
    }

    @Test func aProfileNetworkManagerNeverActivatesByItselfWasJoinedOnRequest() {
        let profile = "/org/freedesktop/NetworkManager/Settings/4"
        #expect(NetworkManagerObjects.autoconnect(inSettings: Self.interfaces(["connection": ["autoconnect": .boolean(false)]])) == false)
        #expect(NetworkManagerObjects.autoconnect(inSettings: Self.interfaces(["connection": ["id": .string("cafe")]])) == true,
                "autoconnect is true where it is not set")
        #expect(NetworkManagerObjects.autoconnect(inSettings: .string("nonsense")) == nil)

        var report = ManagerReport(manager: "NetworkManager")
        var objects = Self.wifi(state: 30)
        _ = Self.next(&report, objects)
        objects.change(Self.active, interface: NetworkManagerAPI.activeConnection,
                       .dictionary([("Connection", .variant(.objectPath(profile)))], valueSignature: "v"))
        #expect(objects.profilesToRead == [profile], "the profile of an active connection is to be read")
        objects.autoconnects[profile] = false
        #expect(objects.profilesToRead.isEmpty)
        objects.change(Self.device, interface: NetworkManagerAPI.device, .dictionary([("State", .variant(.uint32(100)))], valueSignature: "v"))
        guard case .joined(let network, _)? = Self.next(&report, objects).first else { Issue.record("not joined"); return }
        #expect(!network.didAutoJoin, "a profile with autoconnect=no was activated at someone's request")

        objects.change(Self.device, interface: NetworkManagerAPI.device, .dictionary([("State", .variant(.uint32(30)))], valueSignature: "v"))
        _ = Self.next(&report, objects)
        objects.autoconnects[profile] = true
        objects.change(Self.device, interface: NetworkManagerAPI.device, .dictionary([("State", .variant(.uint32(100)))], valueSignature: "v"))
        guard case .joined(let again, _)? = Self.next(&report, objects).first else { Issue.record("not joined again"); return }
        #expect(again.didAutoJoin, "one NetworkManager may activate by itself, after the first look, counts as automatic")
    }

    @Test func aDeviceGoneIsLeftOnlyIfNetworkManagerStaysAndNotWhileItStarts() {
        var report = ManagerReport(manager: "NetworkManager")
        let start = ContinuousClock.now
        _ = report.events(toward: ManagerView(Self.wifi()), at: start)
        var gone = Self.wifi()
        gone.removeObject(Self.device)
        let justGone = report.events(toward: ManagerView(gone), at: start)
        #expect(justGone == [.scanList([])], "NetworkManager drops its devices as it stops: no leave yet")
        #expect(report.nextLook == start + ManagerReport.missingDeviceGrace)
        report.managerLeft()
        #expect(report.nextLook == nil, "it stopped: the device is on its network still")

        _ = report.events(toward: ManagerView(gone), at: start)
        let events = report.events(toward: ManagerView(gone), at: start + .seconds(3))
        #expect(events.first == .left(Self.cafeNetwork, reason: "wlan0 is no longer among NetworkManager's devices"))

        var starting = ManagerReport(manager: "NetworkManager")
        _ = starting.events(toward: ManagerView(Self.wifi()))
        var restarted = Self.wifi(state: 30)
        restarted.change(NetworkManagerAPI.managerPath, interface: NetworkManagerAPI.manager,
                         .dictionary([("Startup", .variant(.boolean(true)))], valueSignature: "v"))
        #expect(Self.next(&starting, restarted).allSatisfy { if case .left = $0 { false } else { true } },
                "NetworkManager is still activating what it activates as it starts")
    }

    @Test func valuesOfUnexpectedTypesAreReportedAndLeftOut() {
        var objects = Self.wifi()
        objects.change(Self.cafe, interface: NetworkManagerAPI.accessPoint, .dictionary([
            ("Strength", .variant(.string("strong"))), ("HwAddress", .variant(.uint32(7))),
        ], valueSignature: "v"))
        objects.change(Self.open, interface: NetworkManagerAPI.accessPoint, .dictionary([("Ssid", .variant(.string("Open-Net")))], valueSignature: "v"))
        objects.change(Self.active, interface: NetworkManagerAPI.activeConnection, .dictionary([("SpecificObject", .variant(.int32(1)))], valueSignature: "v"))
        let view = ManagerView(objects)
        #expect(view.problems.contains("NetworkManager's \(Self.cafe) has a Strength that is a string, not an unsigned integer; it is left out"))
        #expect(view.problems.contains("NetworkManager's \(Self.open) has a Ssid that is a string, not an array of bytes; it is left out"))
        #expect(view.scanList.map(\.ssid) == ["Cafe-Guest"], "an access point without an SSID is not listed")
        #expect(view.scanList.first?.signalStrength == 1, "a strength that is not a number counts as full")
        guard case .activated(let network, _)? = view.devices["wlan0"] else { Issue.record("\(view.devices)"); return }
        #expect(network.ssid == "Cafe profile", "no usable access point: the connection's name")

        objects.change(Self.device, interface: NetworkManagerAPI.device, .dictionary([("State", .variant(.string("activated")))], valueSignature: "v"))
        #expect(ManagerView(objects).devices["wlan0"] == .inactive)

        var report = ManagerReport(manager: "NetworkManager")
        let notes = report.events(toward: ManagerView(objects)).filter { if case .note(.warn, _) = $0 { true } else { false } }
        #expect(notes.count == ManagerView(objects).problems.count)
        #expect(!Self.next(&report, objects).contains { if case .note = $0 { true } else { false } },
                "a problem is told once")

        var empty = NetworkManagerObjects()
        let notObjects = empty.load(.string("no objects"))
        let noObjects = empty.load(.array(elementSignature: "{oa{sa{sv}}}", []))
        #expect(!notObjects && noObjects)
    }

    @Test func anSSIDThatIsNotPlainTextIsWrittenWithEscapes() {
        #expect(String.ssid(Array("Café".utf8)) == ("Café", false))
        #expect(String.ssid([0x41, 0x00, 0x42]) == ("A\\x00B", true))
        #expect(String.ssid([0x43, 0x61, 0x66, 0xc3, 0xa9, 0xff]) == ("Café\\xff", true))
        #expect(String.ssid([0x5c, 0xfe]) == ("\\\\\\xfe", true), "a backslash is doubled, so no escape is ambiguous")
        #expect(String.ssid([0x5c]) == ("\\", false))

        var objects = Self.wifi()
        objects.change(Self.cafe, interface: NetworkManagerAPI.accessPoint, .dictionary([("Ssid", .variant(Self.bytes([0x43, 0x00, 0xff])))], valueSignature: "v"))
        let view = ManagerView(objects)
        #expect(view.scanList.first?.ssid == "C\\x00\\xff")
        #expect(view.problems == ["the SSID of NetworkManager's \(Self.cafe) is not plain UTF-8 text; helpers see it written C\\x00\\xff"])
    }

    @Test func theSecretAgentGivesAHelpersPreSharedKeyAndNothingElse() {
        func connection(ssid: String = "Cafe-Guest", keyManagement: String = "wpa-psk") -> BusValue {
            .dictionary([
                ("802-11-wireless", .dictionary([("ssid", .variant(Self.bytes(Array(ssid.utf8))))], valueSignature: "v")),
                ("802-11-wireless-security", .dictionary([("key-mgmt", .variant(.string(keyManagement)))], valueSignature: "v")),
            ], valueSignature: "a{sv}")
        }
        let passwords = ["Cafe-Guest": "hunter22"]
        let given = SecretAgentAnswer(connection: connection(), setting: "802-11-wireless-security", hints: [], flags: 1, passwords: passwords)
        #expect(given == .secrets(.dictionary([("802-11-wireless-security", .dictionary([("psk", .variant(.string("hunter22")))], valueSignature: "v"))],
                                              valueSignature: "a{sv}"), ssid: "Cafe-Guest"))
        #expect(SecretAgentAnswer(connection: connection(keyManagement: "sae"), setting: "802-11-wireless-security", hints: ["psk"],
                                  flags: 0, passwords: passwords) != .refused(""))
        let refusals: [(SecretAgentAnswer, String)] = [
            (SecretAgentAnswer(connection: connection(ssid: "Other"), setting: "802-11-wireless-security", hints: [], flags: 0, passwords: passwords),
             "no helper supplied a password for Other"),
            (SecretAgentAnswer(connection: connection(keyManagement: "wpa-eap"), setting: "802-11-wireless-security", hints: [], flags: 0,
                               passwords: passwords), "hotspot-helper gives pre-shared keys only (wpa-psk, sae), not wpa-eap"),
            (SecretAgentAnswer(connection: connection(), setting: "802-1x", hints: [], flags: 0, passwords: passwords),
             "hotspot-helper gives Wi-Fi passwords only, not the secrets of 802-1x"),
            (SecretAgentAnswer(connection: connection(), setting: "802-11-wireless-security", hints: ["wep-key0"], flags: 0, passwords: passwords),
             "hotspot-helper gives the psk only, not wep-key0"),
            (SecretAgentAnswer(connection: connection(), setting: "802-11-wireless-security", hints: [], flags: 2, passwords: passwords),
             "the password a helper supplied for Cafe-Guest did not work, and there is no other"),
            (SecretAgentAnswer(connection: .string("nonsense"), setting: "802-11-wireless-security", hints: [], flags: 0, passwords: passwords),
             "hotspot-helper gives pre-shared keys only (wpa-psk, sae), not none"),
        ]
        for (answer, reason) in refusals { #expect(answer == .refused(reason)) }
    }
}
