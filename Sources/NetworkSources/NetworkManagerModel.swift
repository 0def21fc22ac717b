import HotspotCore
import HotspotNetwork
import DBusClient

/// Names of NetworkManager's D-Bus API that the source uses.
enum NetworkManagerAPI {
    static let busName = "org.freedesktop.NetworkManager"
    static let managerPath = "/org/freedesktop/NetworkManager"
    static let manager = "org.freedesktop.NetworkManager"
    /// Where its ObjectManager lives: every object, and their interfaces coming and going.
    static let objectManagerPath = "/org/freedesktop"
    static let device = "org.freedesktop.NetworkManager.Device"
    static let wireless = "org.freedesktop.NetworkManager.Device.Wireless"
    static let loopback = "org.freedesktop.NetworkManager.Device.Loopback"
    static let accessPoint = "org.freedesktop.NetworkManager.AccessPoint"
    static let activeConnection = "org.freedesktop.NetworkManager.Connection.Active"
    /// A profile: its settings come from GetSettings, not as properties.
    static let profile = "org.freedesktop.NetworkManager.Settings.Connection"
    static let ip4Config = "org.freedesktop.NetworkManager.IP4Config"
    static let ip6Config = "org.freedesktop.NetworkManager.IP6Config"
    static let dhcp4Config = "org.freedesktop.NetworkManager.DHCP4Config"
    static let agentManagerPath = "/org/freedesktop/NetworkManager/AgentManager"
    static let agentManager = "org.freedesktop.NetworkManager.AgentManager"
    static let secretAgentPath = "/org/freedesktop/NetworkManager/SecretAgent"
    static let secretAgent = "org.freedesktop.NetworkManager.SecretAgent"
    static let noSecrets = "org.freedesktop.NetworkManager.SecretAgent.NoSecrets"

    /// NMDeviceState: activated; from prepare to secondaries the device is on its way there.
    static let activated: UInt64 = 100
    static let activating: ClosedRange<UInt64> = 40...90
    /// NMDeviceType: loopback (1.42 and later).
    static let loopbackType: UInt64 = 32
}

/// NetworkManager's objects as the source mirrors them: object path → interface → property.
/// Loaded whole from its ObjectManager and kept current from its signals, so finding what a
/// device is on needs no call to NetworkManager.
struct NetworkManagerObjects {
    typealias Properties = [String: BusValue]

    private(set) var objects: [String: [String: Properties]] = [:]
    /// Whether NetworkManager activates a profile by itself (its `connection.autoconnect`), by
    /// the profile's path: read with GetSettings for the profiles of active connections, since
    /// NetworkManager does not say why it activated one.
    var autoconnects: [String: Bool] = [:]

    /// The profiles of active connections whose `autoconnect` is not read yet.
    var profilesToRead: [String] {
        Set(objects.values.compactMap { $0[NetworkManagerAPI.activeConnection]?["Connection"]?.reference })
            .filter { autoconnects[$0] == nil }.sorted()
    }

    /// `connection.autoconnect` in GetSettings' answer (`a{sa{sv}}`), true where it is not
    /// set, as NetworkManager defaults it; nil for an answer of another shape.
    static func autoconnect(inSettings settings: BusValue) -> Bool? {
        guard let groups = settings.stringKeyed else { return nil }
        guard let value = groups["connection"]?.stringKeyed?["autoconnect"] else { return true }
        return value.boolean
    }

    subscript(path: String?, interface: String) -> Properties? {
        path.flatMap { objects[$0]?[interface] }
    }

    /// Replaces everything with what `GetManagedObjects` answered (`a{oa{sa{sv}}}`); false
    /// when the answer is not of that shape.
    mutating func load(_ managed: BusValue) -> Bool {
        guard case .array("{oa{sa{sv}}}", let entries) = managed else { return false }
        objects = [:]
        autoconnects = [:]
        for case .dictionaryEntry(.objectPath(let path), let interfaces) in entries { add(path, interfaces: interfaces) }
        return true
    }

    /// ObjectManager's InterfacesAdded: `interfaces` is `a{sa{sv}}`.
    mutating func add(_ path: String, interfaces: BusValue) {
        for (interface, properties) in interfaces.stringKeyed ?? [:] {
            objects[path, default: [:]][interface, default: [:]].merge(properties.stringKeyed ?? [:]) { $1 }
        }
    }

    /// ObjectManager's InterfacesRemoved.
    mutating func remove(_ path: String, interfaces: [String]) {
        interfaces.forEach { objects[path]?[$0] = nil }
        if objects[path]?.isEmpty == true { objects[path] = nil }
    }

