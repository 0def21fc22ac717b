import Foundation
import Testing
@testable import NetworkSources

@Suite("Router advertisements' options")
struct RouterOptionsTests {
    /// Option 37 with `uri`, padded with NULs to a multiple of 8 bytes as RFC 8910 asks.
    static func captivePortal(_ uri: [UInt8]) -> [UInt8] {
        var option: [UInt8] = [37, 0] + uri
        while option.count % 8 != 0 { option.append(0) }
        option[1] = UInt8(option.count / 8)
        return option
    }

    /// An RTM_NEWNDUSEROPT message as the kernel sends it: nlmsghdr, nduseroptmsg, the option.
    static func userOptionMessage(_ option: [UInt8], index: Int32, icmpType: UInt8 = 134) -> [UInt8] {
        func bytes<Value: FixedWidthInteger>(_ value: Value) -> [UInt8] { withUnsafeBytes(of: value) { Array($0) } }
        let body = [UInt8(AF_INET6), 0] + bytes(UInt16(option.count)) + bytes(index) + [icmpType, 0, 0, 0, 0, 0, 0, 0] + option
        return bytes(UInt32(16 + body.count)) + bytes(UInt16(68)) + bytes(UInt16(0)) + bytes(UInt32(0)) + bytes(UInt32(0)) + body
    }

    @Test func theCaptivePortalURIAndTheNameServersAreRead() {
        #expect(RouterOption.parse(option: Self.captivePortal(Array("https://portal.example/capport".utf8))[...])
                == .captivePortal("https://portal.example/capport"))
        #expect(RouterOption.parse(option: Self.captivePortal(Array("urn:ietf:params:capport:unrestricted".utf8))[...]) == .unrestricted)
        let rdnss: [UInt8] = [25, 5, 0, 0, 0, 0, 0x0e, 0x10] + [0x20, 0x01, 0x0d, 0xb8] + [UInt8](repeating: 0, count: 11) + [0x53]
            + [0xfe, 0x80] + [UInt8](repeating: 0, count: 13) + [1]
        #expect(RouterOption.parse(option: rdnss[...]) == .nameServers(["2001:db8::53", "fe80::1"], lifetimeSeconds: 3600))
        #expect(RouterOption.parse(option: [3, 4] + [UInt8](repeating: 0, count: 30)) == nil, "a prefix: not ours")
    }

    @Test func rtnetlinkCarriesTheOptionAndTheInterface() {
        let option = Self.captivePortal(Array("https://portal.example/".utf8))
        let messages = Self.userOptionMessage(option, index: 7) + InterfaceSourceTests.linkMessage(type: 16, flags: 0x10001, name: "v6c0")
            + Self.userOptionMessage(option, index: 7, icmpType: 133)  // a solicitation's: not an advertisement
        let news = LinkNotifications.parse(messages[...])
        #expect(news.routerOptions == [.init(index: 7, option: .captivePortal("https://portal.example/"))])
        #expect(news.links.map(\.name) == ["v6c0"])
    }

    @Test func malformedOptionsAreNamedNotTaken() {
        func parsed(_ bytes: [UInt8]) -> String? {
            if case .malformed(let reason) = RouterOption.parse(option: bytes[...]) { return reason }
            return nil
        }
        var short = Self.captivePortal(Array("https://portal.example/".utf8))
        short[1] += 1
        #expect(parsed(short) == "a router advertisement's captive-portal option (37) says 40 bytes but has 32")
        #expect(parsed([37, 0]) == "a router advertisement's captive-portal option (37) says 0 bytes but has 2")
        #expect(parsed(Self.captivePortal(Array("http://portal.example/".utf8)))
                == "a router advertisement's captive-portal URI \"http://portal.example/\" is not https, as RFC 8910 requires")
        #expect(parsed(Self.captivePortal(Array("https://portal.example/".utf8) + [0xff, 0xfe]))
                == "a router advertisement's captive-portal URI is not UTF-8")
        #expect(parsed(Self.captivePortal(Array("https://portal.example/\u{1b}[2J".utf8)))?
                    .hasPrefix("a router advertisement's captive-portal URI holds spaces or control characters") == true)
        #expect(parsed(Self.captivePortal(Array("https://p.example/".utf8) + [0, 0x41]))
                == "a router advertisement's captive-portal option (37) has bytes after its URI's end")
        #expect(parsed(Self.captivePortal([])) == "a router advertisement's captive-portal option (37) is empty")
        #expect(parsed(Self.captivePortal(Array(("https://portal.example/" + String(repeating: "a", count: 1100)).utf8)))
                == "a router advertisement's captive-portal URI is 1123 bytes; at most 1024 are taken")
        #expect(parsed([25, 1, 0, 0, 0, 0, 0, 0]) == "a router advertisement's RDNSS option (25) has no whole address")
    }
}
