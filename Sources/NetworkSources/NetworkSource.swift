#if canImport(Glibc)
import Glibc
#endif
public import HotspotCore

/// What a source of networks tells the daemon: the device's joins and leaves as the platform
/// sees them, what the platform's own connectivity check says, and the networks in range.
public enum NetworkSourceEvent: Sendable, Equatable {
    /// The device joined a network; `reason` says how the source knows, for the log.
    case joined(NetworkDescription, reason: String)
    /// Something of a joined network that helpers see changed (its resolvers, Captive Portal
    /// API URI, interface or BSSID) without the device leaving it.
    case changed(NetworkDescription)
    /// The device left the network (or, at the start, is not on it); `reason` says why.
    case left(NetworkDescription, reason: String)
    /// The platform's own connectivity check of a joined network changed; `.captive` is a portal.
    case connectivity(ssid: String, ConnectivityState)
    /// The networks in range, as a helper's `filter_scan_list` sees them.
    case scanList([NetworkDescription])
    /// Something the person running the daemon should know: the platform is away or back, a
    /// value that could not be used.
    case note(LogEvent.Level, String)
}

/// Where the daemon learns which networks the device is on: a Linux interface
/// (`InterfaceSource`), NetworkManager (`NetworkManagerSource`). A source watches on a
/// thread of its own and reports through the stream `start` returns.
public protocol NetworkSource: AnyObject, Sendable, CustomStringConvertible {
    /// Whether the source reports connectivity itself (`NetworkSourceEvent.connectivity`):
    /// the daemon then runs no probes of its own on its networks.
    var reportsConnectivity: Bool { get }

    /// Starts watching. The stream begins with the state at the start (a network already
    /// joined is `joined`) and ends after `stop`.
    func start() -> AsyncStream<NetworkSourceEvent>

    /// The passwords helpers supplied in `filter_scan_list`, by SSID, for the platform to
    /// join those networks with; each call replaces the last.
    func supplyPasswords(_ passwords: [String: String])

    func stop()
}

/// A `--source` of `hotspot-helper run`, parsed.
public enum NetworkSourceArgument: Sendable, Hashable, CustomStringConvertible {
    /// `interface:IFACE:SSID`: the interface treated as a joined network with this SSID.
    case interface(String, ssid: String)
    /// `networkmanager`, or `networkmanager:IFACE` for one device only.
    case networkManager(interface: String?)

    public var description: String {
        switch self {
        case .interface(let interface, let ssid): "interface:\(interface):\(ssid)"
        case .networkManager(let interface): "networkmanager" + (interface.map { ":" + $0 } ?? "")
        }
    }

    /// Parses a `--source`; the error says what is wrong and what is expected.
    public static func parse(_ text: String) throws(NetworkSourceError) -> NetworkSourceArgument {
        let parts = text.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false).map(String.init)
        switch parts[0] {
        case "networkmanager":
            guard parts.count <= 2 else { throw NetworkSourceError("expected networkmanager or networkmanager:IFACE, such as networkmanager:wlan0") }
            guard parts.count == 2 else { return .networkManager(interface: nil) }
            guard !parts[1].isEmpty else { throw NetworkSourceError("networkmanager:IFACE needs the interface, such as networkmanager:wlan0") }
            return .networkManager(interface: parts[1])
        case "interface":
            guard parts.count == 3 else { throw NetworkSourceError("expected interface:IFACE:SSID, such as interface:wlan0:Aroma-Guest") }
            guard !parts[1].isEmpty, if_nametoindex(parts[1]) != 0 else {
                throw NetworkSourceError("no network interface called \"\(parts[1])\" (see `ip link`)")
            }
            guard (1...32).contains(parts[2].utf8.count) else { throw NetworkSourceError("the SSID must be 1 to 32 bytes") }
            return .interface(parts[1], ssid: parts[2])
        default:
            throw NetworkSourceError("expected interface:IFACE:SSID (such as interface:wlan0:Aroma-Guest), networkmanager or networkmanager:IFACE")
        }
    }
}

/// Why a source cannot start, or a `--source` names none.
public struct NetworkSourceError: Error, CustomStringConvertible {
    public let description: String

    init(_ description: String) { self.description = description }
}
