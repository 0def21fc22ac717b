import HotspotCore
import HotspotNetwork
import JSON

/// Names of systemd-networkd's D-Bus API that the source uses.
enum NetworkdAPI {
    static let busName = "org.freedesktop.network1"
    static let managerPath = "/org/freedesktop/network1"
    static let manager = "org.freedesktop.network1.Manager"
}

/// Why systemd-networkd's description of its links could not be read.
struct NetworkdDescriptionError: Error, Equatable, CustomStringConvertible {
    let description: String
}

/// What systemd-networkd's `Manager.Describe()` says of the links a source follows: every link
/// it manages, its operational state, its name servers and, from systemd 254, the captive
/// portal URI it recorded from DHCP or a router advertisement. One call describes every link,
/// so the source reads it whole whenever networkd signals a change.
extension ManagerView {
    /// - Parameters:
    ///   - description: the JSON `Describe()` answered.
    ///   - only: the one interface followed, or nil for every link.
    ///   - leaseURI: DHCP option 114 from networkd's lease file of the link with this index,
    ///     for a networkd that does not put it in its description (252 discards it).
    init(networkdDescription description: String, only: String? = nil,
         leaseURI: (Int) -> String? = { _ in nil }) throws(NetworkdDescriptionError) {
        self.init()
        let document: JSONValue
        do {
            document = try JSONValue.parse(Array(description.utf8), maximumDepth: 32)
        } catch {
            throw NetworkdDescriptionError(description: "systemd-networkd's description of its links is not JSON: \(error)")
        }
        guard case .array(let links)? = document["Interfaces"] else {
            throw NetworkdDescriptionError(description: "systemd-networkd's description of its links has no Interfaces array")
        }
        for link in links {
            guard let name = Self.text(link["Name"]), !name.isEmpty, only == nil || only == name else { continue }
            // A link networkd leaves alone (the loopback one among them) is no network of its.
            let administrative = Self.text(link["AdministrativeState"]) ?? ""
            guard Self.text(link["Type"]) != "loopback", !["unmanaged", ""].contains(administrative) else { continue }
            let operational = Self.text(link["OperationalState"]) ?? ""
            let carrier = Self.text(link["CarrierState"]) ?? ""
            if ["failed", "linger"].contains(administrative) || Self.withoutCarrier.contains(carrier) || Self.withoutCarrier.contains(operational) {
                devices[name] = .inactive
            } else if operational == "routable" {
                devices[name] = .activated(network(of: link, named: name, leaseURI: leaseURI), nil)
            } else {
                devices[name] = .activating  // a carrier, still without an address to log in from
            }
        }
    }

    /// States in which a link carries no network.
    private static let withoutCarrier: Set<String> = ["off", "no-carrier", "dormant"]

    /// A routable link's network: a Wi-Fi link's SSID, else its .network file's name without
    /// `.network` (as NetworkManager's connection name stands for the SSID), else its name.
    private mutating func network(of link: JSONValue, named name: String, leaseURI: (Int) -> String?) -> NetworkDescription {
        var ssid = Self.text(link["SSID"]) ?? ""
        if ssid.isEmpty, let file = Self.text(link["NetworkFile"]) {
            let base = file.split(separator: "/").last.map(String.init) ?? ""
            ssid = base.hasSuffix(".network") ? String(base.dropLast(".network".count)) : base
        }
        if ssid.isEmpty { ssid = name }
        var network = NetworkDescription(ssid: ssid, bssid: Self.hardwareAddress(link["BSSID"]) ?? "", interface: name)
        var resolvers: [String] = []
        if case .array(let servers)? = link["DNS"] {
            // IPv4 servers first, then IPv6 ones (an IPv6-only network has only those).
            var ipv6: [String] = []
            for server in servers {
                guard let bytes = Self.bytes(server["Address"]) else { continue }
                switch server["Family"] {
                case .integer(2)? where bytes.count == 4: resolvers.append(bytes.map(String.init).joined(separator: "."))
                case .integer(10)? where bytes.count == 16: ipv6.append(SocketAddress.ipv6Text(bytes[...]))
                default: continue
                }
            }
            resolvers += ipv6
        } else if link["DNS"] != nil {
            problems.append("systemd-networkd's DNS of \(name) is not an array; it is left out")
        }
        network.resolvers = resolvers
        if let uri = Self.text(link["CaptivePortal"]), !uri.isEmpty {
            network.captivePortalAPI = uri
        } else if case .integer(let index)? = link["Index"], let uri = leaseURI(Int(index)) {
            network.captivePortalAPI = uri
        }
        return network
    }

    private static func text(_ value: JSONValue?) -> String? {
        guard case .string(let bytes)? = value else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// An array of bytes, as networkd writes addresses.
    private static func bytes(_ value: JSONValue?) -> [UInt8]? {
        guard case .array(let elements)? = value else { return nil }
        let bytes = elements.compactMap { element -> UInt8? in
            if case .integer(let number) = element { UInt8(exactly: number) } else { nil }
        }
        return bytes.count == elements.count ? bytes : nil
    }

    private static func hardwareAddress(_ value: JSONValue?) -> String? {
        guard let bytes = bytes(value), bytes.count == 6 else { return nil }
        return bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined(separator: ":")
    }
}
