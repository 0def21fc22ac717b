#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
public import HotspotNetwork
public import HotspotCore
public import HotspotSystem

/// `hotspot-helper run`: the runtime kept going on a device. It joins the networks its
/// sources describe, leaves and joins them again as their links go down and up, reloads
/// the helpers when asked, and answers the control socket's requests.
///
/// It lives here rather than with the OS glue (HotspotSystem) because it composes the
/// Lua-backed runtime and catalog with that glue; there it would make the glue depend on
/// the script engine.
public actor HotspotDaemon {
    /// Where the daemon learns which network the device is on.
    public struct Source: Sendable, Hashable, CustomStringConvertible {
        /// The interface is treated as a joined Wi-Fi network with this SSID.
        public let interface: String
        public let ssid: String

        public var description: String { "interface:\(interface):\(ssid)" }

        /// Parses `interface:IFACE:SSID`; the error says what is wrong and what is expected.
        public static func parse(_ text: String) throws(SourceError) -> Source {
            let parts = text.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false).map(String.init)
            guard parts.count == 3, parts[0] == "interface" else {
                throw SourceError("expected interface:IFACE:SSID, such as interface:wlan0:Aroma-Guest")
            }
            guard !parts[1].isEmpty, if_nametoindex(parts[1]) != 0 else {
                throw SourceError("no network interface called \"\(parts[1])\" (see `ip link`)")
            }
            guard (1...32).contains(parts[2].utf8.count) else {
                throw SourceError("the SSID must be 1 to 32 bytes")
            }
            return Source(interface: parts[1], ssid: parts[2])
        }
    }

    public struct SourceError: Error, CustomStringConvertible {
        public let description: String
        init(_ description: String) { self.description = description }
    }

    private let runtime: HotspotRuntime
    private let catalog: HelperCatalog
    private let networks: [NetworkDescription]
    private let emit: @Sendable (HotspotEvent) -> Void
    private let linkCheckInterval: Duration
    private let connectivity: ConnectivityMonitor.Settings?
    private let activity: RecentActivity
    private var linkWatch: Task<Void, Never>?
    private var connectivityWatches: [Task<Void, Never>] = []

    /// - Parameters:
    ///   - networks: one per source, with its interface, resolvers and probes.
    ///   - connectivity: how each network's connectivity is polled (nil: it is not); a
    ///     network that turns captive while authenticated gets `maintain` at once.
    ///   - activity: fed with the events the runtime and the daemon emit, for `status`.
    public init(runtime: HotspotRuntime, catalog: HelperCatalog, networks: [NetworkDescription],
                linkCheckInterval: Duration = .seconds(2), connectivity: ConnectivityMonitor.Settings? = nil,
                activity: RecentActivity = RecentActivity(), events: @escaping @Sendable (HotspotEvent) -> Void) {
        self.runtime = runtime
        self.catalog = catalog
        self.networks = networks
        self.linkCheckInterval = linkCheckInterval
        self.connectivity = connectivity
        self.activity = activity
        self.emit = events
    }

    /// Joins every network whose link is up (the first join is the operator's, not an
    /// auto-join), then keeps watching the links.
    public func start() async {
        var up: [String: Bool] = [:]
        await withTaskGroup(of: Void.self) { group in
            for network in networks {
                let isUp = Self.linkIsUp(network.interface)
                up[network.ssid] = isUp
                if isUp {
                    group.addTask { await self.runtime.join(network) }
                } else {
                    emit(.log(.info, "\(network.interface ?? "?") is down; \(network.ssid) is joined when it comes up", network: network.ssid))
                }
            }
        }
        guard !Task.isCancelled else { return }  // stopped during the first joins
        watchLinks(initially: up)
        if let connectivity { networks.forEach { watchConnectivity(of: $0, settings: connectivity) } }
    }

    /// Reads the scripts again and puts what loaded in place; reports it as a `reload` event.
    @discardableResult
    public func reload(reason: String) async -> HelperCatalog.Change {
        let change = await catalog.refresh()
        if change.changesHelpers { await runtime.replaceHelpers(await catalog.helpers) }
        emit(.reload(ReloadEvent(reason: reason, change)))
        return change
    }

    /// Stops watching links and every timer; state already on disk stays as it is.
    public func stop() async {
        linkWatch?.cancel()
        connectivityWatches.forEach { $0.cancel() }
        await runtime.stopTimers()
    }

    /// Blocks the daemon's actor for good, as a bug that wedged it would: the watchdog's test
    /// (a hidden option of `run`) checks that the service manager then hears no more pings.
    package func stallForTesting() {
        while true { sleep(3600) }
    }

    // MARK: the control socket

    public func handle(_ request: ControlRequest) async -> ControlReply {
        switch request.command {
        case .ui, .logoff, .join:
            guard let network = networks.first(where: { $0.ssid == request.network }) else {
                let known = networks.map(\.ssid).joined(separator: ", ")
                return ControlReply(ok: false, message: "no network \"\(request.network ?? "")\" here; this daemon runs \(known)")
            }
            switch request.command {
            case .ui: return await presentUI(network.ssid, answers: request.answers ?? [:])
            case .logoff: return await logoff(network.ssid)
            default: return await rejoin(network)
            }
        case .disable, .enable:
            return await setHelper(request)
        case .status:
            return ControlReply(ok: true, message: "\(networks.count) network\(networks.count == 1 ? "" : "s")", status: await status())
        case .watch:
            return ControlReply(ok: false, message: "watch is served by the control socket itself")  // never reaches a handler
        }
    }

    /// The networks and helpers as a person sees them (`hotspot-helper status`), read through
    /// the runtime: an answer also means neither actor is stuck, which is what the service
    /// manager's watchdog is fed on.
    public func status() async -> DaemonStatus {
        let saved = runtime.stateDirectory.snapshot
        var views: [DaemonStatus.Network] = []
        for network in networks {
            let ssid = network.ssid
            let verdict = activity.connectivity(of: ssid)
            views.append(DaemonStatus.Network(
                ssid: ssid, interface: network.interface, state: await runtime.state(of: ssid),
                helper: await runtime.chosenHelper(of: ssid), questions: await runtime.questions(of: ssid),
                connectivity: verdict?.verdict.rawValue, portalURL: verdict?.portalURL,
                autoJoinDisabled: saved.autoJoinDisabled.contains(ssid), recentCommands: activity.commands(of: ssid)))
        }
        let helpers = await catalog.helpers.map { helper in
            DaemonStatus.Helper(id: helper.id, displayName: helper.displayName, switchedOff: saved.disabledHelpers.contains(helper.id),
                                offFor: saved.disabledForNetwork.filter { $0.value.contains(helper.id) }.keys.sorted())
        }
        return DaemonStatus(networks: views, helpers: helpers)
    }

    private func presentUI(_ ssid: String, answers: [String: String]) async -> ControlReply {
        let before = await runtime.state(of: ssid)
        guard before == .presentingUI else {
            return ControlReply(ok: false, message: "\(ssid) is \(before.rawValue), not waiting for a person (presenting_ui)", state: before)
        }
        if let problems = await runtime.questions(of: ssid)?.problems(with: answers), !problems.isEmpty {
            return ControlReply(ok: false, message: "not sent to the helper: \(problems.joined(separator: "; ")); \(ssid) still waits for a person",
                                state: before)
        }
        let after = await runtime.presentUI(ssid, answers: answers)
        let ok = after == .authenticated
        return ControlReply(ok: ok, message: ok ? "\(ssid) is authenticated" : "\(ssid) is \(after.rawValue); the daemon's log says why",
                            state: after)
    }

    /// Logs off an authenticated network; a network waiting for a person stops waiting.
    private func logoff(_ ssid: String) async -> ControlReply {
        let before = await runtime.state(of: ssid)
        guard before == .authenticated || before == .presentingUI else {
            return ControlReply(ok: false, message: "\(ssid) is \(before.rawValue), not authenticated: nothing to log off", state: before)
        }
        let after = await runtime.logoff(ssid)
        let what = before == .authenticated ? "is logged off" : "no longer waits for a person"
        return ControlReply(ok: after == .inactive,
                            message: "\(ssid) \(what); it is joined again with `hotspot-helper join \(ssid)`, when its link goes down and up, or when the daemon restarts",
                            state: after)
    }

    private func rejoin(_ network: NetworkDescription) async -> ControlReply {
        guard Self.linkIsUp(network.interface) else {
            return ControlReply(ok: false, message: "\(network.interface ?? "?") is down; \(network.ssid) is joined when it comes up")
        }
        emit(.log(.info, "joining \(network.ssid) again, as asked", network: network.ssid))
        let after = await runtime.rejoin(network)
        let ok = after == .authenticated || after == .presentingUI
        return ControlReply(ok: ok, message: after == .authenticated ? "\(network.ssid) is authenticated"
                                : after == .presentingUI ? "\(network.ssid) waits for a person: answer with `hotspot-helper ui \(network.ssid)`"
                                : "\(network.ssid) is \(after.rawValue); the daemon's log says why", state: after)
    }

    private func setHelper(_ request: ControlRequest) async -> ControlReply {
        let ids = await catalog.helpers.map(\.id)
        guard let id = request.helper, ids.contains(id) else {
            return ControlReply(ok: false, message: "no helper \"\(request.helper ?? "")\"; the helpers are \(ids.joined(separator: ", "))")
        }
        let enabled = request.command == .enable
        do {
            try await runtime.setHelper(id, enabled: enabled, ssid: request.network)
        } catch {
            return ControlReply(ok: false, message: "the state directory could not be written: \(error)")
        }
        let scope = request.network.map { " for \($0)" } ?? " everywhere"
        emit(.log(.info, "\(enabled ? "enabled" : "disabled")\(scope) by the user", network: request.network, helper: id))
        return ControlReply(ok: true, message: "\(id) is \(enabled ? "enabled" : "disabled")\(scope)")
    }

    // MARK: connectivity

    /// The portal took the network back (a session that ran out, a portal restarted): the
    /// helper's `maintain` runs now rather than at its next timer, and logs in again.
    private func watchConnectivity(of network: NetworkDescription, settings: ConnectivityMonitor.Settings) {
        let changes: AsyncStream<ConnectivityVerdict>
        do {
            changes = try runtime.watchConnectivity(of: network, settings: settings).changes
        } catch {
            emit(.log(.error, "cannot watch connectivity: \(error)", network: network.ssid))
            return
        }
        let runtime = runtime, emit = emit, ssid = network.ssid
        connectivityWatches.append(Task {
            for await verdict in changes where verdict.state == .captive {
                guard await runtime.state(of: ssid) == .authenticated else { continue }
                emit(.log(.info, "\(ssid) is captive again: maintaining now", network: ssid))
                await runtime.maintain(ssid)
            }
        })
    }

    // MARK: links

    private func watchLinks(initially up: [String: Bool]) {
        let interval = linkCheckInterval
        linkWatch = Task { [weak self] in
            var up = up
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                guard let self, !Task.isCancelled else { return }
                up = await self.checkLinks(up)
            }
        }
    }

    private func checkLinks(_ wasUp: [String: Bool]) async -> [String: Bool] {
        var up = wasUp
        for var network in networks {
            let isUp = Self.linkIsUp(network.interface)
            guard isUp != wasUp[network.ssid] else { continue }
            up[network.ssid] = isUp
            if isUp {
                emit(.log(.info, "\(network.interface ?? "?") is up: joining", network: network.ssid))
                network.didAutoJoin = true
                await runtime.join(network)
            } else {
                emit(.log(.info, "\(network.interface ?? "?") is down: leaving", network: network.ssid))
                await runtime.leave(network.ssid)
            }
        }
        return up
    }

    /// Up (IFF_UP with a carrier), as the connectivity probes see it; a network with no
    /// interface of its own (the default route's) counts as up.
    static func linkIsUp(_ interface: String?) -> Bool {
        interface.map(NetworkLink.system.isUp) ?? true
    }
}

extension DaemonStatus {
    /// Each network's state, by SSID.
    public var networkStates: [String: HotspotState] {
        Dictionary(networks.map { ($0.ssid, $0.state) }, uniquingKeysWith: { first, _ in first })
    }

    /// One line, for the service manager: "1 of 2 networks authenticated (Aroma-Guest
    /// authenticated, Hotel presenting_ui); 3 helpers".
    public var summary: String {
        let authenticated = networks.count { $0.state == .authenticated }
        let each = networks.sorted { $0.ssid < $1.ssid }.map { "\($0.ssid) \($0.state.rawValue)" }.joined(separator: ", ")
        return "\(authenticated) of \(networks.count) network\(networks.count == 1 ? "" : "s") authenticated (\(each)); "
            + "\(helpers.count) helper\(helpers.count == 1 ? "" : "s")"
    }
}