    /// DeviceRemoved and AccessPointRemoved, for a NetworkManager that sends no
    /// InterfacesRemoved with them.
    mutating func removeObject(_ path: String) { objects[path] = nil }

    /// A PropertiesChanged: `changed` is `a{sv}`.
    mutating func change(_ path: String, interface: String, _ changed: BusValue) {
        objects[path, default: [:]][interface, default: [:]].merge(changed.stringKeyed ?? [:]) { $1 }
    }

    mutating func removeAll() {
        objects = [:]
        autoconnects = [:]
    }

    /// Whether `value` names an object not mirrored (one announced by no InterfacesAdded).
    func namesUnknownObjects(_ value: BusValue) -> Bool {
        switch value {
        case .objectPath(let path): path != "/" && objects[path] == nil
        case .array(_, let elements), .structure(let elements): elements.contains(where: namesUnknownObjects)
        case .dictionaryEntry(let key, let value): namesUnknownObjects(key) || namesUnknownObjects(value)
        case .variant(let inner): namesUnknownObjects(inner)
        default: false
        }
    }
}

/// What NetworkManager's objects say of the devices a source follows.
extension ManagerView {
    /// The view of `objects` for the device with interface `only`, or every device.
    init(_ objects: NetworkManagerObjects, only: String? = nil) {
        self.init()
        var reader = PropertyReader()
        let manager = objects[NetworkManagerAPI.managerPath, NetworkManagerAPI.manager]
        isStarting = reader.boolean(manager, "Startup", of: NetworkManagerAPI.managerPath) ?? false
        let managerConnectivity = reader.unsigned(manager, "Connectivity", of: NetworkManagerAPI.managerPath)
        for (path, interfaces) in objects.objects.sorted(by: { $0.key < $1.key }) {
            guard let device = interfaces[NetworkManagerAPI.device] else { continue }
            let kernelName = reader.string(device, "Interface", of: path) ?? ""
            let ipName = reader.string(device, "IpInterface", of: path) ?? ""
            let name = ipName.isEmpty ? kernelName : ipName
            guard !name.isEmpty, only == nil || only == name || only == kernelName else { continue }
            // The loopback device, which NetworkManager 1.42 lists and activates, is no network.
            guard interfaces[NetworkManagerAPI.loopback] == nil,
                  reader.unsigned(device, "DeviceType", of: path) != NetworkManagerAPI.loopbackType else { continue }
            let wireless = interfaces[NetworkManagerAPI.wireless]
            if let wireless {
                let accessPoints = reader.references(wireless, "AccessPoints", of: path) ?? []
                scanList += accessPoints.compactMap { reader.accessPoint(objects, $0, interface: name) }
                lastScans.append(reader.signed(wireless, "LastScan", of: path) ?? 0)
            }
            switch reader.unsigned(device, "State", of: path) ?? 0 {
            case NetworkManagerAPI.activated:
                // A Wi-Fi device whose access point has gone (out of range, the access point
                // restarting) stays activated while wpa_supplicant looks for it again: still on
                // its network, not on one named after the connection.
                if wireless != nil, reader.accessPointIsGone(objects, device: path) {
                    devices[name] = .activating
                    continue
                }
                guard let network = reader.network(objects, device: path, interface: name, isWireless: wireless != nil) else {
                    devices[name] = .inactive
                    continue
                }
                let connectivity = reader.unsigned(device, "Ip4Connectivity", of: path) ?? managerConnectivity
                devices[name] = .activated(network, connectivity.flatMap(Self.connectivity))
                // A profile NetworkManager never activates by itself was activated at someone's request.
                let active = objects[reader.reference(device, "ActiveConnection", of: path), NetworkManagerAPI.activeConnection]
                if let profile = active?["Connection"]?.reference, objects.autoconnects[profile] == false {
                    joinedOnRequest.insert(name)
                }
            case NetworkManagerAPI.activating:
                devices[name] = .activating
            default:
                devices[name] = .inactive
            }
        }
        // An access point is read for the scan list and again as the one a device is on.
        var seen: Set<String> = []
        problems = reader.problems.filter { seen.insert($0).inserted }
    }

    /// NMConnectivityState in the project's words; nil for unknown (no check configured, or
    /// none done yet).
    static func connectivity(_ state: UInt64) -> ConnectivityState? {
        switch state {
        case 1: .notConnected
        case 2: .captive
        case 3: .connectedWithoutInternet
        case 4: .connected
        default: nil
        }
    }
}

/// Reads NetworkManager's properties, noting each one of a type it did not expect rather than
/// failing: what NetworkManager (or anything owning its name) sends is input like any other.
private struct PropertyReader {
    var problems: [String] = []

