import HotspotCore
import DBusClient

/// Names of ConnMan's D-Bus API that the source uses.
enum ConnManAPI {
    static let busName = "net.connman"
    static let managerPath = "/"
    static let manager = "net.connman.Manager"
    static let service = "net.connman.Service"
    static let agent = "net.connman.Agent"
    /// Where the source serves ConnMan's agent.
    static let agentPath = "/hotspot_helper/connman_agent"
    /// What an agent answers a request it will not satisfy.
    static let canceled = "net.connman.Agent.Error.Canceled"
}

/// ConnMan's services as the source mirrors them, in ConnMan's order (its preference), each
/// with its properties. Loaded from `GetServices`, kept current from `ServicesChanged` (the
/// whole order, with the properties of new services and of changed ones) and each service's
/// `PropertyChanged`: ConnMan's properties are not on org.freedesktop.DBus.Properties.
struct ConnManServices {
    typealias Properties = [String: BusValue]

    private(set) var order: [String] = []
    private(set) var properties: [String: Properties] = [:]

    /// `GetServices`' answer, or `ServicesChanged`'s first argument (`a(oa{sv})`), with the
    /// services `removed`; false, and nothing changed, when it is not of that shape.
    mutating func apply(_ services: BusValue, removed: [String] = []) -> Bool {
        guard case .array("(oa{sv})", let entries) = services else { return false }
        var newOrder: [String] = []
        for case .structure(let fields) in entries {
            guard fields.count == 2, case .objectPath(let path) = fields[0] else { continue }
            newOrder.append(path)
            properties[path, default: [:]].merge(fields[1].stringKeyed ?? [:]) { $1 }
        }
        removed.forEach { properties[$0] = nil }
        order = newOrder.filter { properties[$0] != nil }
        for path in properties.keys where !order.contains(path) { properties[path] = nil }
        return true
    }

    /// A service's `PropertyChanged(name, value)`; a service not listed is left alone.
    mutating func change(_ path: String, name: String, _ value: BusValue) {
        guard properties[path] != nil else { return }
        properties[path]?[name] = value.unwrapped
    }

    mutating func removeAll() { (order, properties) = ([], [:]) }

    /// The SSID (or name) of the network a service is, for the agent's requests.
    func name(of path: String) -> String? {
        guard let properties = properties[path] else { return nil }
        let service = ConnManService(properties)
        return service.network(interface: service.interface ?? "").ssid
    }
}

/// One of ConnMan's services, read leniently: a value of an unexpected type is a problem
/// named, and left out.
struct ConnManService {
    let properties: ConnManServices.Properties
    var problems: [String] = []

    init(_ properties: ConnManServices.Properties) { self.properties = properties }

    var type: String { properties["Type"]?.string ?? "" }
    var state: String { properties["State"]?.string ?? "idle" }
    var interface: String? { properties["Ethernet"]?.stringKeyed?["Interface"]?.string.flatMap { $0.isEmpty ? nil : $0 } }

    /// The network as a helper sees it: a Wi-Fi service's SSID (ConnMan's `Name`), strength
    /// and security; another service's `Name` ("Wired"), else the interface's.
    func network(interface: String) -> NetworkDescription {
        let name = properties["Name"]?.string ?? ""
        let strength = properties["Strength"]?.unsigned.map { min(Double($0), 100) / 100 } ?? 1
        let security = properties["Security"]?.elements?.compactMap(\.string) ?? []
        var network = NetworkDescription(ssid: name.isEmpty ? interface : name, signalStrength: type == "wifi" ? strength : 1,
                                         isSecure: security.contains { !["none", "wps"].contains($0) }, interface: interface)
        // The project's resolver asks IPv4 servers only.
        // IPv4 servers first, then IPv6 ones (an IPv6-only network has only those).
        let servers = properties["Nameservers"]?.elements?.compactMap(\.string) ?? []
        network.resolvers = servers.filter { !$0.contains(":") } + servers.filter { $0.contains(":") }
        return network
    }

