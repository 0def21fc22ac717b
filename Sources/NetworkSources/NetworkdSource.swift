#if canImport(Glibc)
import Glibc
#endif
import DBusClient
import HotspotCore
import LinuxFiles

/// `--source networkd`: the links systemd-networkd manages, followed on the system bus. A link
/// that becomes routable is a network joined (a Wi-Fi link's SSID, any other by its .network
/// file's name), with the name servers and, from systemd 254, the captive portal URI networkd
/// describes (else option 114 from its lease file); a link that loses its carrier is a network
/// left. networkd checks no connectivity: the daemon probes its networks itself.
///
/// networkd signals every change of a link's state (PropertiesChanged of its
/// OperationalState, CarrierState, OnlineState...); each burst of them is answered by reading
/// `Manager.Describe()`, which describes every link at once. Nothing polls. When networkd
/// leaves the bus its networks stay as they were until it is back; when the bus goes, the
/// source reconnects as the NetworkManager source does.
public final class NetworkdSource: NetworkSource {
    /// The one link followed, by interface name; nil for every link.
    public let interface: String?
    /// Where networkd's leases are, for option 114 on a networkd that does not describe it.
    private let leases: String?
    private let wakeUp = WakeUpPipe()

    /// - Parameter leases: networkd's lease directory, nil when the Captive Portal API URI is
    ///   configured rather than discovered.
    public init(interface: String? = nil, leases: String? = CaptivePortalAPIDiscovery.Places.system.networkdLeases) {
        self.interface = interface
        self.leases = leases
    }

    public var description: String { "networkd" + (interface.map { ":" + $0 } ?? "") }
    public var reportsConnectivity: Bool { false }

    public func start() -> AsyncStream<NetworkSourceEvent> {
        SystemBusFollowing.start("networkd-source", wakeUp: wakeUp) { events in
            var report = ManagerReport(manager: "systemd-networkd")
            SystemBusFollowing.run("systemd-networkd", until: self.wakeUp, events: events) { () throws(BusError) in
                try NetworkdConnection(only: self.interface, leases: self.leases, events: events)
            } follow: { connection throws(BusError) in
                try SystemBusFollowing.follow(connection, on: connection.bus, report: &report, until: self.wakeUp, events: events)
            }
        }
    }

    public func supplyPasswords(_ passwords: [String: String]) {}  // networkd joins no Wi-Fi network itself

    public func stop() { wakeUp.wake() }
}

/// One connection to the system bus, following systemd-networkd on it, on the source's thread.
private final class NetworkdConnection: ManagerConnection {
    static let things = "links"
    let bus: SystemBus
    private let only: String?
    private let leases: String?
    private let events: AsyncStream<NetworkSourceEvent>.Continuation
    private(set) var owner: String?
    private var needsReading = false

    init(only: String?, leases: String?, events: AsyncStream<NetworkSourceEvent>.Continuation) throws(BusError) {
        bus = try SystemBus()
        self.only = only
        self.leases = leases
        self.events = events
        try bus.addMatch(SystemBusFollowing.ownerChangeRule(NetworkdAPI.busName)) { [unowned self] in ownerChanged($0) }
        try bus.addMatch("type='signal',sender='\(NetworkdAPI.busName)',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged'") {
            [unowned self] message in
            if let owner, message.sender == owner { needsReading = true }
        }
        owner = try SystemBusFollowing.owner(of: NetworkdAPI.busName, on: bus)
    }

    func managerCame() { needsReading = true }

    func view(lookingAgain: Bool) -> ManagerView? {
        guard needsReading || lookingAgain else { return nil }
        needsReading = false
        return read()
    }

    /// What networkd describes now; nil, said why, when it cannot be read.
    private func read() -> ManagerView? {
        let answer: [BusValue]
        do {
            answer = try bus.call(NetworkdAPI.busName, NetworkdAPI.managerPath, NetworkdAPI.manager, "Describe")
        } catch {
            events.yield(.note(.warn, "cannot read systemd-networkd's links: \(error)"))
            return nil
        }
        guard answer.count == 1, let json = answer[0].string else {
            events.yield(.note(.warn, "systemd-networkd answered Describe with \(answer.first?.kind ?? "nothing"), not a string of JSON"))
            return nil
        }
        do {
            return try ManagerView(networkdDescription: json, only: only) { [leases] index in
                guard let leases, let lease = try? BoundedFile.read("\(leases)/\(index)", limit: 64 * 1024) else { return nil }
                return CaptivePortalAPIDiscovery.fromNetworkdLease(String(decoding: lease, as: UTF8.self))
            }
        } catch {
            events.yield(.note(.warn, error.description))
            return nil
        }
    }

    private func ownerChanged(_ message: BusMessage) {
        guard let change = SystemBusFollowing.ownerChange(message, of: "systemd-networkd", reading: Self.things, events: events) else { return }
        owner = change
        if change != nil { needsReading = true }
    }
}
