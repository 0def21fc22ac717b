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
/// (`InterfaceSource`), NetworkManager (`NetworkManagerSource`), ConnMan (`ConnManSource`),
/// systemd-networkd (`NetworkdSource`), or whichever of them the device runs (`AutoSource`). A source watches on a
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

    /// The helpers are done with a joined network for now: its join, or the maintain a
    /// captive verdict brought forward, ended authenticated or not. A source holding a request
    /// of the platform's until then (ConnMan's RequestBrowser) answers it.
    func helpersFinished(with ssid: String, authenticated: Bool)

    func stop()
}

extension NetworkSource {
    /// Most platforms wait for nothing of the helpers'.
    public func helpersFinished(with ssid: String, authenticated: Bool) {}
}

/// A `--source` of `hotspot-helper run`, parsed.
public enum NetworkSourceArgument: Sendable, Hashable, CustomStringConvertible {
    /// `interface:IFACE:SSID`: the interface treated as a joined network with this SSID.
    case interface(String, ssid: String)
    /// `networkmanager`, or `networkmanager:IFACE` for one device only.
    case networkManager(interface: String?)
    /// `networkd`, or `networkd:IFACE` for one link only: systemd-networkd.
    case networkd(interface: String?)
    /// `connman`, or `connman:IFACE` for one interface only.
    case connman(interface: String?)
    /// `auto`: whichever manager runs on the device, else its interfaces that are up.
    case auto

    public var description: String {
        switch self {
        case .interface(let interface, let ssid): "interface:\(interface):\(ssid)"
        case .networkManager(let interface): "networkmanager" + (interface.map { ":" + $0 } ?? "")
        case .networkd(let interface): "networkd" + (interface.map { ":" + $0 } ?? "")
        case .connman(let interface): "connman" + (interface.map { ":" + $0 } ?? "")
        case .auto: "auto"
        }
    }

    /// The interface a manager's source follows alone, nil for every one (or for no manager).
    public var managedInterface: String? {
        switch self {
        case .networkManager(let interface), .networkd(let interface), .connman(let interface): interface
        case .interface, .auto: nil
        }
    }

    /// Whether both follow the same manager (whatever their interfaces).
    public func sameManager(as other: NetworkSourceArgument) -> Bool {
        switch (self, other) {
        case (.networkManager, .networkManager), (.networkd, .networkd), (.connman, .connman), (.auto, .auto): true
        default: false
        }
    }

    /// Parses a `--source`; the error says what is wrong and what is expected.
    public static func parse(_ text: String) throws(NetworkSourceError) -> NetworkSourceArgument {
        let parts = text.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false).map(String.init)
        switch parts[0] {
        case "networkmanager", "networkd", "connman":
            let example = parts[0] == "networkd" ? "eth0" : "wlan0"
            guard parts.count <= 2 else { throw NetworkSourceError("expected \(parts[0]) or \(parts[0]):IFACE, such as \(parts[0]):\(example)") }
            guard parts.count == 1 || !parts[1].isEmpty else {
                throw NetworkSourceError("\(parts[0]):IFACE needs the interface, such as \(parts[0]):\(example)")
            }
            let interface = parts.count == 2 ? parts[1] : nil
            switch parts[0] {
            case "networkd": return .networkd(interface: interface)
            case "connman": return .connman(interface: interface)
            default: return .networkManager(interface: interface)
            }
        case "auto":
            guard parts.count == 1 else { throw NetworkSourceError("auto takes no interface: it follows whatever manages the device's") }
            return .auto
        case "interface":
            guard parts.count == 3 else { throw NetworkSourceError("expected interface:IFACE:SSID, such as interface:wlan0:Aroma-Guest") }
            guard !parts[1].isEmpty, if_nametoindex(parts[1]) != 0 else {
                throw NetworkSourceError("no network interface called \"\(parts[1])\" (see `ip link`)")
            }
            if let problem = String.ssidProblem(parts[2]) { throw NetworkSourceError(problem) }
            return .interface(parts[1], ssid: parts[2])
        default:
            throw NetworkSourceError("expected interface:IFACE:SSID (such as interface:wlan0:Aroma-Guest), networkmanager[:IFACE], "
                                     + "connman[:IFACE], networkd[:IFACE] or auto")
        }
    }
}

/// Why a source cannot start, or a `--source` names none.
public struct NetworkSourceError: Error, CustomStringConvertible {
    public let description: String

    init(_ description: String) { self.description = description }
}