    /// Values that are there but of a type ConnMan does not send, in words.
    func problems(of path: String) -> [String] {
        let expected: [(String, String, (BusValue) -> Bool)] = [
            ("State", "a string", { $0.string != nil }), ("Name", "a string", { $0.string != nil }),
            ("Type", "a string", { $0.string != nil }), ("Strength", "a byte", { $0.unsigned != nil }),
            ("Security", "an array of strings", { $0.elements != nil }), ("Nameservers", "an array of strings", { $0.elements != nil }),
            ("Ethernet", "a dictionary", { $0.stringKeyed != nil }),
        ]
        return expected.compactMap { name, kind, isRight in
            guard let value = properties[name], !isRight(value) else { return nil }
            return "ConnMan's \(path) has a \(name) that is \(value.kind), not \(kind); it is left out"
        }
    }
}

extension ManagerView {
    /// What ConnMan's services say of the interfaces a source follows: a service ready or
    /// online is the interface's network (online: ConnMan's check found the Internet; ready:
    /// not known, since Debian 12's ConnMan never goes online when its check's answer has a
    /// body, so the daemon probes); association and configuration are on their way; Wi-Fi
    /// services are the scan list.
    init(_ services: ConnManServices, only: String? = nil) {
        self.init()
        var rank: [String: Int] = [:]  // the most connected service of an interface wins
        for path in services.order {
            guard let properties = services.properties[path] else { continue }
            let service = ConnManService(properties)
            problems += service.problems(of: path)
            guard let interface = service.interface, only == nil || only == interface else { continue }
            if service.type == "wifi", let name = properties["Name"]?.string, !name.isEmpty {
                scanList.append(service.network(interface: interface))
            }
            let device: Device
            let level: Int
            switch service.state {
            case "online": (device, level) = (.activated(service.network(interface: interface), .connected), 3)
            case "ready": (device, level) = (.activated(service.network(interface: interface), nil), 3)
            case "association", "configuration": (device, level) = (.activating, 2)
            default: (device, level) = (.inactive, 1)
            }
            if level > rank[interface, default: 0] {
                devices[interface] = device
                rank[interface] = level
            }
        }
    }
}

/// What the agent answers ConnMan's `RequestInput(service, fields)`: a Wi-Fi passphrase a
/// helper supplied for the service's SSID, and nothing else.
enum ConnManInputAnswer: Equatable {
    /// The reply (`a{sv}`), for `ssid`.
    case input(BusValue, ssid: String)
    /// A Canceled error, and why.
    case refused(String)

    /// - Parameters:
    ///   - fields: what ConnMan asks for (`a{sv}`: each field's `Type`, `Requirement`...).
    ///   - ssid: the service's name, nil for a service ConnMan did not list.
    init(fields: BusValue, ssid: String?, passwords: [String: String]) {
        guard let requested = fields.stringKeyed else {
            self = .refused("RequestInput's fields are \(fields.kind), not a dictionary")
            return
        }
        guard let ssid else {
            self = .refused("the service is not one of ConnMan's that hotspot-helper knows")
            return
        }
        let mandatory = requested.filter { $0.value.stringKeyed?["Requirement"]?.string == "mandatory" }.map(\.key).sorted()
        let others = mandatory.filter { $0 != "Passphrase" }
        guard others.isEmpty else {
            self = .refused("hotspot-helper gives Wi-Fi passphrases only, not \(others.joined(separator: ", "))")
            return
        }
        guard requested["Passphrase"] != nil else {
            self = .refused("ConnMan asked for no passphrase")
            return
        }
        guard let password = passwords[ssid] else {
            self = .refused("no helper supplied a password for \(ssid)")
            return
        }
        self = .input(.dictionary([("Passphrase", .variant(.string(password)))], valueSignature: "v"), ssid: ssid)
    }
}
