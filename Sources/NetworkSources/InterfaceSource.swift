#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import HotspotCore
import LinuxFiles

/// `--source interface:IFACE:SSID`: a Linux interface treated as a joined network with this
/// SSID, joined while its link is up with a carrier and left while it is not. The kernel
/// tells of every change (rtnetlink), so a flap of a second is a leave and a join; the
/// network's Captive Portal API URI and its name servers are read from the DHCP leases again
/// whenever a lease file changes (inotify), and the URI from router advertisements as they
/// come (`RouterOption`) when no lease names one. The interface is followed by the name given: a
/// link renamed away from it is left, and one renamed to it joined.
public final class InterfaceSource: NetworkSource {
    public let interface: String
    public let ssid: String
    /// Where DHCP option 114 is looked for; nil when the URI is configured rather than discovered.
    private let discovery: CaptivePortalAPIDiscovery.Places?
    /// Where the name servers DHCP gave are looked for: the network's own resolvers (a VPN
    /// that owns the system's resolver does not answer for the venue's names).
    private let nameServerDiscovery: CaptivePortalAPIDiscovery.Places?
    private let wakeUp = WakeUpPipe()

    /// Lease files are written whole, but in steps: they are read once changes pause this long.
    static let leaseQuietMilliseconds: Int32 = 100

    public var description: String { "interface:\(interface):\(ssid)" }
    public var reportsConnectivity: Bool { false }

    public init(interface: String, ssid: String, discoveringCaptivePortalAPIIn discovery: CaptivePortalAPIDiscovery.Places? = .system,
                discoveringNameServersIn nameServerDiscovery: CaptivePortalAPIDiscovery.Places? = .system) {
        self.interface = interface
        self.ssid = ssid
        self.discovery = discovery
        self.nameServerDiscovery = nameServerDiscovery
    }

    public func start() -> AsyncStream<NetworkSourceEvent> {
        let (events, continuation) = AsyncStream.makeStream(of: NetworkSourceEvent.self)
        continuation.onTermination = { [wakeUp] _ in wakeUp.wake() }
        // A thread of its own, so the blocking poll never holds one of Swift concurrency's threads.
        DispatchQueue(label: "interface-source-\(interface)").async {
            do {
                let leaseDirectories = [self.discovery, self.nameServerDiscovery].compactMap { $0?.leaseDirectories }.joined()
                self.watch(try LinkNotifications(), leaseDirectories.isEmpty ? nil : LeaseWatch(directories: Array(Set(leaseDirectories))),
                           continuation)
            } catch {
                continuation.yield(.note(.error, "\(self.interface): \(error); \(self.ssid) is not joined"))
            }
            continuation.finish()
            self.wakeUp.close()
        }
        return events
    }

    public func supplyPasswords(_ passwords: [String: String]) {}  // an interface is joined already

    public func stop() { wakeUp.wake() }

