import HotspotCore
import Testing
@testable import DBusClient
@testable import NetworkSources

/// ConnMan's services as the source mirrors them, what it makes of them, what it tells the
/// daemon and what its agent answers: without a bus, from values written as ConnMan 1.41
/// sends them.
@Suite("ConnMan's services")
struct ConnManModelTests {
    static let wired = "/net/connman/service/ethernet_d220d8d0cd05_cable"
    static let cafe = "/net/connman/service/wifi_0200000001_436166652d4775657374_managed_psk"
    static let open = "/net/connman/service/wifi_0200000001_4f70656e_managed_none"

    static func properties(_ entries: [String: BusValue]) -> BusValue {
        .dictionary(entries.sorted { $0.key < $1.key }.map { ($0.key, .variant($0.value)) }, valueSignature: "v")
    }

    static func strings(_ texts: [String]) -> BusValue { .array(elementSignature: "s", texts.map(BusValue.string)) }

    /// `a(oa{sv})`, as GetServices answers and ServicesChanged begins.
    static func services(_ entries: [(String, [String: BusValue])]) -> BusValue {
        .array(elementSignature: "(oa{sv})", entries.map { .structure([.objectPath($0.0), properties($0.1)]) })
    }

    static func service(_ state: String, name: String, type: String, interface: String, extra: [String: BusValue] = [:]) -> [String: BusValue] {
        ["State": .string(state), "Name": .string(name), "Type": .string(type), "Nameservers": strings(["198.18.0.1", "2001:db8::1"]),
         "Ethernet": properties(["Interface": .string(interface), "Method": .string("auto")])].merging(extra) { $1 }
    }

    static let wifiServices = services([
        (cafe, service("ready", name: "Cafe-Guest", type: "wifi", interface: "wlan0",
                       extra: ["Strength": .byte(73), "Security": strings(["psk"])])),
        (open, service("idle", name: "Open-Net", type: "wifi", interface: "wlan0", extra: ["Strength": .byte(40), "Security": strings(["none"])])),
    ])

    @Test func aReadyServiceIsItsInterfacesNetworkAndWiFiServicesAreTheScanList() {
        var services = ConnManServices()
        let loaded = services.apply(Self.wifiServices)
        #expect(loaded)
        let view = ManagerView(services)
        let cafe = NetworkDescription(ssid: "Cafe-Guest", signalStrength: 0.73, isSecure: true, interface: "wlan0", resolvers: ["198.18.0.1", "2001:db8::1"])
        #expect(view.devices == ["wlan0": .activated(cafe, nil)], "ready is no verdict; the idle service does not hide the ready one")
        #expect(view.scanList == [cafe, NetworkDescription(ssid: "Open-Net", signalStrength: 0.4, interface: "wlan0", resolvers: ["198.18.0.1", "2001:db8::1"])])
        #expect(view.problems.isEmpty)
        #expect(ManagerView(services, only: "eth0").devices.isEmpty)
    }

