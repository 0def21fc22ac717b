#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import DBusClient
import HotspotCore
import Locking

/// `--source auto`: follows whichever network manager runs on the device, chosen once as the
/// source starts by which names have an owner on the system bus: NetworkManager, else
/// ConnMan, else systemd-networkd; with none, every interface that is up (not loopback) as a network named
/// after it, as `interface:IFACE:IFACE` would. What it chose, and why, is its first event.
public final class AutoSource: NetworkSource {
    private struct State {
        var chosen: [any NetworkSource] = []
        var passwords: [String: String] = [:]
        var isStopped = false
    }

    private let discovery: CaptivePortalAPIDiscovery.Places?
    private let state = PlainLock(State())

    /// The managers looked for, in order, by their names on the system bus.
    static let managers: [(busName: String, argument: NetworkSourceArgument)] = [
        (NetworkManagerAPI.busName, .networkManager(interface: nil)),
        (ConnManAPI.busName, .connman(interface: nil)),
        (NetworkdAPI.busName, .networkd(interface: nil)),
    ]

    /// - Parameter discovery: where the sources look for DHCP option 114; nil when the Captive
    ///   Portal API URI is configured.
    public init(discoveringCaptivePortalAPIIn discovery: CaptivePortalAPIDiscovery.Places? = .system) {
        self.discovery = discovery
    }

    public var description: String { "auto" }
    public var reportsConnectivity: Bool { state.withLock { $0.chosen.contains { $0.reportsConnectivity } } }

    public func start() -> AsyncStream<NetworkSourceEvent> {
        let (events, continuation) = AsyncStream.makeStream(of: NetworkSourceEvent.self)
        // The bus is asked on a thread of its own, not one of Swift concurrency's.
        DispatchQueue(label: "auto-source").async {
            let (arguments, reason) = Self.choose()
            let sources = arguments.map(self.source)
            let passwords = self.state.withLock { state -> [String: String]? in
                guard !state.isStopped else { return nil }
                state.chosen = sources
                return state.passwords
            }
            guard let passwords else {
                continuation.finish()
                return
            }
            continuation.yield(.note(.info, reason))
            sources.forEach { $0.supplyPasswords(passwords) }
            let streams = sources.map { $0.start() }
            let forwarding = Task {
                await withTaskGroup(of: Void.self) { group in
                    for stream in streams { group.addTask { for await event in stream { continuation.yield(event) } } }
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in
                forwarding.cancel()
                sources.forEach { $0.stop() }
            }
        }
        return events
    }

    public func supplyPasswords(_ passwords: [String: String]) {
        let chosen = state.withLock { state in
            state.passwords = passwords
            return state.chosen
        }
        chosen.forEach { $0.supplyPasswords(passwords) }
    }

    public func helpersFinished(with ssid: String, authenticated: Bool) {
        state.withLock { $0.chosen }.forEach { $0.helpersFinished(with: ssid, authenticated: authenticated) }
    }

    public func stop() {
        let chosen = state.withLock { state in
            state.isStopped = true
            return state.chosen
        }
        chosen.forEach { $0.stop() }
    }

    private func source(_ argument: NetworkSourceArgument) -> any NetworkSource {
        switch argument {
        case .networkManager(let interface): NetworkManagerSource(interface: interface)
        case .connman(let interface): ConnManSource(interface: interface)
        case .networkd(let interface): NetworkdSource(interface: interface, leases: discovery?.networkdLeases)
        case .interface(let interface, let ssid): InterfaceSource(interface: interface, ssid: ssid, discoveringCaptivePortalAPIIn: discovery)
        case .auto: preconditionFailure("auto chooses among the others")
        }
    }

    /// The sources to follow, and why, in a sentence for the log.
    static func choose() -> (sources: [NetworkSourceArgument], reason: String) {
        var why: String
        do {
            let bus = try SystemBus()
            for (busName, argument) in managers where try SystemBusFollowing.owner(of: busName, on: bus) != nil {
                return ([argument], "--source auto follows \(argument): \(busName) has an owner on the system bus")
            }
            why = "no network manager is on the system bus (\(managers.map(\.busName).joined(separator: ", ")) have no owner)"
        } catch {
            why = "the system bus cannot be asked which network manager runs (\(error))"
        }
        let interfaces = interfacesUp()
        guard !interfaces.isEmpty else {
            return ([], "--source auto follows nothing: \(why), and no interface but loopback is up")
        }
        return (interfaces.map { .interface($0, ssid: $0) },
                "--source auto follows the interfaces that are up, each as a network of its name (\(interfaces.joined(separator: ", "))): \(why)")
    }

    /// The interfaces up and running, loopback left out, by name, sorted.
    static func interfacesUp() -> [String] {
        var first: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&first) == 0 else { return [] }
        defer { freeifaddrs(first) }
        var names: Set<String> = []
        var next = first
        while let entry = next {
            let flags = Int(entry.pointee.ifa_flags)
            let wanted = IFF_UP | IFF_RUNNING
            if flags & wanted == wanted, flags & IFF_LOOPBACK == 0, let name = entry.pointee.ifa_name {
                names.insert(String(cString: name))
            }
            next = entry.pointee.ifa_next
        }
        return names.sorted()
    }
}
