public import HotspotCore
import HotspotRuntime
import HotspotNetwork
import NetworkSources

/// What the daemon's options say of every network, over what its source says: resolvers and
/// a Captive Portal API URI given on the command line win; the probes come only from here.
public struct NetworkOverrides: Sendable {
    public var resolvers: [String]
    public var probes: [Probe]
    public var captivePortalAPI: String?

    public init(resolvers: [String] = [], probes: [Probe] = [], captivePortalAPI: String? = nil) {
        self.resolvers = resolvers
        self.probes = probes
        self.captivePortalAPI = captivePortalAPI
    }

    func applied(to network: NetworkDescription) -> NetworkDescription {
        var network = network
        if !resolvers.isEmpty { network.resolvers = resolvers }
        network.probes = probes
        if let captivePortalAPI {
            network.captivePortalAPI = captivePortalAPI
            network.captivePortalAPIIsFromLink = false
        }
        return network
    }
}

/// What the sources said, and the work the daemon started from it.
struct SourceTracking {
    /// Every network a source named, as last described, in the order they came: what
    /// `status` lists and control requests may name.
    var networks: [NetworkDescription] = []
    /// The networks the device is on now, by SSID, with the index of the source that said so.
    var joined: [String: Int] = [:]
    /// The command the daemon last started for a network (its join, a maintain it brought
    /// forward), cancelled when the network is left.
    var commands: [String: Task<Void, Never>] = [:]
    /// The daemon's own connectivity checks, for networks whose source does not report it.
    var connectivityWatches: [String: Task<Void, Never>] = [:]
    /// Each source's networks in range, by source index, and until when they count as fresh.
    var scanLists: [Int: [NetworkDescription]] = [:]
    var scanListsFreshUntil: ContinuousClock.Instant = .now
    /// Running `filter_scan_list` every 5 s while a scan list is fresh.
    var scanListFiltering: Task<Void, Never>?
    /// The passwords last handed to each source, by source index.
    var suppliedPasswords: [Int: [String: String]] = [:]
    /// Reading each source's events.
    var readers: [Task<Void, Never>] = []

    mutating func remember(_ network: NetworkDescription) {
        if let index = networks.firstIndex(where: { $0.ssid == network.ssid }) {
            networks[index] = network
        } else {
            networks.append(network)
        }
    }
}

extension HotspotDaemon {
    /// How long a scan list is filtered again (every 5 s) after its source last reported it:
    /// the networks in range are of interest while the platform scans.
    static let scanListFreshness: Duration = .seconds(30)

    func startSources() {
        for (index, source) in sources.enumerated() {
            let events = source.start()
            tracking.readers.append(Task {
                for await event in events {
                    guard !Task.isCancelled else { return }
                    await self.handle(event, from: index)
                }
            })
        }
    }

    /// Stops the sources and what they started, and waits for the commands to end (a
    /// command cut short is reported as such).
    func stopSources() async {
        sources.forEach { $0.stop() }
        tracking.readers.forEach { $0.cancel() }
        tracking.connectivityWatches.values.forEach { $0.cancel() }
        tracking.scanListFiltering?.cancel()
        let commands = tracking.commands.values
        commands.forEach { $0.cancel() }
        for command in commands { await command.value }
    }

