import HotspotCore
import Testing
@testable import NetworkSources

/// systemd-networkd's description of its links (`Manager.Describe()`, as networkd 252 writes
/// it, trimmed), what the source makes of it and what it tells the daemon: without a bus.
@Suite("systemd-networkd's links")
struct NetworkdModelTests {
    static let loopback = """
        {"Index":1,"Name":"lo","Type":"loopback","AdministrativeState":"unmanaged","OperationalState":"carrier","CarrierState":"carrier"}
        """

    /// An ethernet link configured by Aroma-Guest.network, in `operational` / `carrier` state.
    static func ethernet(operational: String = "routable", carrier: String = "carrier", administrative: String = "configured",
                         extra: String = "") -> String {
        """
        {"Index":2,"Name":"eth0","Kind":"veth","Type":"ether","AdministrativeState":"\(administrative)",\
        "OperationalState":"\(operational)","CarrierState":"\(carrier)","OnlineState":"online",\
        "NetworkFile":"/etc/systemd/network/Aroma-Guest.network",\
        "DNS":[{"Family":2,"Address":[198,18,0,1],"ConfigSource":"DHCPv4","ConfigProvider":[198,18,0,1]},\
        {"Family":10,"Address":[254,128,0,0,0,0,0,0,0,0,0,0,0,0,0,1],"ConfigSource":"DHCPv6"}]\(extra)}
        """
    }

    static func described(_ links: String...) -> String { "{\"Interfaces\":[\(links.joined(separator: ","))],\"RoutingPolicyRules\":[]}" }

    static let aroma = NetworkDescription(ssid: "Aroma-Guest", interface: "eth0", resolvers: ["198.18.0.1", "fe80::1"])

    @Test func aRoutableLinkIsOnItsNetworkFilesNetworkAndLoopbackIsNone() throws {
        let view = try ManagerView(networkdDescription: Self.described(Self.loopback, Self.ethernet()))
        #expect(view.devices == ["eth0": .activated(Self.aroma, nil)], "IPv4 name servers only; lo is not networkd's")
        #expect(view.problems.isEmpty)
        #expect(try ManagerView(networkdDescription: Self.described(Self.ethernet()), only: "eth1").devices.isEmpty)
    }

    @Test func aWiFiLinkIsOnItsSSIDAndThePortalURIComesFromTheDescriptionOrTheLease() throws {
        let wifi = Self.ethernet(extra: #","SSID":"Cafe-Guest","BSSID":[2,0,0,0,1,10],"CaptivePortal":"https://api.cafe.example/capport""#)
        let view = try ManagerView(networkdDescription: Self.described(wifi)) { _ in "https://not.this.one/" }
        var cafe = Self.aroma
        (cafe.ssid, cafe.bssid, cafe.captivePortalAPI) = ("Cafe-Guest", "02:00:00:00:01:0a", "https://api.cafe.example/capport")
        #expect(view.devices == ["eth0": .activated(cafe, nil)])
        let fromLease = try ManagerView(networkdDescription: Self.described(Self.ethernet())) { $0 == 2 ? "https://lease.example/api" : nil }
        var leased = Self.aroma
        leased.captivePortalAPI = "https://lease.example/api"
        #expect(fromLease.devices == ["eth0": .activated(leased, nil)], "networkd 252 keeps option 114 in the lease file only")
    }

    @Test func aLinkWithoutCarrierIsLeftAndOneStillConfiguringKeepsItsNetwork() throws {
        var report = ManagerReport(manager: "systemd-networkd")
        let routable = try ManagerView(networkdDescription: Self.described(Self.ethernet()))
        let joined = report.events(toward: routable)
        #expect(joined == [.joined(Self.aroma, reason: "systemd-networkd has eth0 on Aroma-Guest"), .scanList([])])
        let configuring = try ManagerView(networkdDescription: Self.described(Self.ethernet(operational: "degraded", administrative: "configuring")))
        #expect(configuring.devices == ["eth0": .activating])
        let whileConfiguring = report.events(toward: configuring)
        #expect(whileConfiguring.isEmpty)
        let down = try ManagerView(networkdDescription: Self.described(Self.ethernet(operational: "no-carrier", carrier: "no-carrier")))
        var left = Self.aroma
        left.didAutoJoin = false
        let withoutCarrier = report.events(toward: down)
        #expect(withoutCarrier == [.left(left, reason: "systemd-networkd deactivated eth0")])
        let back = report.events(toward: routable)
        var rejoined = Self.aroma
        rejoined.didAutoJoin = true
        #expect(back == [.joined(rejoined, reason: "systemd-networkd has eth0 on Aroma-Guest")], "back by itself: an auto-join")
    }

    @Test func aDescriptionThatIsNotWhatNetworkdWritesIsRefusedOrItsBadPartsLeftOut() throws {
        #expect(throws: NetworkdDescriptionError(description: "systemd-networkd's description of its links has no Interfaces array")) {
            try ManagerView(networkdDescription: "{\"Interfaces\":7}")
        }
        #expect(throws: NetworkdDescriptionError.self) { try ManagerView(networkdDescription: "{\"Interfaces\":[") }
        let odd = try ManagerView(networkdDescription: Self.described(
            #"{"Index":"two","Name":"eth0","AdministrativeState":"configured","OperationalState":"routable","DNS":"198.18.0.1","SSID":7}"#,
            #"{"Name":42}"#, "17"))
        #expect(odd.devices == ["eth0": .activated(NetworkDescription(ssid: "eth0", interface: "eth0"), nil)])
        #expect(odd.problems == ["systemd-networkd's DNS of eth0 is not an array; it is left out"])
    }
}