    @Test func servicesChangedAndPropertyChangedKeepTheMirrorAndTheDaemonIsTold() {
        var services = ConnManServices()
        var report = ManagerReport(manager: "ConnMan")
        let listed = services.apply(Self.services([(Self.wired, Self.service("configuration", name: "Wired", type: "ethernet", interface: "eth0"))]))
        #expect(listed)
        let firstLook = report.events(toward: ManagerView(services))
        #expect(firstLook == [.scanList([])])
        services.change(Self.wired, name: "State", .variant(.string("ready")))
        // Joined after the first look: ConnMan joined it by itself.
        let wired = NetworkDescription(ssid: "Wired", didAutoJoin: true, interface: "eth0", resolvers: ["198.18.0.1", "2001:db8::1"])
        let whenReady = report.events(toward: ManagerView(services))
        #expect(whenReady == [.joined(wired, reason: "ConnMan has eth0 on Wired")])
        services.change(Self.wired, name: "State", .variant(.string("online")))
        let whenOnline = report.events(toward: ManagerView(services))
        #expect(whenOnline == [.connectivity(ssid: "Wired", .connected)])
        // A known service comes with no properties when only the order changed.
        let reordered = services.apply(Self.services([(Self.wired, [:])]))
        #expect(reordered)
        let afterReordering = report.events(toward: ManagerView(services))
        #expect(afterReordering.isEmpty)
        let removed = services.apply(Self.services([]), removed: [Self.wired])
        #expect(removed)
        let removedAt = ContinuousClock.now
        let atOnce = report.events(toward: ManagerView(services), at: removedAt)
        #expect(atOnce.isEmpty, "not at once: ConnMan may be stopping")
        let afterTheGrace = report.events(toward: ManagerView(services), at: removedAt + .seconds(3))
        #expect(afterTheGrace
                == [.left(wired, reason: "eth0 is no longer among ConnMan's devices")])
        services.change(Self.wired, name: "State", .string("ready"))
        #expect(services.properties.isEmpty, "a change of a service not listed is no service")
    }

    /// ConnMan signals a service's Nameservers after its `ready`: the network is held back for
    /// them (a helper's first probe would resolve through the system's resolver otherwise), and
    /// joined without them once the grace has passed.
    @Test func aServiceReadyBeforeItsNameServersIsJoinedWithThemOrAfterTheGrace() {
        let grace = Duration.seconds(1)
        var services = ConnManServices()
        var report = ManagerReport(manager: "ConnMan", nameServerGrace: grace)
        func look(at instant: ContinuousClock.Instant = .now) -> [NetworkSourceEvent] {
            report.events(toward: ManagerView(services), at: instant)
        }
        let configuring = Self.service("configuration", name: "Wired", type: "ethernet", interface: "eth0", extra: ["Nameservers": Self.strings([])])
        let listed = services.apply(Self.services([(Self.wired, configuring)]))
        #expect(listed)
        #expect(look() == [.scanList([])])
        services.change(Self.wired, name: "State", .variant(.string("ready")))
        let start = ContinuousClock.now
        #expect(look(at: start).isEmpty, "held back for its name servers")
        #expect(report.nextLook == start + grace)
        services.change(Self.wired, name: "Nameservers", .variant(Self.strings(["198.18.0.1"])))
        let wired = NetworkDescription(ssid: "Wired", didAutoJoin: true, interface: "eth0", resolvers: ["198.18.0.1"])
        #expect(look(at: start + .milliseconds(500)) == [.joined(wired, reason: "ConnMan has eth0 on Wired")])
        #expect(report.nextLook == nil)

        services.change(Self.wired, name: "State", .variant(.string("idle")))
        services.change(Self.wired, name: "Nameservers", .variant(Self.strings([])))
        #expect(look(at: start + .seconds(1)).count == 1, "left")
        services.change(Self.wired, name: "State", .variant(.string("ready")))
        #expect(look(at: start + .seconds(2)).isEmpty)
        let plain = NetworkDescription(ssid: "Wired", didAutoJoin: true, interface: "eth0")
        #expect(look(at: start + .seconds(3)) == [.joined(plain, reason: "ConnMan has eth0 on Wired")],
                "a network with no name server is joined all the same")
    }

    @Test func valuesOfUnexpectedTypesAreReportedAndLeftOut() {
        var services = ConnManServices()
        let notServices = services.apply(.string("not services"))
        #expect(!notServices)
        let oddOnes = services.apply(Self.services([(Self.wired, ["State": .uint32(5), "Ethernet": .string("eth0")])]))
        #expect(oddOnes)
        let view = ManagerView(services)
        #expect(view.devices.isEmpty, "no interface: no network")
        #expect(view.problems == ["ConnMan's \(Self.wired) has a State that is an unsigned integer, not a string; it is left out",
                                  "ConnMan's \(Self.wired) has a Ethernet that is a string, not a dictionary; it is left out"])
    }

    @Test func theAgentGivesAHelpersPassphraseAndNothingElse() {
        let passphrase = Self.properties(["Passphrase": Self.properties(["Type": .string("psk"), "Requirement": .string("mandatory")])])
        #expect(ConnManInputAnswer(fields: passphrase, ssid: "Cafe-Guest", passwords: ["Cafe-Guest": "espresso"])
                == .input(.dictionary([("Passphrase", .variant(.string("espresso")))], valueSignature: "v"), ssid: "Cafe-Guest"))
        #expect(ConnManInputAnswer(fields: passphrase, ssid: "Open-Net", passwords: ["Cafe-Guest": "espresso"])
                == .refused("no helper supplied a password for Open-Net"))
        #expect(ConnManInputAnswer(fields: passphrase, ssid: nil, passwords: ["Cafe-Guest": "espresso"])
                == .refused("the service is not one of ConnMan's that hotspot-helper knows"))
        let wispr = Self.properties(["Username": Self.properties(["Type": .string("string"), "Requirement": .string("mandatory")]),
                                     "Password": Self.properties(["Type": .string("passphrase"), "Requirement": .string("mandatory")])])
        #expect(ConnManInputAnswer(fields: wispr, ssid: "Cafe-Guest", passwords: ["Cafe-Guest": "espresso"])
                == .refused("hotspot-helper gives Wi-Fi passphrases only, not Password, Username"))
        #expect(ConnManInputAnswer(fields: .uint32(1), ssid: "Cafe-Guest", passwords: [:])
                == .refused("RequestInput's fields are an unsigned integer, not a dictionary"))
    }
}
