import Foundation
import HotspotCore
import Testing
import TestSupport
@testable import NetworkSources

@Suite("The interface source")
struct InterfaceSourceTests {
    /// An rtnetlink message: nlmsghdr, ifinfomsg with `flags`, an IFLA_IFNAME attribute.
    static func linkMessage(type: UInt16, flags: UInt32, name: String) -> [UInt8] {
        func bytes<Value: FixedWidthInteger>(_ value: Value) -> [UInt8] { withUnsafeBytes(of: value) { Array($0) } }
        let nameBytes = Array(name.utf8) + [0]
        var attribute = bytes(UInt16(4 + nameBytes.count)) + bytes(UInt16(3)) + nameBytes
        while attribute.count % 4 != 0 { attribute.append(0) }
        let info = [UInt8(AF_UNSPEC), 0] + bytes(UInt16(1)) + bytes(Int32(2)) + bytes(flags) + bytes(UInt32(0))
        let body = info + attribute
        return bytes(UInt32(16 + body.count)) + bytes(type) + bytes(UInt16(0)) + bytes(UInt32(0)) + bytes(UInt32(0)) + body
    }

    @Test func rtnetlinkMessagesSayWhichLinksAreUpWithACarrier() {
        let up = Self.linkMessage(type: 16, flags: 0x1 | 0x10000, name: "wlan0")
        let noCarrier = Self.linkMessage(type: 16, flags: 0x1, name: "wlan0")
        let deleted = Self.linkMessage(type: 17, flags: 0x1 | 0x10000, name: "veth9")
        let done: [UInt8] = [20, 0, 0, 0, 3, 0, 2, 0] + [UInt8](repeating: 0, count: 12)
        let news = LinkNotifications.parse((up + noCarrier + deleted + done)[...])
        #expect(news.links == [.init(index: 2, name: "wlan0", isUp: true), .init(index: 2, name: "wlan0", isUp: false),
                               .init(index: 2, name: "veth9", isUp: false)])
        #expect(news.allListed)
    }

    @Test func messagesCutShortOrOfAnyOtherKindAreSkipped() {
        let up = Self.linkMessage(type: 16, flags: 0x10001, name: "wlan0")
        #expect(LinkNotifications.parse(up.dropLast(3)).links.isEmpty, "cut short")
        var lying = up
        lying[0] = 0xff  // a length past the end
        #expect(LinkNotifications.parse(lying[...]).links.isEmpty)
        var badAttribute = up
        badAttribute[32] = 200  // the name attribute claims more than there is
        #expect(LinkNotifications.parse(badAttribute[...]).links.isEmpty)
        let address = Self.linkMessage(type: 20, flags: 0x10001, name: "wlan0")  // RTM_NEWADDR
        #expect(LinkNotifications.parse(address[...]).links.isEmpty)
        #expect(LinkNotifications.parse([UInt8](repeating: 0, count: 40)[...]).links.isEmpty, "zero lengths end the batch")
    }

    /// Loopback is up with a carrier on every machine: it is joined, and a DHCP lease written
    /// afterwards for it gives the network its Captive Portal API URI at once.
    @Test func aLeaseWrittenWhileJoinedChangesTheCaptivePortalAPI() async throws {
        let leases = try scratchDirectory("leases")
        let places = CaptivePortalAPIDiscovery.Places(nmcli: nil, networkdLeases: leases + "/networkd", dhclientLeases: leases,
                                                      networkManagerLeases: leases + "/nm")
        let source = InterfaceSource(interface: "lo", ssid: "Loopback-Cafe", discoveringCaptivePortalAPIIn: places,
                                     discoveringNameServersIn: places)
        let events = source.start()
        var iterator = events.makeAsyncIterator()
        let joined = await iterator.next()
        #expect(joined == .joined(NetworkDescription(ssid: "Loopback-Cafe", interface: "lo"), reason: "lo is up"))

        try "lease {\n  interface \"lo\";\n  option default-url \"https://api.cafe.example/capport\";\n}\n"
            .write(toFile: leases + "/dhclient.lo.leases", atomically: true, encoding: .utf8)
        #expect(await iterator.next() == .note(.info, "the Captive Portal API of lo is https://api.cafe.example/capport (from dhclient)"))
        #expect(await iterator.next() == .changed(NetworkDescription(ssid: "Loopback-Cafe", didAutoJoin: true, interface: "lo",
                                                                     captivePortalAPI: "https://api.cafe.example/capport",
                                                                     captivePortalAPIIsFromLink: true)))
        source.stop()
        #expect(await iterator.next() == nil, "stopping ends the events")
    }

    /// The interface source read the leases for option 114 but never their name servers: with
    /// a VPN owning the system's resolver, the venue's names failed unless --resolver was
    /// given. DHCP's name servers are the network's resolvers.
    @Test func theLeasesNameServersAreTheNetworksResolvers() async throws {
        let leases = try scratchDirectory("leases")
        let places = CaptivePortalAPIDiscovery.Places(nmcli: nil, networkdLeases: leases + "/networkd", dhclientLeases: leases,
                                                      networkManagerLeases: leases + "/nm")
        try "lease {\n  interface \"lo\";\n  option domain-name-servers 198.18.0.53, 198.18.0.54;\n}\n"
            .write(toFile: leases + "/dhclient.lo.leases", atomically: true, encoding: .utf8)
        let source = InterfaceSource(interface: "lo", ssid: "Loopback-Cafe", discoveringCaptivePortalAPIIn: nil,
                                     discoveringNameServersIn: places)
        var iterator = source.start().makeAsyncIterator()
        #expect(await iterator.next() == .note(.info, "the name servers of lo are 198.18.0.53, 198.18.0.54 (from dhclient)"))
        #expect(await iterator.next() == .joined(NetworkDescription(ssid: "Loopback-Cafe", interface: "lo",
                                                                    resolvers: ["198.18.0.53", "198.18.0.54"]), reason: "lo is up"))
        source.stop()
        #expect(await iterator.next() == nil)
    }

    /// A renamed interface went unnoticed: its messages no longer carried the name, so the
    /// network stayed joined on a name no link had. The link is followed by its index.
    @Test func aRenamedInterfaceIsLeftAndOneRenamedToItsNameJoined() {
        var follower = LinkFollower(interface: "wlan0")
        #expect(follower.follow(.init(index: 2, name: "wlan0", isUp: true))! == (true, nil))
        #expect(follower.follow(.init(index: 5, name: "eth0", isUp: true)) == nil, "another link")
        #expect(follower.follow(.init(index: 2, name: "wlan9", isUp: true))! == (false, "wlan9"))
        #expect(follower.follow(.init(index: 2, name: "wlan9", isUp: true)) == nil, "no longer the interface")
        #expect(follower.follow(.init(index: 7, name: "wlan0", isUp: true))! == (true, nil))
    }

    @Test func sourcesAreParsedWithAClearMessageForAnyMistake() throws {
        #expect(try NetworkSourceArgument.parse("interface:lo:Cafe") == .interface("lo", ssid: "Cafe"))
        #expect(try NetworkSourceArgument.parse("networkmanager") == .networkManager(interface: nil))
        #expect(try NetworkSourceArgument.parse("networkmanager:wlan0") == .networkManager(interface: "wlan0"))
        #expect(try NetworkSourceArgument.parse("networkd") == .networkd(interface: nil))
        #expect(try NetworkSourceArgument.parse("networkd:eth0") == .networkd(interface: "eth0"))
        #expect(try NetworkSourceArgument.parse("connman:eth0") == .connman(interface: "eth0"))
        #expect(try NetworkSourceArgument.parse("auto") == .auto)
        let mistakes = [
            "interface:lo": "expected interface:IFACE:SSID, such as interface:wlan0:Aroma-Guest",
            "interface:nosuch0:Cafe": "no network interface called \"nosuch0\" (see `ip link`)",
            "interface:lo:" + String(repeating: "x", count: 33): "the SSID \"\(String(repeating: "x", count: 33))\" is 33 bytes; "
                + "a Wi-Fi network's name has 1 to 32 (UTF-8): give it as the network broadcasts it",
            // 33 bytes in 11 characters: bytes are what counts.
            "interface:lo:" + String(repeating: "€", count: 11): "the SSID \"\(String(repeating: "€", count: 11))\" is 33 bytes; "
                + "a Wi-Fi network's name has 1 to 32 (UTF-8): give it as the network broadcasts it",
            "interface:lo:Ca\u{0}fe": "the SSID \"Ca\\x00fe\" holds a NUL byte, which no Wi-Fi network's name can: give it as the network broadcasts it",
            "networkmanager:": "networkmanager:IFACE needs the interface, such as networkmanager:wlan0",
            "networkd:eth0:x": "expected networkd or networkd:IFACE, such as networkd:eth0",
            "auto:eth0": "auto takes no interface: it follows whatever manages the device's",
            "wifi": "expected interface:IFACE:SSID (such as interface:wlan0:Aroma-Guest), networkmanager[:IFACE], connman[:IFACE], networkd[:IFACE] or auto",
        ]
        for (text, message) in mistakes {
            #expect(throws: NetworkSourceError.self) { try NetworkSourceArgument.parse(text) }
            do { _ = try NetworkSourceArgument.parse(text) } catch { #expect(error.description == message) }
        }
    }
}
