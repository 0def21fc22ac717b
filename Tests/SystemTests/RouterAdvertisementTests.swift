import Foundation
import Testing
import TestSupport

/// RFC 8910's captive-portal option (37) in router advertisements, which NetworkManager 1.42
/// and systemd-networkd 252 do not pass on: the daemon reads it from the kernel (rtnetlink's
/// ND user options) for `run --source interface:IFACE:SSID`. Two namespaces: the router's
/// end of a veth pair advertises, the daemon runs in the client's.
@Suite("Router advertisements")
struct RouterAdvertisementTests {
    /// Sends one router advertisement (not a default router: lifetime 0) carrying `options`
    /// from `interface` in `namespace` to all nodes; radvd and dnsmasq 2.90 cannot send option
    /// 37, nor a malformed one, so the test writes the packet and the kernel sends it.
    static func advertise(_ options: [UInt8], namespace: String, interface: String) throws -> Int32 {
        let sender = """
            import socket, sys
            s = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, sys.argv[1].encode())
            s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_HOPS, 255)
            ra = bytes([134, 0, 0, 0, 64, 0, 0, 0]) + bytes(8) + bytes.fromhex(sys.argv[2])
            s.sendto(ra, ("ff02::1", 0, 0, socket.if_nametoindex(sys.argv[1])))
            """
        let hex = options.map { String(format: "%02x", $0) }.joined()
        return try shellStatus("ip netns exec \(namespace) python3 -c '\(sender)' \(interface) \(hex)")
    }

    /// Option 37 with `uri`, padded with NULs to a multiple of 8 bytes.
    static func captivePortal(_ uri: [UInt8]) -> [UInt8] {
        var option: [UInt8] = [37, 0] + uri
        while option.count % 8 != 0 { option.append(0) }
        option[1] = UInt8(option.count / 8)
        return option
    }

