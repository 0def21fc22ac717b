#if canImport(Glibc)
public import Glibc
#endif
import HotspotControl
public import HotspotCore
import HotspotMetrics
import HotspotNetwork
public import HotspotRuntime
import LinuxFiles
import Locking
public import LuaSandbox
public import NetworkSources
public import ServiceIntegration

/// The daemon put together, as `hotspot-helper run` starts it: the runtime over the helpers of
/// a script path, the network sources, the control socket, the service manager's protocol, the
/// metrics and the script watcher. The command line parses the options into `Settings` and
/// renders the events; what joins the parts is here.
public final class DaemonService: Sendable {
    /// What the daemon was told, parsed and checked by the command line.
    public struct Settings: Sendable {
        public var scripts: String
        public var sources: [NetworkSourceArgument]
        public var stateDirectory: String
        /// The control socket's path; nil: STATE-DIR/control.sock.
        public var controlSocket: String?
        /// The group whose members may also use the control socket.
        public var controlGroup: gid_t?
        /// Whether the daemon made the control socket's directory now, so that it may let the
        /// control group search it (a directory it did not make stays as it is).
        public var controlSocketDirectoryIsOurs = false
        public var metricsListen: MetricsResponder.ListenAddress?
        public var metricsNetworkLabels = false
        /// The version the metrics report.
        public var version: String
        public var overrides = NetworkOverrides()
        /// How often the daemon checks the connectivity of the networks whose source does not; nil: never.
        public var probeInterval: Duration?
        /// Reload whenever a script changes on disk.
        public var watch = false
        /// With keys, `scripts` is a signed catalog, verified against them.
        public var trust: CatalogTrust?

        public init(scripts: String, sources: [NetworkSourceArgument], stateDirectory: String, version: String) {
            self.scripts = scripts
            self.sources = sources
            self.stateDirectory = stateDirectory
            self.version = version
        }
    }

    /// Why the daemon did not start: a usage error (the command line shows its usage), or
    /// another problem, each line of it for standard error.
    public struct StartError: Error {
        public var lines: [String]
        public var isUsage: Bool
    }

    private let daemon: HotspotDaemon
    private let control: ControlServer
    private let metricsResponder: MetricsResponder?
    private let watcher: ScriptWatcher?
    private let serviceManager: ServiceNotifier?
    private let emit: @Sendable (HotspotEvent) -> Void
    private let helperCount: Int
    private let sourceList: String

    /// Loads the helpers, starts the control socket and the metrics responder; the sources
    /// start with `serve`. Every event goes to `events` (and to the metrics, `status` and the
    /// control socket's watchers).
    public init(_ settings: Settings, engine: LuaEngine, persistence: StateDirectory, configuration: RuntimeConfiguration,
                events: @escaping @Sendable (HotspotEvent) -> Void) async throws(StartError) {
        let metrics = settings.metricsListen.map { _ in HotspotMetrics(version: settings.version, labelsNetworks: settings.metricsNetworkLabels) }
        // Every event is written, counted in the metrics, kept in the recent activity `status`
        // shows, and sent to the control socket's watchers (`hotspot-helper web`) once it listens.
        let activity = RecentActivity()
        let watchers = PlainLock<ControlServer?>(nil)
        let emit: @Sendable (HotspotEvent) -> Void = { event in
            events(event)
            metrics?.record(event)
            activity.record(event)
            watchers.withLock { $0 }?.publish(Array(event.jsonLine(at: .now).utf8))
        }
        self.emit = emit
        let catalog = HelperCatalog(path: settings.scripts, engine: engine, retirementDelay: configuration.policy.commandDeadline,
                                    trust: settings.trust, stateDirectory: persistence.path, runtimeVersion: settings.version)
        let firstLoad = await catalog.refresh()
        for warning in firstLoad.warnings { emit(.log(.warn, warning)) }
        let helpers = await catalog.helpers
        guard !helpers.isEmpty else {
            throw StartError(lines: firstLoad.problems.map(\.description)
                + ["no script at \(settings.scripts) loads, so there is nothing to run; `hotspot-helper check \(settings.scripts)` lists every problem"],
                isUsage: false)
        }
        helperCount = helpers.count
        // Connectivity probes and the check of a helper's success run in this process: libcurl
        // loads while the daemon starts. After the workers start: loading Debian's sets an
        // environment variable for a moment, which a worker spawned meanwhile would inherit.
        if configuration.policy.verifyAuthentication || settings.probeInterval != nil { BoundHTTPClient.loadLibraryInBackground() }
        let runtime = HotspotRuntime(engine: engine, helpers: helpers, persistence: persistence, configuration: configuration, events: emit)
        let captivePortalAPIConfigured = settings.overrides.captivePortalAPI != nil
        let networkSources: [any NetworkSource] = settings.sources.map { source in
            switch source {
            case .interface(let interface, let ssid):
                // A configured Captive Portal API URI is not looked for in the leases.
                InterfaceSource(interface: interface, ssid: ssid, discoveringCaptivePortalAPIIn: captivePortalAPIConfigured ? nil : .system)
            case .networkManager(let interface):
                NetworkManagerSource(interface: interface)
            case .connman(let interface):
                ConnManSource(interface: interface)
            case .networkd(let interface):
                NetworkdSource(interface: interface, leases: captivePortalAPIConfigured ? nil : CaptivePortalAPIDiscovery.Places.system.networkdLeases)
            case .auto:
                AutoSource(discoveringCaptivePortalAPIIn: captivePortalAPIConfigured ? nil : .system)
            }
        }
        let connectivity = settings.probeInterval.map { ConnectivityMonitor.Settings(interval: $0) }
        let daemon = HotspotDaemon(runtime: runtime, catalog: catalog, sources: networkSources, overrides: settings.overrides,
                                   connectivity: connectivity, activity: activity, events: emit)
        self.daemon = daemon
        emit(.reload(ReloadEvent(reason: "started", firstLoad)))

        let control: ControlServer
        do {
            control = try ControlServer(path: settings.controlSocket ?? settings.stateDirectory + "/" + ControlServer.fileName,
                                        group: settings.controlGroup, madeDirectory: settings.controlSocketDirectoryIsOurs) {
                await daemon.handle($0)
            }
        } catch {
            throw StartError(lines: ["\(error)"], isUsage: false)
        }
        if let problem = control.groupReachProblem { emit(.log(.warn, problem)) }
        let metricsResponder: MetricsResponder?
        do {
            metricsResponder = try Self.serve(metrics, at: settings.metricsListen, of: daemon, engine: engine)
        } catch {
            control.stop()
            throw StartError(lines: ["\(error)"], isUsage: false)
        }
        watchers.withLock { $0 = control }
        do {
            watcher = settings.watch ? try ScriptWatcher(path: settings.scripts) : nil
        } catch {
            control.stop()
            metricsResponder?.stop()
            throw StartError(lines: ["--watch: \(error.description)"], isUsage: true)
        }
        self.control = control
        self.metricsResponder = metricsResponder
        serviceManager = ServiceNotifier()
        sourceList = settings.sources.map(\.description).joined(separator: ", ")
    }

