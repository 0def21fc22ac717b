import Foundation

/// Three network namespaces joined by veth pairs: a client with two interfaces, each
/// leading to a host that holds the same address (198.18.1.1) and runs a web server and a
/// resolver. The client's routes prefer host A; only binding reaches host B.
///
///     client vethA0 198.18.1.2 ── vethA1 host A: 198.18.1.1 (+ .20), resolver answers .20
///     client vethB0 198.18.1.3 ── vethB1 host B: 198.18.1.1 (+ .10), resolver answers .10
public final class TwoNetworks: @unchecked Sendable {  // set up in init, torn down in deinit
    public let prefix = "hh\(getpid() % 100_000)"
    public var client: String { prefix + "c" }
    private var servers: [NamespaceServer] = []

    public static let unavailableReason: String? = {
        guard getuid() == 0 else { return "interface-binding tests need root (network namespaces); CI runs them as root" }
        let probe = "hhprobe\(getpid() % 100_000)"
        guard (try? shellStatus("ip netns add \(probe) && ip netns del \(probe)")) == 0 else {
            return "interface-binding tests need `ip netns` (iproute2) and permission to create namespaces"
        }
        return nil
    }()

    public init() throws {
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
        guard try shellStatus(setup) == 0 else {
            removeNamespaces()
            throw CocoaError(.featureUnsupported)
        }
        servers = [
            try NamespaceServer(namespace: a, name: "host A", dnsAnswer: "198.18.1.20"),
            try NamespaceServer(namespace: b, name: "host B", dnsAnswer: "198.18.1.10"),
        ]
    }

    public var interfaceA: String { prefix + "A0" }
    public var interfaceB: String { prefix + "B0" }

    /// `hotspot-helper` run inside the client namespace.
    public func runInClient(_ arguments: [String]) async throws -> CLI.Run {
        try await CLI.run(["-c", "exec ip netns exec \(client) \"$@\"", "sh", CLI.path] + arguments, executable: "/bin/sh")
    }

    public func removeNamespaces() {
        _ = try? shellStatus("for ns in \(client) \(prefix)a \(prefix)b; do ip netns del $ns 2>/dev/null; done; true")
    }

    deinit {
        servers.forEach { $0.stop() }
        removeNamespaces()
    }
}
