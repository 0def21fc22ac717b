#if canImport(Glibc)
import Glibc
#endif
import Locking
import HotspotCore
import LinuxFiles
import DBusClient

/// `--source networkmanager`: the devices NetworkManager activates, followed on the system bus
/// through its D-Bus API. A device activated is a network joined (for Wi-Fi its access point's
/// SSID, for anything else the connection's name), a device deactivated or gone is a network
/// left; NetworkManager's own connectivity check says when a network is behind a portal, and
/// its Wi-Fi access points are the scan list. The source is also NetworkManager's secret agent:
/// it answers a request for a Wi-Fi network's pre-shared key with the password a helper
/// supplied in `filter_scan_list`, and nothing else.
///
/// Everything comes from NetworkManager's signals (its ObjectManager's, PropertiesChanged,
/// StateChanged, DeviceAdded and DeviceRemoved, NameOwnerChanged for NetworkManager itself);
/// nothing polls. When NetworkManager leaves the bus its networks stay as they were until it
/// comes back and is read again; when the bus itself goes, the source reconnects, waiting
/// from 1 s up to 30 s between attempts.
public final class NetworkManagerSource: NetworkSource {
    /// The one device followed, by interface name; nil for every device.
    public let interface: String?
    private let isSecretAgent: Bool
    private let passwords = PlainLock<[String: String]>([:])
    private let wakeUp = WakeUpPipe()

    /// - Parameter isSecretAgent: whether to answer NetworkManager's requests for passwords
    ///   (the daemon does; a command that only looks does not).
    public init(interface: String? = nil, isSecretAgent: Bool = true) {
        self.interface = interface
        self.isSecretAgent = isSecretAgent
    }

    public var description: String { "networkmanager" + (interface.map { ":" + $0 } ?? "") }
    public var reportsConnectivity: Bool { true }

    public func start() -> AsyncStream<NetworkSourceEvent> {
        SystemBusFollowing.start("networkmanager-source", wakeUp: wakeUp) { self.follow($0) }
    }

    public func supplyPasswords(_ passwords: [String: String]) {
        self.passwords.withLock { $0 = passwords }
    }

    public func stop() { wakeUp.wake() }

    private func follow(_ events: AsyncStream<NetworkSourceEvent>.Continuation) {
        var report = ManagerReport(manager: "NetworkManager")
        SystemBusFollowing.run("NetworkManager", until: wakeUp, events: events) { () throws(BusError) in
            try NetworkManagerConnection(only: interface, isSecretAgent: isSecretAgent, passwords: { self.passwords.withLock { $0 } }, events: events)
        } follow: { connection throws(BusError) in
            try SystemBusFollowing.follow(connection, on: connection.bus, report: &report, until: wakeUp, events: events)
        }
    }
}

/// One connection to the system bus, following NetworkManager on it: made, used and closed on
/// the source's thread, as sd-bus requires.
private final class NetworkManagerConnection: ManagerConnection {
    static let things = "devices"
    let bus: SystemBus
    private let only: String?
    private let passwords: () -> [String: String]
    private let events: AsyncStream<NetworkSourceEvent>.Continuation
    private var objects = NetworkManagerObjects()
    private(set) var owner: String?
    /// NetworkManager came, or named an object not mirrored: read every object again.
    private var needsLoading = false
    private var objectsChanged = false
    private let isSecretAgent: Bool
    /// The NetworkManager the agent registered with, by unique name.
    private var agentRegisteredWith: String?

    init(only: String?, isSecretAgent: Bool, passwords: @escaping () -> [String: String],
         events: AsyncStream<NetworkSourceEvent>.Continuation) throws(BusError) {
        bus = try SystemBus()
        self.only = only
        self.isSecretAgent = isSecretAgent
        self.passwords = passwords
        self.events = events
        try bus.addMatch(SystemBusFollowing.ownerChangeRule(NetworkManagerAPI.busName)) { [unowned self] in ownerChanged($0) }
        try bus.addMatch("type='signal',sender='\(NetworkManagerAPI.busName)'") { [unowned self] in signal($0) }
        if isSecretAgent {
            try bus.addObject(at: NetworkManagerAPI.secretAgentPath) { [unowned self] in answerSecretAgentCall($0) }
        }
        owner = try SystemBusFollowing.owner(of: NetworkManagerAPI.busName, on: bus)
    }

    func managerCame() { needsLoading = true }

    func view(lookingAgain: Bool) -> ManagerView? {
        if needsLoading { load() }
        readProfiles()
        guard objectsChanged || lookingAgain else { return nil }
        objectsChanged = false
        return ManagerView(objects, only: only)
    }

    /// Reads every object of NetworkManager's, and registers the secret agent with it.
    private func load() {
        needsLoading = false
        do {
            let answer = try bus.call(NetworkManagerAPI.busName, NetworkManagerAPI.objectManagerPath, "org.freedesktop.DBus.ObjectManager",
                                      "GetManagedObjects")
            guard let managed = answer.first, objects.load(managed) else {
                events.yield(.note(.warn, "NetworkManager answered GetManagedObjects with \(answer.first?.kind ?? "nothing"), not its objects"))
                return
            }
            objectsChanged = true
        } catch {
            events.yield(.note(.warn, "cannot read NetworkManager's devices: \(error)"))
            return
        }
        guard isSecretAgent, let owner, agentRegisteredWith != owner else { return }
        do {
            _ = try bus.call(NetworkManagerAPI.busName, NetworkManagerAPI.agentManagerPath, NetworkManagerAPI.agentManager, "Register",
                             [.string("hotspot-helper")])
            agentRegisteredWith = owner
        } catch {
            events.yield(.note(.warn, "cannot register with NetworkManager as its secret agent: \(error); passwords helpers supply do not reach it"))
        }
    }

