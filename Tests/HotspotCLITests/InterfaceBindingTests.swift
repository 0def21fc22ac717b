import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Three network namespaces joined by veth pairs: a client with two interfaces, each
/// leading to a host that holds the same address (198.18.1.1) and runs a web server and a
/// resolver. The client's routes prefer host A; only binding reaches host B.
///
///     client vethA0 198.18.1.2 ── vethA1 host A: 198.18.1.1 (+ .20), resolver answers .20
///     client vethB0 198.18.1.3 ── vethB1 host B: 198.18.1.1 (+ .10), resolver answers .10
final class TwoNetworks: @unchecked Sendable {  // set up in init, torn down in deinit
    let prefix = "hh\(getpid() % 100_000)"
    var client: String { prefix + "c" }
    private var servers: [NamespaceServer] = []

    static let unavailableReason: String? = {
        guard getuid() == 0 else { return "interface-binding tests need root (network namespaces); CI runs them as root" }
        let probe = "hhprobe\(getpid() % 100_000)"
        guard (try? TwoNetworks.shell("ip netns add \(probe) && ip netns del \(probe)")) == 0 else {
            return "interface-binding tests need `ip netns` (iproute2) and permission to create namespaces"
        }
        return nil
    }()

    init() throws {
        let (c, a, b) = (client, prefix + "a", prefix + "b")
        let setup = """
            set -e
            for ns in \(c) \(a) \(b); do ip netns add $ns; ip -n $ns link set lo up; done
            ip link add \(prefix)A0 netns \(c) type veth peer name \(prefix)A1 netns \(a)
            ip link add \(prefix)B0 netns \(c) type veth peer name \(prefix)B1 netns \(b)
            ip -n \(c) addr add 198.18.1.2/24 dev \(prefix)A0
            ip -n \(c) addr add 198.18.1.3/24 dev \(prefix)B0
            ip -n \(a) addr add 198.18.1.1/24 dev \(prefix)A1
            ip -n \(a) addr add 198.18.1.20/24 dev \(prefix)A1
            ip -n \(b) addr add 198.18.1.1/24 dev \(prefix)B1
            ip -n \(b) addr add 198.18.1.10/24 dev \(prefix)B1
            for link in \(prefix)A0 \(prefix)B0; do ip -n \(c) link set $link up; done
            ip -n \(a) link set \(prefix)A1 up
            ip -n \(b) link set \(prefix)B1 up
            ip -n \(c) route add default via 198.18.1.1 dev \(prefix)A0
            """
        guard try Self.shell(setup) == 0 else {
            removeNamespaces()
            throw CocoaError(.featureUnsupported)
        }
        servers = [
            try NamespaceServer(namespace: a, name: "host A", dnsAnswer: "198.18.1.20"),
            try NamespaceServer(namespace: b, name: "host B", dnsAnswer: "198.18.1.10"),
        ]
    }

    var interfaceA: String { prefix + "A0" }
    var interfaceB: String { prefix + "B0" }

    /// `hotspot-helper` run inside the client namespace.
    func runInClient(_ arguments: [String]) async throws -> CLI.Run {
        try await CLI.run(["-c", "exec ip netns exec \(client) \"$@\"", "sh", CLI.path] + arguments, executable: "/bin/sh")
    }

    func removeNamespaces() {
        _ = try? Self.shell("for ns in \(client) \(prefix)a \(prefix)b; do ip netns del $ns 2>/dev/null; done; true")
    }

    deinit {
        servers.forEach { $0.stop() }
        removeNamespaces()
    }

    @discardableResult
    static func shell(_ script: String) throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", script]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus
    }
}

/// A web server (port 80, answers its name) and a resolver (port 53, answers every A
/// question with one address) on sockets made inside a network namespace: a thread
/// that enters the namespace creates them there.
final class NamespaceServer: @unchecked Sendable {
    private var sockets: [Int32] = []

    init(namespace: String, name: String, dnsAnswer: String) throws {
        let ready = DispatchSemaphore(value: 0)
        let thread = Thread { [self] in
            let handle = open("/run/netns/\(namespace)", O_RDONLY)
            guard handle >= 0, Self.enterNetworkNamespace(handle) == 0 else {
                ready.signal()
                return
            }
            close(handle)
            let web = Self.socket(SOCK_STREAM, port: 80)
            let dns = Self.socket(SOCK_DGRAM, port: 53)
            listen(web, 16)
            sockets = [web, dns]
            ready.signal()
            serve(web: web, dns: dns, body: name, answer: dnsAnswer)
        }
        thread.start()
        ready.wait()
        if sockets.isEmpty { throw CocoaError(.fileReadNoPermission, userInfo: [NSLocalizedDescriptionKey: "cannot enter \(namespace)"]) }
    }

