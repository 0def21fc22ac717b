import HotspotCore

/// What a network manager (NetworkManager, systemd-networkd) says of the devices a source
/// follows, in the daemon's terms: each device's network, the networks in range.
struct ManagerView: Equatable {
    enum Device: Equatable {
        /// Activated on a network; the manager's connectivity verdict, when it has one.
        case activated(NetworkDescription, ConnectivityState?)
        /// On its way to activated: no reason to leave a network it was on.
        case activating
        case inactive
    }

    /// By interface name, which survives a restart of the manager (object paths do not).
    var devices: [String: Device] = [:]
    /// The access points of the Wi-Fi devices.
    var scanList: [NetworkDescription] = []
    /// When each Wi-Fi device last scanned, so a new scan finding the same networks counts.
    var lastScans: [Int64] = []
    /// Devices whose network the manager joined at someone's request, by interface name; any
    /// other joined after the source's first look was joined by the manager itself.
    var joinedOnRequest: Set<String> = []
    /// The manager is still activating what it activates as it starts: a device not activated
    /// yet may still be.
    var isStarting = false
    /// Values of a type or content that could not be used, in words.
    var problems: [String] = []

    init() {}
}

/// What a manager's source has told the daemon, kept across connections to the bus, so
/// that after the manager or the bus comes back only what changed meanwhile is reported.
struct ManagerReport {
    /// The manager's name, as the reasons name it: "NetworkManager", "systemd-networkd".
    let manager: String

    /// How long a network activated with no name servers is held back for them, for a
    /// manager that tells of them only after the state (ConnMan signals a service's
    /// Nameservers half a second after its `ready`): joined at once, a helper's first probe
    /// would resolve through the system's resolver, not the network's. Nil: joined at once.
    let nameServerGrace: Duration?

    init(manager: String, nameServerGrace: Duration? = nil) {
        self.manager = manager
        self.nameServerGrace = nameServerGrace
    }
    private struct Joined {
        var network: NetworkDescription
        var connectivity: ConnectivityState?
    }

    private var joined: [String: Joined] = [:]
    /// Devices of joined networks that the manager no longer lists, and since when.
    private var missingSince: [String: ContinuousClock.Instant] = [:]
    /// Devices activated with no name servers yet, held back since when (`nameServerGrace`).
    private var heldSince: [String: ContinuousClock.Instant] = [:]
    private var scanList: [NetworkDescription] = []
    private var lastScans: [Int64] = []
    private var problems: Set<String> = []
    private var hasSynchronised = false

    /// How long a joined network's device may be missing before the network is left:
    /// NetworkManager, stopping, drops its devices a moment before it leaves the bus, and
    /// stopping a manager leaves the device on its network.
    static let missingDeviceGrace: Duration = .seconds(2)

    /// When the grace of a missing device or of a network held back for its name servers
    /// ends, for the caller to look again then.
    var nextLook: ContinuousClock.Instant? {
        let missing = missingSince.values.map { $0 + Self.missingDeviceGrace }
        let held = nameServerGrace.map { grace in heldSince.values.map { $0 + grace } } ?? []
        return (missing + held).min()
    }

    /// The manager left the bus: its devices are not missing, only unseen until it is back.
    mutating func managerLeft() {
        missingSince = [:]
    }

    /// The events that bring the daemon from what it was told to `view`.
    mutating func events(toward view: ManagerView, at now: ContinuousClock.Instant = .now) -> [NetworkSourceEvent] {
        var events = view.problems.filter { !problems.contains($0) }.map { NetworkSourceEvent.note(.warn, $0) }
        problems = Set(view.problems)
        // Leaves first, so a network that moved between interfaces is left, then joined.
        for (interface, was) in joined.sorted(by: { $0.key < $1.key }) {
            let reason: String
            switch view.devices[interface] {
            case .activated(let network, _)?:
                guard network.ssid != was.network.ssid else { continue }
                reason = "\(manager) moved \(interface) from \(was.network.ssid) to \(network.ssid)"
            case .activating?:
                continue
            case .inactive?:
                if view.isStarting { continue }
                reason = "\(manager) deactivated \(interface)"
            case nil:
                let since = missingSince[interface, default: now]
                missingSince[interface] = since
                if view.isStarting || now < since + Self.missingDeviceGrace { continue }
                reason = "\(interface) is no longer among \(manager)'s devices"
            }
            missingSince[interface] = nil
            joined[interface] = nil
            events.append(.left(was.network, reason: reason))
        }
        for (interface, device) in view.devices.sorted(by: { $0.key < $1.key }) {
            missingSince[interface] = nil
            guard case .activated(var network, let connectivity) = device else {
                heldSince[interface] = nil
                continue
            }
            // Not at the first look: what is activated then has been for a while.
            if hasSynchronised, joined[interface] == nil, network.resolvers.isEmpty, let grace = nameServerGrace {
                let since = heldSince[interface, default: now]
                heldSince[interface] = since
                if now < since + grace { continue }
            }
            heldSince[interface] = nil
            if let was = joined[interface] {
                network.didAutoJoin = was.network.didAutoJoin
                var unchanged = network
                unchanged.signalStrength = was.network.signalStrength  // a strength of its own is no change
                if unchanged != was.network { events.append(.changed(network)) }
            } else {
                // What is activated when the source first looks is the operator's join.
                network.didAutoJoin = hasSynchronised && !view.joinedOnRequest.contains(interface)
                events.append(.joined(network, reason: "\(manager) has \(interface) on \(network.ssid)"))
            }
            if let connectivity, connectivity != joined[interface]?.connectivity {
                events.append(.connectivity(ssid: network.ssid, connectivity))
            }
            joined[interface] = Joined(network: network, connectivity: connectivity)
        }
        // The first look lists what is in range even when nothing is, so a reader knows.
        if !hasSynchronised || view.scanList != scanList || (!view.scanList.isEmpty && view.lastScans != lastScans) {
            events.append(.scanList(view.scanList))
        }
        (scanList, lastScans) = (view.scanList, view.lastScans)
        hasSynchronised = true
        return events
    }
}