    /// A client and a router namespace joined by a veth pair with their link-local addresses
    /// (no duplicate address detection to wait for, but the kernel adds them only once the
    /// carrier is up: the router cannot send an advertisement before).
    static func makeLink(_ prefix: String) throws -> (client: String, router: String) {
        let client = prefix + "c", router = prefix + "r"
        let script = """
            ip netns add \(client) && ip netns add \(router) \
            && ip -n \(client) link add v6c0 type veth peer name v6r0 netns \(router) \
            && ip netns exec \(client) sysctl -qw net.ipv6.conf.v6c0.accept_dad=0 \
            && ip netns exec \(router) sysctl -qw net.ipv6.conf.v6r0.accept_dad=0 \
            && ip -n \(client) link set v6c0 up && ip -n \(router) link set v6r0 up
            """
        guard try shellStatus(script) == 0 else {
            _ = try? shellStatus("ip netns del \(client); ip netns del \(router)")
            throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "cannot make the namespaces"])
        }
        let addressed = try holdsBlocking(within: .seconds(10)) {
            try shellStatus("ip -n \(router) -6 addr show dev v6r0 scope link | grep -q inet6 "
                            + "&& ip -n \(client) -6 addr show dev v6c0 scope link | grep -q inet6") == 0
        }
        guard addressed else {
            _ = try? shellStatus("ip netns del \(client); ip netns del \(router)")
            throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "the veth pair got no link-local addresses"])
        }
        return (client, router)
    }

    /// radvd in `router`'s namespace advertising the documentation prefix 2001:db8:38::/64
    /// (not a default router) and `nameServer` (RDNSS) from v6r0; stopped by the caller.
    static func radvd(in router: String, directory: String, nameServer: String) throws -> BackgroundProcess {
        try """
            interface v6r0 {
              AdvSendAdvert on;
              MinRtrAdvInterval 3;
              MaxRtrAdvInterval 4;
              AdvDefaultLifetime 0;
              prefix 2001:db8:38::/64 {};
              RDNSS \(nameServer) { AdvRDNSSLifetime 60; };
            };
            """.write(toFile: directory + "/radvd.conf", atomically: true, encoding: .utf8)
        return try BackgroundProcess("/usr/sbin/ip", ["netns", "exec", router, "/usr/sbin/radvd", "--nodaemon",
                                                      "--config", directory + "/radvd.conf", "--pidfile", directory + "/radvd.pid"])
    }

    /// The daemon in `client`'s namespace following v6c0 as the network V6-Cafe.
    static func daemon(in client: String, scripts: String, _ options: [String]) throws -> RunningCLI {
        try RunningCLI(["ip", "netns", "exec", client, CLI.path, "run", "--json", "--scripts", scripts,
                        "--source", "interface:v6c0:V6-Cafe", "--state-dir", try CLI.temporaryDirectory()] + options,
                       executable: "/usr/bin/env")
    }

    @Test(.enabled(if: TwoNetworks.unavailableReason == nil, "needs root and network namespaces"))
    func theAdvertisedCaptivePortalIsTheNetworksAndMalformedOptionsAreWarnedOf() async throws {
        let (client, router) = try Self.makeLink("hh\(getpid() % 100_000)a")
        defer { _ = try? shellStatus("ip netns del \(client); ip netns del \(router)") }
        let scripts = try CLI.temporaryDirectory(scripts: ["quick.lua": CLI.helperClaimingNothing])
        let daemon = try Self.daemon(in: client, scripts: scripts, ["--probe-interval", "0"])
        try await daemon.waitForEvent(EventLine.isState("authenticated", "V6-Cafe"))
        let bad: [([UInt8], String)] = [
            (Self.captivePortal(Array("http://portal.example/".utf8)),
             "v6c0: a router advertisement's captive-portal URI \"http://portal.example/\" is not https, as RFC 8910 requires; "
                + "the option is ignored"),
            (Self.captivePortal(Array("https://portal.example/".utf8) + [0xc3, 0x28]),
             "v6c0: a router advertisement's captive-portal URI is not UTF-8; the option is ignored"),
        ]
        for (option, warning) in bad {
            #expect(try await onOwnThread { try Self.advertise(option, namespace: router, interface: "v6r0") } == 0)
            let event = try await daemon.waitForEvent { $0.message == warning }
            #expect(event.level == "warn")
        }
        let uri = "https://portal.example/capport"
        #expect(try await onOwnThread { try Self.advertise(Self.captivePortal(Array(uri.utf8)), namespace: router, interface: "v6r0") } == 0)
        try await daemon.waitForEvent { $0.message == "the Captive Portal API of v6c0 is \(uri) (from a router advertisement)" }
        #expect(try await onOwnThread {
            try Self.advertise(Self.captivePortal(Array("urn:ietf:params:capport:unrestricted".utf8)), namespace: router, interface: "v6r0")
        } == 0)
        try await daemon.waitForEvent { $0.message == "v6c0 no longer names a Captive Portal API" }
        daemon.signal(SIGTERM)
        #expect(try await daemon.waitForExit() == 0)
    }

    /// radvd (2.19 sends no option 37) advertising a documentation prefix and a name server
    /// (RDNSS): the daemon takes the server as the network's resolver.
    @Test(.enabled(if: TwoNetworks.unavailableReason == nil && FileManager.default.isExecutableFile(atPath: "/usr/sbin/radvd"),
                   "needs root, network namespaces and radvd"))
    func radvdsNameServerIsTheNetworksResolver() async throws {
        let (client, router) = try Self.makeLink("hh\(getpid() % 100_000)d")
        defer { _ = try? shellStatus("ip netns del \(client); ip netns del \(router)") }
        let directory = try CLI.temporaryDirectory()
        #expect(try shellStatus("ip netns exec \(router) sysctl -qw net.ipv6.conf.all.forwarding=1") == 0)
        let scripts = try CLI.temporaryDirectory(scripts: ["quick.lua": CLI.helperClaimingNothing])
        let daemon = try Self.daemon(in: client, scripts: scripts, ["--probe-interval", "0"])
        try await daemon.waitForEvent(EventLine.isState("authenticated", "V6-Cafe"))
        let radvd = try Self.radvd(in: router, directory: directory, nameServer: "2001:db8:38::53")
        defer { radvd.stop() }
        try await daemon.waitForEvent { $0.message == "the name servers router advertisements give v6c0 are 2001:db8:38::53" }
        daemon.signal(SIGTERM)
        #expect(try await daemon.waitForExit() == 0)
    }

    /// An IPv6-only network, no IPv4 anywhere: radvd advertises a documentation prefix and
    /// the router as name server, dnsmasq answers the venue's names with AAAA records only,
    /// the portal simulator listens on the router's IPv6 address. The daemon takes the
    /// resolver from the advertisement, its probe finds the portal over IPv6 and the bundled
    /// click-through helper logs in.
    @Test(.enabled(if: TwoNetworks.unavailableReason == nil && FileManager.default.isExecutableFile(atPath: "/usr/sbin/radvd"),
                   "needs root, network namespaces and radvd"))
    func anIPv6OnlyNetworkIsLoggedInByABundledHelper() async throws {
        let (client, router) = try Self.makeLink("hh\(getpid() % 100_000)o")
        defer { _ = try? shellStatus("ip netns del \(client); ip netns del \(router)") }
        let directory = try CLI.temporaryDirectory()
        #expect(try shellStatus("ip netns exec \(router) sysctl -qw net.ipv6.conf.all.forwarding=1 "
                                + "&& ip -n \(router) addr add 2001:db8:38::1/64 dev v6r0 nodad") == 0)
        let portal = try BackgroundProcess("/usr/sbin/ip", ["netns", "exec", router, CLI.path, "simulate", "--scenario", "click-through",
                                                            "--host", "2001:db8:38::1", "--port", "80"])
        defer { portal.stop() }
        let dnsmasq = try BackgroundProcess("/usr/sbin/ip", [
            "netns", "exec", router, "/usr/sbin/dnsmasq", "--keep-in-foreground", "--conf-file=/dev/null", "--no-resolv", "--no-hosts",
            "--pid-file=\(directory)/dnsmasq.pid", "--listen-address=2001:db8:38::1", "--bind-interfaces", "--user=root",
            "--local=/#/", "--host-record=probe.v6.test,2001:db8:38::1",
        ])
        defer { dnsmasq.stop() }
        let radvd = try Self.radvd(in: router, directory: directory, nameServer: "2001:db8:38::1")
        defer { radvd.stop() }
        #expect(try await onOwnThread { holdsBlocking(within: .seconds(10)) { portal.output.contains("http://[2001:db8:38::1]:80/") } },
                "\(portal.output)")
        let scripts = try CLI.temporaryDirectory()
        try FileManager.default.copyItem(atPath: CLI.bundledScripts + "/click-through.lua", toPath: scripts + "/click-through.lua")
        let daemon = try Self.daemon(in: client, scripts: scripts, ["--probe-url", "http://probe.v6.test/generate_204"])
        try await daemon.waitForEvent { $0.message == "the name servers router advertisements give v6c0 are 2001:db8:38::1" }
        try await daemon.waitForEvent(timeout: .seconds(30), EventLine.isCommand("authenticate"))
        try await daemon.waitForEvent { $0.event == "state" && $0.to == "authenticated" && $0.helper == "click-through" }
        // The helper's own check after logging in comes before the state.
        #expect(daemon.events.contains { $0.event == "connectivity" && $0.verdict == "connected" && $0.helper == "click-through" })
        daemon.signal(SIGTERM)
        #expect(try await daemon.waitForExit() == 0)
    }
}