    /// setns(fd, CLONE_NEWNET), which Glibc's Swift module leaves out (it needs _GNU_SOURCE).
    private static func enterNetworkNamespace(_ handle: Int32) -> Int32 {
        typealias SetNamespace = @convention(c) (Int32, Int32) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "setns") else { return -1 }
        let cloneNewNet: Int32 = 0x4000_0000
        return unsafeBitCast(symbol, to: SetNamespace.self)(handle, cloneNewNet)
    }

    /// Wakes the serving thread, which closes the sockets itself: closing them here could
    /// let it read from other sockets that reused the numbers.
    func stop() { sockets.forEach { shutdown($0, Int32(SHUT_RDWR)) } }

    private static func socket(_ type: __socket_type, port: UInt16) -> Int32 {
        let socket = Glibc.socket(AF_INET, Int32(type.rawValue), 0)
        var yes: Int32 = 1
        setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in(sin_family: sa_family_t(AF_INET), sin_port: port.bigEndian,
                                  sin_addr: in_addr(s_addr: 0), sin_zero: (0, 0, 0, 0, 0, 0, 0, 0))
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        return socket
    }

    private func serve(web: Int32, dns: Int32, body: String, answer: String) {
        defer { close(web); close(dns) }
        let address = answer.split(separator: ".").compactMap { UInt8($0) }
        var descriptors = [pollfd(fd: web, events: Int16(POLLIN), revents: 0), pollfd(fd: dns, events: Int16(POLLIN), revents: 0)]
        let closed = Int16(POLLNVAL | POLLHUP | POLLERR)
        while poll(&descriptors, 2, -1) > 0, descriptors.allSatisfy({ $0.revents & closed == 0 }) {
            if descriptors[0].revents & Int16(POLLIN) != 0 {
                let client = accept(web, nil, nil)
                guard client >= 0 else { return }
                var request = [UInt8](repeating: 0, count: 4096)
                _ = read(client, &request, request.count)
                let reply = "HTTP/1.1 200 OK\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)"
                _ = reply.withCString { write(client, $0, strlen($0)) }
                close(client)
            }
            if descriptors[1].revents & Int16(POLLIN) != 0 {
                var query = [UInt8](repeating: 0, count: 512)
                var from = sockaddr_in()
                var length = socklen_t(MemoryLayout<sockaddr_in>.size)
                let count = withUnsafeMutablePointer(to: &from) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(dns, &query, 512, 0, $0, &length) }
                }
                guard count > 12 else { return }
                var offset = 12
                while offset < count, query[offset] != 0 { offset += Int(query[offset]) + 1 }
                var reply = Array(query[..<(offset + 5)])
                reply[2] = 0x81
                reply[3] = 0x80
                reply[7] = 1
                reply += [0xC0, 0x0C, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4] + address
                _ = withUnsafePointer(to: &from) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(dns, reply, reply.count, 0, $0, length) }
                }
            }
        }
    }
}

@Suite("Interface binding in network namespaces", .serialized,
       .enabled(if: TwoNetworks.unavailableReason == nil, Comment(rawValue: TwoNetworks.unavailableReason ?? "")))
struct InterfaceBindingTests {
    /// Fetches `url` in authenticate and reports the body (or the error) in a log line.
    static func script(fetching url: String) -> String {
        """
        return {
          name = "Fetcher",
          hosts = { "198.18.1.1", "portal.test" },
          evaluate = function(cmd) return "high" end,
          authenticate = function(cmd)
            local response, problem = cmd:http{ url = "\(url)", timeout = 3 }
            log.info("answer: " .. (response and response.body or problem))
            return "success"
          end,
        }
        """
    }

    func answer(_ run: CLI.Run) -> String? {
        run.events.compactMap { $0["message"] as? String }.first { $0.hasPrefix("answer: ") }.map { String($0.dropFirst(8)) }
    }

    @Test func aBoundRequestLeavesByItsInterfaceWhateverTheRoutesSay() async throws {
        let networks = try await onOwnThread { try TwoNetworks() }
        let directory = try CLI.temporaryDirectory(scripts: ["fetcher.lua": Self.script(fetching: "http://198.18.1.1/")])
        let routed = try await networks.runInClient(["connect", "--scripts", directory, "--json"])
        #expect(answer(routed) == "host A")
        let boundB = try await networks.runInClient(["connect", "--scripts", directory, "--interface", networks.interfaceB, "--json"])
        #expect(answer(boundB) == "host B")
        let boundA = try await networks.runInClient(["connect", "--scripts", directory, "--interface", networks.interfaceA, "--json"])
        #expect(answer(boundA) == "host A")
    }

    @Test func namesResolveThroughTheBoundNetworksResolver() async throws {
        let networks = try await onOwnThread { try TwoNetworks() }
        let directory = try CLI.temporaryDirectory(scripts: ["fetcher.lua": Self.script(fetching: "http://portal.test/")])
        // Both resolvers are 198.18.1.1; only the interface decides which one answers.
        let viaB = try await networks.runInClient(["connect", "--scripts", directory, "--interface", networks.interfaceB,
                                             "--resolver", "198.18.1.1", "--json"])
        #expect(answer(viaB) == "host B")
        let viaA = try await networks.runInClient(["connect", "--scripts", directory, "--interface", networks.interfaceA,
                                             "--resolver", "198.18.1.1", "--json"])
        #expect(answer(viaA) == "host A")
    }
}
