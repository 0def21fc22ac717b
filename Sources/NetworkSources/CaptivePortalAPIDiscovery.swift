#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import HotspotNetwork
import HotspotCore
import Spawning

/// Where the platform has put a network's RFC 8910 Captive Portal API URI (DHCPv4 option
/// 114), best effort: NetworkManager (`nmcli -g DHCP4.OPTION device show IFACE`), then
/// systemd-networkd's lease (`CAPTIVE_PORTAL=`), then ISC dhclient's lease files
/// (`option captive-portal`, `option default-url` or `option unknown-114`). DHCPv6 option 103 and RA option 37
/// are read by none of these here; configure the URI (`--capport-url`) instead.
public enum CaptivePortalAPIDiscovery {
    /// Where the platform keeps what DHCP told it.
    public struct Places: Sendable {
        /// NetworkManager's command line; nil to leave NetworkManager out.
        public var nmcli: String?
        /// systemd-networkd's leases, one file per interface index.
        public var networkdLeases: String
        /// ISC dhclient's lease files (`dhclient*`).
        public var dhclientLeases: String
        /// NetworkManager's own lease files, read through `nmcli`.
        public var networkManagerLeases: String

        public init(nmcli: String?, networkdLeases: String, dhclientLeases: String, networkManagerLeases: String) {
            self.nmcli = nmcli
            self.networkdLeases = networkdLeases
            self.dhclientLeases = dhclientLeases
            self.networkManagerLeases = networkManagerLeases
        }

        public static let system = Places(nmcli: "/usr/bin/nmcli", networkdLeases: "/run/systemd/netif/leases",
                                          dhclientLeases: "/var/lib/dhcp", networkManagerLeases: "/var/lib/NetworkManager")

        /// The directories whose changes can change what `uri` finds.
        var leaseDirectories: [String] { [networkdLeases, dhclientLeases, networkManagerLeases] }
    }

    /// The URI and where it was found, or nil when no source has one.
    public static func uri(forInterface interface: String, in places: Places = .system) -> (uri: String, source: String)? {
        if let nmcli = places.nmcli, let output = run(nmcli, ["-g", "DHCP4.OPTION", "device", "show", interface]),
           let uri = fromNetworkManager(output) {
            return (uri, "NetworkManager")
        }
        let index = if_nametoindex(interface)
        if index != 0, let lease = try? String(contentsOfFile: "\(places.networkdLeases)/\(index)", encoding: .utf8),
           let uri = fromNetworkdLease(lease) {
            return (uri, "systemd-networkd")
        }
        let leaseDirectory = places.dhclientLeases
        for name in (try? FileManager.default.contentsOfDirectory(atPath: leaseDirectory)) ?? [] where name.hasPrefix("dhclient") {
            if let leases = try? String(contentsOfFile: leaseDirectory + "/" + name, encoding: .utf8),
               let uri = fromDhclientLeases(leases, interface: interface) {
                return (uri, "dhclient")
            }
        }
        return nil
    }

    /// NetworkManager names option 114 `captive_portal` (or `unknown_114` in older versions),
    /// and `default_url` with its dhclient backend, which knows the option by RFC 3679's name.
    static let networkManagerOptionNames = ["captive_portal", "default_url", "unknown_114", "option_114"]

    /// The option in `nmcli -g DHCP4.OPTION`'s output: `name = value` separated by ` | ` or new lines.
    static func fromNetworkManager(_ output: String) -> String? {
        let entries = output.split(whereSeparator: { $0 == "\n" }).flatMap { $0.components(separatedBy: " | ") }
        for entry in entries {
            let parts = entry.split(separator: "=", maxSplits: 1).map { $0.trimmingWhitespace() }
            if parts.count == 2, networkManagerOptionNames.contains(parts[0]), !parts[1].isEmpty {
                return parts[1]
            }
        }
        return nil
    }

    static func fromNetworkdLease(_ lease: String) -> String? {
        lease.split(separator: "\n").first { $0.hasPrefix("CAPTIVE_PORTAL=") }.map { String($0.dropFirst("CAPTIVE_PORTAL=".count)) }
    }

    /// The option in the last lease of `interface`: a quoted string, or colon-separated hex.
    static func fromDhclientLeases(_ leases: String, interface: String) -> String? {
        let blocks = leases.components(separatedBy: "lease {").filter { $0.contains("interface \"\(interface)\";") }
        guard let last = blocks.last else { return nil }
        for line in last.split(separator: "\n").map({ $0.trimmingWhitespace() }) {
            guard let name = ["option captive-portal ", "option default-url ", "option unknown-114 "].first(where: { line.hasPrefix($0) }) else { continue }
            let value = line.dropFirst(name.count).trimming(";")
            if value.hasPrefix("\"") { return String(value.trimming("\"")) }
            let bytes = value.split(separator: ":").compactMap { UInt8($0, radix: 16) }
            return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self)
        }
        return nil
    }

    private static func run(_ executable: String, _ arguments: [String]) -> String? {
        guard let finished = Subprocess.run(executable, arguments), finished.exitStatus == 0 else { return nil }
        return String(decoding: finished.output, as: UTF8.self)
    }
}

extension Substring {
    /// Without `character` at either end, however many times it is there.
    fileprivate func trimming(_ character: Character) -> Substring {
        let start = firstIndex { $0 != character } ?? endIndex
        let end = lastIndex { $0 != character }.map(index(after:)) ?? start
        return self[start..<end]
    }
}