    private mutating func read<Value>(_ properties: NetworkManagerObjects.Properties?, _ name: String, of path: String,
                                      expected: String, _ convert: (BusValue) -> Value?) -> Value? {
        guard let value = properties?[name] else { return nil }
        guard let converted = convert(value) else {
            problems.append("NetworkManager's \(path) has a \(name) that is \(value.kind), not \(expected); it is left out")
            return nil
        }
        return converted
    }

    mutating func string(_ properties: NetworkManagerObjects.Properties?, _ name: String, of path: String) -> String? {
        read(properties, name, of: path, expected: "a string") { $0.string }
    }

    mutating func unsigned(_ properties: NetworkManagerObjects.Properties?, _ name: String, of path: String) -> UInt64? {
        read(properties, name, of: path, expected: "an unsigned integer") { $0.unsigned }
    }

    mutating func signed(_ properties: NetworkManagerObjects.Properties?, _ name: String, of path: String) -> Int64? {
        read(properties, name, of: path, expected: "an integer") { value in
            if case .int64(let number) = value.unwrapped { return number }
            return value.unsigned.flatMap { Int64(exactly: $0) }
        }
    }

    mutating func boolean(_ properties: NetworkManagerObjects.Properties?, _ name: String, of path: String) -> Bool? {
        read(properties, name, of: path, expected: "a boolean") { $0.boolean }
    }

    /// An object path; nil for `/`, NetworkManager's "none", too.
    mutating func reference(_ properties: NetworkManagerObjects.Properties?, _ name: String, of path: String) -> String? {
        let reference = read(properties, name, of: path, expected: "an object path") { value in
            if case .objectPath(let path) = value.unwrapped { path } else { nil }
        }
        return reference == "/" ? nil : reference
    }

    mutating func references(_ properties: NetworkManagerObjects.Properties?, _ name: String, of path: String) -> [String]? {
        read(properties, name, of: path, expected: "an array of object paths") { $0.references }
    }

    /// The network a device activated: for Wi-Fi, the access point its active connection
    /// names (SpecificObject); for anything else, or an access point it does not name, the
    /// connection's name (Id) stands for the SSID.
    mutating func network(_ objects: NetworkManagerObjects, device path: String, interface: String,
                          isWireless: Bool) -> NetworkDescription? {
        let device = objects[path, NetworkManagerAPI.device]
        let activePath = reference(device, "ActiveConnection", of: path)
        let active = objects[activePath, NetworkManagerAPI.activeConnection]
        var network: NetworkDescription?
        if isWireless, let activePath, let accessPointPath = reference(active, "SpecificObject", of: activePath) {
            network = accessPoint(objects, accessPointPath, interface: interface)
        }
        if network == nil, let activePath, let id = string(active, "Id", of: activePath), !id.isEmpty {
            network = NetworkDescription(ssid: id, interface: interface)
        }
        guard var network else {
            problems.append("NetworkManager activated \(interface) without a connection name or an SSID; it is not joined")
            return nil
        }
        if let configPath = reference(device, "Ip4Config", of: path) {
            network.resolvers = nameServers(objects[configPath, NetworkManagerAPI.ip4Config], of: configPath)
        }
        // IPv6 servers after IPv4 ones (an IPv6-only network has only those): from DHCPv6 or
        // the router advertisement's RDNSS, which NetworkManager reads itself.
        if let configPath = reference(device, "Ip6Config", of: path),
           let servers = read(objects[configPath, NetworkManagerAPI.ip6Config], "Nameservers", of: configPath, expected: "an array of byte arrays",
                              { $0.elements.map { $0.compactMap(\.bytes) } }) {
            for server in servers where server.count == 16 {
                let text = SocketAddress.ipv6Text(server[...])
                if !network.resolvers.contains(text) { network.resolvers.append(text) }
            }
        }
        if let dhcpPath = reference(device, "Dhcp4Config", of: path),
           let options = read(objects[dhcpPath, NetworkManagerAPI.dhcp4Config], "Options", of: dhcpPath, expected: "a dictionary", { $0.stringKeyed }) {
            // RFC 8910: NetworkManager's dhclient backend names option 114 default_url.
            network.captivePortalAPI = CaptivePortalAPIDiscovery.networkManagerOptionNames.lazy.compactMap { options[$0]?.string }.first
            network.captivePortalAPIIsFromLink = network.captivePortalAPI != nil
        }
        return network
    }

    /// Whether a device's active connection names no access point (`/`, as NetworkManager 1.42
    /// says once it lost it) or one no longer among NetworkManager's objects.
    mutating func accessPointIsGone(_ objects: NetworkManagerObjects, device path: String) -> Bool {
        guard let activePath = reference(objects[path, NetworkManagerAPI.device], "ActiveConnection", of: path),
              case .objectPath(let accessPointPath)? = objects[activePath, NetworkManagerAPI.activeConnection]?["SpecificObject"]?.unwrapped
        else { return false }
        return accessPointPath == "/" || objects.objects[accessPointPath] == nil
    }

