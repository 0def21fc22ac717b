#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import HotspotNetwork
import HotspotCore
import Spawning
import LinuxFiles

/// Where the platform has put a network's RFC 8910 Captive Portal API URI (DHCPv4 option
/// 114), best effort: NetworkManager (`nmcli -g DHCP4.OPTION device show IFACE`), then
/// systemd-networkd's lease (`CAPTIVE_PORTAL=`), then ISC dhclient's lease files
/// (`option captive-portal`, `option default-url` or `option unknown-114`, and DHCPv6 option
/// 103 in `dhclient -6`'s: `option dhcp6.captive-portal`, which dhclient.conf declares, or
/// `option dhcp6.unknown-103`). A router advertisement's option 37 comes from the kernel
/// instead (`RouterOption`).
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
        firstFound(interface, places, nmcliField: "DHCP4.OPTION", fromNetworkManager,
                   fromNetworkdLease, { fromDhclientLeases($0, interface: interface) })
            .map { (uri: $0.found, source: $0.source) }
    }

    /// The name servers DHCP gave `interface` (IPv4, and IPv6 from `dhclient -6`), and where they were found, or nil: the
    /// network's own resolvers, which a VPN that owns the system's resolver does not replace.
    public static func nameServers(forInterface interface: String, in places: Places = .system) -> (servers: [String], source: String)? {
        firstFound(interface, places, nmcliField: "IP4.DNS", { addresses(networkManagerValues($0)) },
                   { lease in addresses(lease.split(separator: "\n").first { $0.hasPrefix("DNS=") }?.dropFirst(4).split(separator: " ") ?? []) },
                   { leases in
                       addresses(dhclientOption(leases, interface: interface,
                                                names: ["option domain-name-servers ", "option dhcp6.name-servers "])?
                           .split(separator: ",") ?? [])
                   })
            .map { (servers: $0.found, source: $0.source) }
    }

    /// What the first source that has it says: NetworkManager's `nmcliField`, then
    /// systemd-networkd's lease, then dhclient's lease files, each read by its function.
    private static func firstFound<Found>(
        _ interface: String, _ places: Places, nmcliField: String, _ fromNetworkManager: (String) -> Found?,
        _ fromNetworkdLease: (String) -> Found?, _ fromDhclientLeases: (String) -> Found?
    ) -> (found: Found, source: String)? {
        if let nmcli = places.nmcli, let output = run(nmcli, ["-g", nmcliField, "device", "show", interface]),
           let found = fromNetworkManager(output) {
            return (found, "NetworkManager")
        }
        let index = if_nametoindex(interface)
        if index != 0, let lease = text(of: "\(places.networkdLeases)/\(index)"), let found = fromNetworkdLease(lease) {
            return (found, "systemd-networkd")
        }
        let leaseDirectory = places.dhclientLeases
        for name in (try? FileManager.default.contentsOfDirectory(atPath: leaseDirectory)) ?? [] where name.hasPrefix("dhclient") {
            if let leases = text(of: leaseDirectory + "/" + name), let found = fromDhclientLeases(leases) {
                return (found, "dhclient")
            }
        }
        return nil
    }

    /// A lease file's text, opened as every file the project reads is (a FIFO there blocks nothing).
    private static func text(of file: String) -> String? {
        (try? BoundedFile.read(file, limit: BoundedFile.mebibyte)).map { String(decoding: $0, as: UTF8.self) }
    }

    /// The addresses a resolver can be asked at; nil when there are none.
    private static func addresses(_ values: [Substring]) -> [String]? {
        let found = values.map { $0.trimmingWhitespace() }.filter(NetworkBinding.isResolverAddress)
        return found.isEmpty ? nil : found
    }

    /// The values of `nmcli -g`'s output: separated by ` | ` or new lines.
    private static func networkManagerValues(_ output: String) -> [Substring] {
        output.split(whereSeparator: { $0 == "\n" }).flatMap { $0.split(separator: "|") }
    }

    /// NetworkManager names option 114 `captive_portal` (or `unknown_114` in older versions),
    /// and `default_url` with its dhclient backend, which knows the option by RFC 3679's name.
    static let networkManagerOptionNames = ["captive_portal", "default_url", "unknown_114", "option_114"]

    /// The option in `nmcli -g DHCP4.OPTION`'s output: `name = value` separated by ` | ` or new lines.
    static func fromNetworkManager(_ output: String) -> String? {
        for entry in networkManagerValues(output) {
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
        guard let value = dhclientOption(leases, interface: interface,
                                         names: ["option captive-portal ", "option default-url ", "option unknown-114 ",
                                                 "option dhcp6.captive-portal ", "option dhcp6.unknown-103 "]) else { return nil }
        if value.hasPrefix("\"") { return String(value.trimming("\"")) }
        let bytes = value.split(separator: ":").compactMap { UInt8($0, radix: 16) }
        return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self)
    }

    /// The value of the first of `names` in the last lease of `interface` (DHCPv4's `lease`
    /// or DHCPv6's `lease6`), without its `;`.
    private static func dhclientOption(_ leases: String, interface: String, names: [String]) -> Substring? {
        let blocks = leases.replacing("lease6 {", with: "lease {").components(separatedBy: "lease {").filter { $0.contains("interface \"\(interface)\";") }
        guard let last = blocks.last else { return nil }
        for line in last.split(separator: "\n").map({ $0.trimmingWhitespace() }) {
            if let name = names.first(where: { line.hasPrefix($0) }) { return line.dropFirst(name.count).trimming(";") }
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