    private func watch(_ links: LinkNotifications, _ leases: LeaseWatch?, _ events: AsyncStream<NetworkSourceEvent>.Continuation) {
        var isUp: Bool?  // not known until the kernel first says
        var captivePortalAPI: String?
        var resolvers: [String] = []
        // The router advertisement's name servers (RDNSS), after DHCP's: on an IPv6-only
        // network they are the only ones.
        var leaseResolvers: [String] = []
        var advertisedResolvers: [String] = []
        func settleResolvers() { resolvers = leaseResolvers + advertisedResolvers.filter { !leaseResolvers.contains($0) } }
        var follower = LinkFollower(interface: interface)
        var leasesChanged = false
        links.requestAll()
        // DHCP's URI (option 114 in a lease) before the router advertisement's (option 37):
        // RFC 8910 leaves the choice open, and a lease is the network's answer to this device.
        var leasePortal: (uri: String, source: String)?
        var advertisedPortal: String?
        func settlePortal() {
            let found = leasePortal ?? advertisedPortal.map { (uri: $0, source: "a router advertisement") }
            if found?.uri != captivePortalAPI {
                captivePortalAPI = found?.uri
                events.yield(.note(.info, found.map { "the Captive Portal API of \(interface) is \($0.uri) (from \($0.source))" }
                                       ?? "\(interface) no longer names a Captive Portal API"))
            }
        }
        func discover() {
            if let discovery {
                leasePortal = CaptivePortalAPIDiscovery.uri(forInterface: interface, in: discovery)
                settlePortal()
            }
            if let nameServerDiscovery {
                let found = CaptivePortalAPIDiscovery.nameServers(forInterface: interface, in: nameServerDiscovery)
                if found?.servers ?? [] != leaseResolvers {
                    leaseResolvers = found?.servers ?? []
                    events.yield(.note(.info, found.map { "the name servers of \(interface) are \($0.servers.joined(separator: ", ")) (from \($0.source))" }
                                           ?? "\(interface) no longer has name servers from DHCP"))
                }
                settleResolvers()
            }
        }
        func network(joinedByItself: Bool) -> NetworkDescription {
            NetworkDescription(ssid: ssid, didAutoJoin: joinedByItself, interface: interface, resolvers: resolvers,
                               captivePortalAPI: captivePortalAPI, captivePortalAPIIsFromLink: captivePortalAPI != nil)
        }
        func linkIs(up: Bool, renamedTo newName: String? = nil) {
            guard up != isUp else { return }
            let first = isUp == nil
            isUp = up
            advertisedPortal = nil  // what a router advertised was for the network that was there
            advertisedResolvers = []
            if up {
                discover()
                // The link up when the daemon starts is the operator's join, not an auto-join.
                events.yield(.joined(network(joinedByItself: !first), reason: first ? "\(interface) is up" : "\(interface) is up: joining"))
            } else {
                let reason = if let newName { "\(interface) was renamed \(newName): leaving" }
                    else if first { "\(interface) is down; \(ssid) is joined when it comes up" }
                    else { "\(interface) is down: leaving" }
                events.yield(.left(network(joinedByItself: true), reason: reason))
            }
        }
        func advertise(_ option: RouterOption) {
            switch option {
            case .malformed(let reason):
                events.yield(.note(.warn, "\(interface): \(reason); the option is ignored"))
            case .captivePortal, .unrestricted:
                guard discovery != nil else { return }  // the URI is configured
                let uri: String? = if case .captivePortal(let uri) = option { uri } else { nil }
                guard uri != advertisedPortal else { return }
                if uri == nil {
                    events.yield(.note(.info, "a router advertisement on \(interface) says the network has no captive portal (RFC 8910's unrestricted)"))
                }
                if let uri, let leased = leasePortal, leased.uri != uri {
                    events.yield(.note(.warn, "\(interface): \(leased.source) names the Captive Portal API \(leased.uri) and a router "
                                       + "advertisement \(uri), a configuration error (RFC 8910); \(leased.uri) is used"))
                }
                advertisedPortal = uri
                let before = captivePortalAPI
                settlePortal()
                if isUp == true, captivePortalAPI != before { events.yield(.changed(network(joinedByItself: true))) }
            case .nameServers(let servers, let lifetime):
                guard nameServerDiscovery != nil else { return }  // --resolver given
                // Lifetime 0 withdraws the servers; a later advertisement replaces them.
                let advertised = lifetime == 0 ? advertisedResolvers.filter { !servers.contains($0) } : servers
                guard advertised != advertisedResolvers else { return }
                advertisedResolvers = advertised
                events.yield(.note(.info, advertised.isEmpty ? "\(interface) no longer has name servers from router advertisements"
                                       : "the name servers router advertisements give \(interface) are \(advertised.joined(separator: ", "))"))
                let before = resolvers
                settleResolvers()
                if isUp == true, resolvers != before { events.yield(.changed(network(joinedByItself: true))) }
            }
        }
        while true {
            var descriptors = [pollfd(fd: links.descriptor, events: Int16(POLLIN), revents: 0)]
            if let leases { descriptors.append(pollfd(fd: leases.descriptor, events: Int16(POLLIN), revents: 0)) }
            switch wakeUp.wait(for: &descriptors, timeoutMilliseconds: leasesChanged ? Self.leaseQuietMilliseconds : -1) {
            case .woken, .failed:
                return
            case .timedOut:
                leasesChanged = false
                if isUp == true {
                    let before = (captivePortalAPI, resolvers)
                    discover()
                    if captivePortalAPI != before.0 || resolvers != before.1 { events.yield(.changed(network(joinedByItself: true))) }
                }
            case .ready:
                if descriptors[0].revents != 0 {
                    let news = links.read()
                    if news.overflowed { links.requestAll() }
                    for link in news.links {
                        if let followed = follower.follow(link) { linkIs(up: followed.isUp, renamedTo: followed.renamedTo) }
                    }
                    for advertised in news.routerOptions where advertised.index == follower.index {
                        advertise(advertised.option)
                    }
                    if news.allListed, isUp == nil { linkIs(up: false) }  // no such link (yet)
                }
                if descriptors.count > 1, descriptors[1].revents != 0, leases?.drain() == true { leasesChanged = true }
            }
        }
    }
}

/// Which link is the configured interface: the one with its name, then followed by its index,
/// so a rename (the same index, another name) is the interface going away, not a link that
/// stays up forever under the old name.
struct LinkFollower {
    let interface: String
    /// The kernel's index of the interface while a link has its name.
    private(set) var index: Int32?

    init(interface: String) { self.interface = interface }

    /// What `link` says of the interface: whether it is up, and the name it was renamed to;
    /// nil when it is another link.
    mutating func follow(_ link: LinkNotifications.Link) -> (isUp: Bool, renamedTo: String?)? {
        if link.name == interface {
            index = link.index
            return (link.isUp, nil)
        }
        guard link.index == index else { return nil }
        index = nil
        return (false, link.name)
    }
}

/// Changes in the directories that hold DHCP leases, through inotify: a lease written,
/// moved in or removed.
final class LeaseWatch {
    let descriptor: Int32

    /// Directories that do not exist are left out (a platform has one DHCP client or two).
    init(directories: [String]) {
        descriptor = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
        let mask = UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE)
        for directory in directories where descriptor >= 0 { _ = inotify_add_watch(descriptor, directory, mask) }
    }

    deinit { if descriptor >= 0 { close(descriptor) } }

    /// Reads what has arrived; whether anything had.
    func drain() -> Bool {
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        var any = false
        while buffer.withUnsafeMutableBytes({ read(descriptor, $0.baseAddress, $0.count) }) > 0 { any = true }
        return any
    }
}