    /// An access point as a helper sees it in the scan list; nil for a hidden network (no SSID).
    mutating func accessPoint(_ objects: NetworkManagerObjects, _ path: String, interface: String) -> NetworkDescription? {
        guard let properties = objects[path, NetworkManagerAPI.accessPoint],
              let bytes = read(properties, "Ssid", of: path, expected: "an array of bytes", { $0.bytes }), !bytes.isEmpty else { return nil }
        let ssid = String.ssid(bytes)
        if ssid.escaped {
            problems.append("the SSID of NetworkManager's \(path) is not plain UTF-8 text; helpers see it written \(ssid.text)")
        }
        let strength = unsigned(properties, "Strength", of: path).map { min(Double($0), 100) / 100 } ?? 1
        let privacy = (unsigned(properties, "Flags", of: path) ?? 0) & 0x1 != 0  // NM_802_11_AP_FLAGS_PRIVACY
        let wpa = (unsigned(properties, "WpaFlags", of: path) ?? 0) != 0
        let rsn = (unsigned(properties, "RsnFlags", of: path) ?? 0) != 0
        return NetworkDescription(ssid: ssid.text, bssid: string(properties, "HwAddress", of: path) ?? "", signalStrength: strength,
                                  isSecure: privacy || wpa || rsn, interface: interface)
    }

    /// NameserverData's addresses (NetworkManager 1.14 and later), else Nameservers' (IPv4 in
    /// network byte order).
    private mutating func nameServers(_ config: NetworkManagerObjects.Properties?, of path: String) -> [String] {
        if let data = read(config, "NameserverData", of: path, expected: "an array of dictionaries", { $0.elements }) {
            return data.compactMap { $0.stringKeyed?["address"]?.string }
        }
        let numbers = read(config, "Nameservers", of: path, expected: "an array of integers") { value in
            value.elements.map { $0.compactMap(\.unsigned) }
        } ?? []
        return numbers.map { number in (0..<4).map { String((number >> (8 * $0)) & 0xff) }.joined(separator: ".") }
    }
}

/// What the secret agent answers NetworkManager's GetSecrets: a Wi-Fi pre-shared key a helper
/// supplied for the network's SSID, and nothing else.
enum SecretAgentAnswer: Equatable {
    /// The reply (`a{sa{sv}}`), for `ssid`.
    case secrets(BusValue, ssid: String)
    /// A NoSecrets error, and why.
    case refused(String)

    static let wirelessSecurity = "802-11-wireless-security"
    /// NM_SECRET_AGENT_GET_SECRETS_FLAG_REQUEST_NEW: the secret given last was wrong.
    static let requestNew: UInt32 = 0x2

    /// - Parameters:
    ///   - connection: the connection's settings (`a{sa{sv}}`), as GetSecrets sends them.
    ///   - passwords: the helpers' passwords, by SSID.
    init(connection: BusValue, setting: String, hints: [String], flags: UInt32, passwords: [String: String]) {
        let settings = connection.stringKeyed ?? [:]
        guard setting == Self.wirelessSecurity else {
            self = .refused("hotspot-helper gives Wi-Fi passwords only, not the secrets of \(setting)")
            return
        }
        let keyManagement = settings[Self.wirelessSecurity]?.stringKeyed?["key-mgmt"]?.string ?? ""
        guard ["wpa-psk", "sae"].contains(keyManagement) else {
            self = .refused("hotspot-helper gives pre-shared keys only (wpa-psk, sae), not \(keyManagement.isEmpty ? "none" : keyManagement)")
            return
        }
        guard hints.isEmpty || hints.contains("psk") else {
            self = .refused("hotspot-helper gives the psk only, not \(hints.joined(separator: ", "))")
            return
        }
        guard let bytes = settings["802-11-wireless"]?.stringKeyed?["ssid"]?.bytes else {
            self = .refused("the connection names no SSID")
            return
        }
        let ssid = String.ssid(bytes).text
        guard let password = passwords[ssid] else {
            self = .refused("no helper supplied a password for \(ssid)")
            return
        }
        guard flags & Self.requestNew == 0 else {
            self = .refused("the password a helper supplied for \(ssid) did not work, and there is no other")
            return
        }
        self = .secrets(.dictionary([(Self.wirelessSecurity, .dictionary([("psk", .variant(.string(password)))], valueSignature: "v"))],
                                    valueSignature: "a{sv}"), ssid: ssid)
    }
}