    /// Runs the daemon until a stop signal: the sources join their networks, SIGHUP and the
    /// script watcher reload, SIGTERM and SIGINT stop (`signals` are the signals received; SIGUSR1,
    /// when among them, wedges the daemon's actor, for the watchdog's test).
    public func serve(signals: AsyncStream<Int32>) async {
        let daemon = daemon
        let serviceManager = serviceManager
        let reload: @Sendable (String) async -> Void = { reason in
            serviceManager?.notify(ServiceNotifier.reloadingAssignments)
            await daemon.reload(reason: reason)
            serviceManager?.notify(["READY=1", ServiceNotifier.status(await daemon.status().summary)])
        }
        let reloads = Task { [watcher] in
            guard let watcher else { return }
            for await _ in watcher.changes { await reload("changed on disk") }
        }
        defer {
            reloads.cancel()
            watcher?.stop()
            control.stop()
            metricsResponder?.stop()
        }
        let metricsNote = metricsResponder.map { "; metrics at http://\($0.address)/metrics" } ?? ""
        emit(.log(.info, "running \(helperCount) helper\(helperCount == 1 ? "" : "s") for \(sourceList); control socket \(control.path)\(metricsNote)"))
        // The first joins run beside the signals, so a stop or a reload need not wait for them
        // (they can take a whole command deadline); a stop cancels them.
        let starting = Task { await daemon.start() }
        serviceManager?.notify(["READY=1", ServiceNotifier.status(await daemon.status().summary)])
        let heartbeat = Task { await serviceManager?.keepInformed { await daemon.status().summary } }
        for await signal in signals {
            if signal == SIGHUP {
                await reload("SIGHUP")
                continue
            }
            if signal == SIGUSR1 {
                Task { await daemon.stallForTesting() }
                continue
            }
            emit(.log(.info, "stopping on \(signal == SIGTERM ? "SIGTERM" : "SIGINT")"))
            break
        }
        serviceManager?.notify(["STOPPING=1"])
        heartbeat.cancel()
        starting.cancel()
        await starting.value
        await daemon.stop()
    }

    /// The responder Prometheus scrapes, when `--metrics-listen` asks for one: each scrape
    /// reads the networks' states through the daemon and the workers' figures from the engine.
    private static func serve(_ metrics: HotspotMetrics?, at address: MetricsResponder.ListenAddress?, of daemon: HotspotDaemon,
                              engine: LuaEngine) throws(MetricsResponderError) -> MetricsResponder? {
        guard let metrics, let address else { return nil }
        return try MetricsResponder(listening: address) {
            let status = await daemon.status()
            let replacements = Dictionary(uniqueKeysWithValues: engine.workerReplacements.map { ($0.key.rawValue, $0.value) })
            return metrics.exposition(.init(networkStates: status.networkStates, workerResidentBytes: engine.workerResidentBytes,
                                            workerReplacements: replacements))
        }
    }
}
