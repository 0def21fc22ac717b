import Foundation
import HotspotCore
import Testing
import TestSupport
@testable import HotspotNetwork

@Suite("The bound DNS client over IPv6")
struct BoundDNSTests {
    @Test func resolversAreIPv4OrIPv6WithAnOptionalPort() {
        let accepted = ["192.0.2.53", "127.0.0.1:5353", "2001:db8::53", "[2001:db8::53]:5353", "[::1]", "fe80::1%lo"]
        for text in accepted { #expect(NetworkBinding.isResolverAddress(text), "\(text)") }
        let refused = ["[192.0.2.53]:53", "2001:db8::53:", "[2001:db8::53]:0", "[2001:db8::53]x", "fe80::1%nosuch0", "192.0.2.53%lo",
                       "portal.example", "192.0.2.53:99999"]
        for text in refused { #expect(!NetworkBinding.isResolverAddress(text), "\(text)") }
        #expect(ResolverEndpoint("[2001:db8::53]:5353", defaultPort: 53)?.address.family == sa_family_t(AF_INET6))
    }

    @Test func aaaaRecordsAreRead() throws {
        let query = try #require(DNSMessage.query("v6.test", type: .aaaa, identifier: 7))
        #expect(Array(query.suffix(4)) == [0, 28, 0, 1], "type AAAA, class IN")
        var answer = query
        answer[2] = 0x81
        answer[3] = 0x80
        answer[7] = 1
        answer += [0xC0, 0x0C, 0, 28, 0, 1, 0, 0, 0, 30, 0, 16, 0x20, 0x01, 0x0d, 0xb8] + [UInt8](repeating: 0, count: 11) + [0x80]
        #expect(DNSMessage.answer(answer, identifier: 7) == .addresses(["2001:db8::80"], timeToLive: 30))
    }

    /// dnsmasq on IPv6 loopback knows one name by its IPv6 address only and one by its IPv4
    /// address: the client asks an IPv6 server, takes AAAA records when there is no A, and a
    /// request to the IPv6-only name reaches a web server on IPv6 loopback.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/sbin/dnsmasq"), "needs dnsmasq"))
    func anIPv6ResolverIsAskedAndItsAAAARecordsUsed() async throws {
        let port = Int.random(in: 20000...32000)
        let dnsmasq = try BackgroundProcess("/usr/sbin/dnsmasq", [
            "--keep-in-foreground", "--conf-file=/dev/null", "--no-resolv", "--no-hosts", "--pid-file=\(scratchPath("pid"))",
            "--listen-address=::1", "--bind-interfaces", "--port=\(port)", "--user=root",
            "--local=/test/", "--host-record=v6.test,::1", "--host-record=v4.test,198.18.0.80",
        ])
        defer { dnsmasq.stop() }
        let binding = NetworkBinding(interface: "lo", resolvers: ["[::1]:\(port)"])
        @Sendable func lookup(_ name: String) throws(HTTPFailure) -> [String] {
            try BoundDNS.lookup(name, binding: binding, deadline: .now + .seconds(2)).addresses
        }
        // dnsmasq listens once it has started: the first lookups may find nobody there.
        #expect(try await onOwnThread { holdsBlocking(within: .seconds(10)) { (try? lookup("v6.test")) == ["::1"] } }, "\(dnsmasq.output)")
        #expect(try await onOwnThread { try lookup("v4.test") } == ["198.18.0.80"])

        let server = try await TestHTTPServer.start(host: "::1")
        defer { server.stop() }
        let hosts = [try HostPattern.parse("v6.test").get()]
        let response = try await onOwnThread {
            try BoundHTTPClient(binding: binding, allowedHosts: hosts).perform(HTTPRequest(url: "http://v6.test:\(server.port)/hello"))
        }
        #expect(response.status == 200)
        #expect(server.hostsReached == ["v6.test:\(server.port)"])
    }
}