    private func handle(_ event: NetworkSourceEvent, from index: Int) async {
        switch event {
        case .joined(let described, let reason):
            let network = overrides.applied(to: described)
            if let owner = tracking.joined[network.ssid], owner != index {
                emit(.log(.warn, "\(sources[index]) joined \(network.ssid), which \(sources[owner]) has joined already; it stays with \(sources[owner])",
                          network: network.ssid))
                return
            }
            tracking.remember(network)
            tracking.joined[network.ssid] = index
            emit(.log(.info, reason, network: network.ssid))
            tracking.commands.removeValue(forKey: network.ssid)?.cancel()  // a join of an earlier visit
            let runtime = runtime
            let source = sources[index]
            tracking.commands[network.ssid] = Task {
                let state = await runtime.join(network)
                source.helpersFinished(with: network.ssid, authenticated: state == .authenticated)
            }
            watchConnectivity(of: network, from: index)
        case .changed(let described):
            let network = overrides.applied(to: described)
            guard tracking.joined[network.ssid] == index else { return }
            let before = tracking.networks.first { $0.ssid == network.ssid }
            tracking.remember(network)
            await runtime.update(network)
            if before?.interface != network.interface || before?.resolvers != network.resolvers {
                watchConnectivity(of: network, from: index)  // the checks go out by the new way
            }
        case .left(let network, let reason):
            if let owner = tracking.joined[network.ssid], owner != index { return }
            if !tracking.networks.contains(where: { $0.ssid == network.ssid }) { tracking.remember(overrides.applied(to: network)) }
            emit(.log(.info, reason, network: network.ssid))
            guard tracking.joined.removeValue(forKey: network.ssid) != nil else { return }
            tracking.commands.removeValue(forKey: network.ssid)?.cancel()
            tracking.connectivityWatches.removeValue(forKey: network.ssid)?.cancel()
            await runtime.leave(network.ssid)
        case .connectivity(let ssid, let verdict):
            guard tracking.joined[ssid] == index else { return }
            emit(.connectivity(ConnectivityEvent(network: ssid, verdict: verdict)))
            if verdict == .captive { await maintainCaptive(ssid) }
        case .scanList(let networks):
            // Nothing in range, when nothing was, is nothing to filter.
            guard !networks.isEmpty || tracking.scanLists[index]?.isEmpty == false else { return }
            tracking.scanLists[index] = networks
            tracking.scanListsFreshUntil = .now + Self.scanListFreshness
            if tracking.scanListFiltering == nil { tracking.scanListFiltering = Task { await self.filterScanListsWhileFresh() } }
        case .note(let level, let message):
            emit(.log(level, message))
        }
    }

    /// The portal took the network back (a session that ran out, a portal restarted): the
    /// helper's `maintain` runs now rather than at its next timer, and logs in again.
    private func maintainCaptive(_ ssid: String) async {
        // Not while a command runs: the network is not `authenticated` then.
        guard await runtime.state(of: ssid) == .authenticated, let index = tracking.joined[ssid] else { return }
        emit(.log(.info, "\(ssid) is captive again: maintaining now", network: ssid))
        let runtime = runtime
        let source = sources[index]
        tracking.commands[ssid] = Task {
            let state = await runtime.maintain(ssid)
            source.helpersFinished(with: ssid, authenticated: state == .authenticated)
        }
    }

    /// Checks the connectivity of a network whose source does not, with the daemon's own probes.
    private func watchConnectivity(of network: NetworkDescription, from index: Int) {
        tracking.connectivityWatches.removeValue(forKey: network.ssid)?.cancel()
        guard let connectivity, !sources[index].reportsConnectivity else { return }
        let changes = runtime.watchConnectivity(of: network, settings: connectivity).changes
        let ssid = network.ssid
        tracking.connectivityWatches[ssid] = Task {
            for await verdict in changes where verdict.state == .captive { await self.maintainCaptive(ssid) }
        }
    }

    /// `filter_scan_list` over every source's networks in range, every 5 s while a list is
    /// fresh; the passwords helpers supply go to the source that listed the network.
    private func filterScanListsWhileFresh() async {
        for await claims in runtime.watchScanList(scanList: { await self.scanListsInSourceOrder() }) {
            guard ContinuousClock.now < tracking.scanListsFreshUntil else { break }
            for (index, networks) in tracking.scanLists { supplyPasswords(claims, in: networks, to: index) }
        }
        tracking.scanListFiltering = nil
    }

    private func scanListsInSourceOrder() -> [NetworkDescription] {
        tracking.scanLists.sorted { $0.key < $1.key }.flatMap(\.value)
    }

    private func supplyPasswords(_ claims: [NetworkClaim], in networks: [NetworkDescription], to index: Int) {
        let listed = Set(networks.map(\.ssid))
        var passwords: [String: String] = [:]
        var helpers: [String: String] = [:]
        for claim in claims where listed.contains(claim.ssid) {
            guard let password = claim.password, passwords[claim.ssid] == nil else { continue }
            passwords[claim.ssid] = password
            helpers[claim.ssid] = claim.helper
        }
        guard passwords != tracking.suppliedPasswords[index, default: [:]] else { return }
        tracking.suppliedPasswords[index] = passwords
        sources[index].supplyPasswords(passwords)
        let named = helpers.sorted { $0.key < $1.key }.map { "\($0.key) (from \($0.value))" }
        emit(.log(.info, named.isEmpty ? "no helper supplies a password to \(sources[index]) now"
                                       : "passwords for \(sources[index]) to join with: \(named.joined(separator: ", "))"))
    }
}