    /// Reads whether NetworkManager activates the profiles of new active connections by itself;
    /// one that cannot be read counts as one it does.
    private func readProfiles() {
        for profile in objects.profilesToRead {
            var autoconnect: Bool?
            do {
                let answer = try bus.call(NetworkManagerAPI.busName, profile, NetworkManagerAPI.profile, "GetSettings")
                autoconnect = answer.first.flatMap(NetworkManagerObjects.autoconnect(inSettings:))
                if autoconnect == nil {
                    events.yield(.note(.warn, "NetworkManager answered GetSettings of \(profile) with \(answer.first?.kind ?? "nothing"), not its settings"))
                }
            } catch {
                events.yield(.note(.warn, "cannot read NetworkManager's profile \(profile): \(error)"))
            }
            objects.autoconnects[profile] = autoconnect ?? true
        }
    }

    private func ownerChanged(_ message: BusMessage) {
        guard let change = SystemBusFollowing.ownerChange(message, of: "NetworkManager", reading: Self.things, events: events) else { return }
        owner = change
        if change == nil { objects.removeAll() } else { needsLoading = true }
    }

    /// Keeps the mirror current from one of NetworkManager's signals.
    private func signal(_ message: BusMessage) {
        guard let owner, message.sender == owner, let path = message.path, let interface = message.interface, let member = message.member,
              let values = try? message.values() else { return }
        switch (interface, member) {
        case ("org.freedesktop.DBus.ObjectManager", "InterfacesAdded"):
            guard values.count == 2, case .objectPath(let added) = values[0] else { return }
            objects.add(added, interfaces: values[1])
        case ("org.freedesktop.DBus.ObjectManager", "InterfacesRemoved"):
            guard values.count == 2, case .objectPath(let removed) = values[0], let names = values[1].elements else { return }
            objects.remove(removed, interfaces: names.compactMap(\.string))
        case ("org.freedesktop.DBus.Properties", "PropertiesChanged"):
            guard values.count == 3, let changedInterface = values[0].string else { return }
            objects.change(path, interface: changedInterface, values[1])
            // Invalidated properties come without their values; an object no InterfacesAdded announced, without its properties.
            if values[2].elements?.isEmpty == false || objects.namesUnknownObjects(values[1]) { needsLoading = true }
        case (NetworkManagerAPI.device, "StateChanged"):
            guard let state = values.first else { return }
            objects.change(path, interface: NetworkManagerAPI.device, .dictionary([("State", .variant(state))], valueSignature: "v"))
        case (_, "PropertiesChanged") where interface.hasPrefix(NetworkManagerAPI.manager):
            // The older form, still sent by some: the interface's own signal with the changes.
            guard let changed = values.first else { return }
            objects.change(path, interface: interface, changed)
            if objects.namesUnknownObjects(changed) { needsLoading = true }
        case (NetworkManagerAPI.profile, "Updated"):
            objects.autoconnects[path] = nil  // read again with the next view
        case (NetworkManagerAPI.manager, "DeviceAdded"), (NetworkManagerAPI.wireless, "AccessPointAdded"):
            guard let added = values.first?.reference, objects.objects[added] == nil else { return }
            needsLoading = true  // announced before its interfaces were
        case (NetworkManagerAPI.manager, "DeviceRemoved"), (NetworkManagerAPI.wireless, "AccessPointRemoved"):
            guard let removed = values.first?.reference else { return }
            objects.removeObject(removed)
        default:
            return
        }
        objectsChanged = true
    }

    /// A call to the secret agent: GetSecrets from NetworkManager gets a pre-shared key a
    /// helper supplied or a NoSecrets error; anyone else is refused. The password is never logged.
    private func answerSecretAgentCall(_ call: BusMessage) -> Bool {
        guard call.interface == NetworkManagerAPI.secretAgent else { return false }
        guard let owner, call.sender == owner else {
            bus.replyError(to: call, name: "org.freedesktop.DBus.Error.AccessDenied", message: "only NetworkManager may ask hotspot-helper for secrets")
            return true
        }
        switch call.member {
        case "GetSecrets":
            guard let values = try? call.values(), values.count == 5, let setting = values[2].string,
                  let hints = values[3].elements?.compactMap(\.string), let flags = values[4].unsigned else {
                bus.replyError(to: call, name: "org.freedesktop.DBus.Error.InvalidArgs", message: "GetSecrets takes (a{sa{sv}}, o, s, as, u)")
                return true
            }
            switch SecretAgentAnswer(connection: values[0], setting: setting, hints: hints, flags: UInt32(truncatingIfNeeded: flags),
                                     passwords: passwords()) {
            case .secrets(let secrets, let ssid):
                do {
                    try bus.reply(to: call, [secrets])
                    events.yield(.note(.info, "gave NetworkManager the password a helper supplied for \(ssid)"))
                } catch {
                    events.yield(.note(.warn, "cannot give NetworkManager the password for \(ssid): \(error)"))
                }
            case .refused(let reason):
                bus.replyError(to: call, name: NetworkManagerAPI.noSecrets, message: reason)
                events.yield(.note(.info, "NetworkManager asked for secrets: \(reason)"))
            }
        case "CancelGetSecrets", "SaveSecrets", "DeleteSecrets":
            try? bus.reply(to: call, [])  // nothing is pending, and nothing is kept
        default:
            return false
        }
        return true
    }
}
