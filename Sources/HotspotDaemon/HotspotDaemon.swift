#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
public import HotspotNetwork
public import HotspotCore
public import HotspotRuntime
public import NetworkSources
public import HotspotControl

/// `hotspot-helper run`: the runtime kept going on a device. It joins and leaves the networks
/// as its sources (`NetworkSource`: an interface, NetworkManager) report them, reloads the
/// helpers when asked, and answers the control socket's requests. `DaemonService` puts it
/// together with the rest of a running daemon.
public actor HotspotDaemon {
    let runtime: HotspotRuntime
    private let catalog: HelperCatalog
    let sources: [any NetworkSource]
    let overrides: NetworkOverrides
    let emit: @Sendable (HotspotEvent) -> Void
    let connectivity: ConnectivityMonitor.Settings?
    private let activity: RecentActivity
    /// What the sources said and the work it started (HotspotDaemon+Sources.swift).
    var tracking = SourceTracking()

    /// - Parameters:
    ///   - sources: where the networks come from; each is started by `start`.
    ///   - overrides: what the daemon's options say of every network, over what the sources say.
    ///   - connectivity: how the connectivity of each network whose source does not report
    ///     it is polled (nil: it is not); a network that turns captive while authenticated gets
    ///     `maintain` at once.
    ///   - activity: fed with the events the runtime and the daemon emit, for `status`.
    public init(runtime: HotspotRuntime, catalog: HelperCatalog, sources: [any NetworkSource], overrides: NetworkOverrides = NetworkOverrides(),
                connectivity: ConnectivityMonitor.Settings? = nil, activity: RecentActivity = RecentActivity(),
                events: @escaping @Sendable (HotspotEvent) -> Void) {
        self.runtime = runtime
        self.catalog = catalog
        self.sources = sources
        self.overrides = overrides
        self.connectivity = connectivity
        self.activity = activity
        self.emit = events
    }

    /// Starts the sources: each joins its networks as it reports them (the first join of a
    /// network up at the start is the operator's, not an auto-join) and leaves them as they go.
    public func start() {
        startSources()
    }

    /// Reads the scripts again and puts what loaded in place; reports it as a `reload` event.
    @discardableResult
    public func reload(reason: String) async -> HelperCatalog.Change {
        let change = await catalog.refresh()
        for warning in change.warnings { emit(.log(.warn, warning)) }
        if change.changesHelpers { await runtime.replaceHelpers(await catalog.helpers) }
        emit(.reload(ReloadEvent(reason: reason, change)))
        return change
    }

    /// Stops the sources, the commands they started and every timer; state already on disk
    /// stays as it is.
    public func stop() async {
        await stopSources()
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
            guard let network = tracking.networks.first(where: { $0.ssid == request.network }) else {
                let known = tracking.networks.map(\.ssid).joined(separator: ", ")
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
            let count = tracking.networks.count
            return ControlReply(ok: true, message: "\(count) network\(count == 1 ? "" : "s")", status: await status())
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
        for network in tracking.networks {
            let ssid = network.ssid
            let verdict = activity.connectivity(of: ssid)
            views.append(DaemonStatus.Network(
                ssid: ssid, interface: network.interface, state: await runtime.state(of: ssid),
                helper: await runtime.chosenHelper(of: ssid), questions: await runtime.questions(of: ssid),
                connectivity: verdict?.verdict.rawValue, portalURL: verdict?.portalURL,
                autoJoinDisabled: saved.autoJoinDisabled.contains(ssid),
                retryInSeconds: await runtime.nextRetry(of: ssid).map { Int($0.components.seconds) },
                recentCommands: activity.commands(of: ssid)))
        }
        let helpers = await catalog.helpers.map { helper in
            DaemonStatus.Helper(id: helper.id, displayName: helper.displayName, switchedOff: saved.disabledHelpers.contains(helper.id),
                                offFor: saved.disabledForNetwork.all.filter { $0.value.contains(helper.id) }.map(\.ssid).sorted())
        }
        return DaemonStatus(networks: views, helpers: helpers, catalogVersion: await catalog.catalogVersion)
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
        guard tracking.joined[network.ssid] != nil else {
            return ControlReply(ok: false, message: "the device is not on \(network.ssid) now; it is joined when it is back")
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
            + "\(helpers.count) helper\(helpers.count == 1 ? "" : "s")" + (catalogVersion.map { " of catalog \($0)" } ?? "")
    }
}
