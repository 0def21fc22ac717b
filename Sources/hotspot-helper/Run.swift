#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import HotspotCommandLine
import FoundationEssentials
import HotspotNetwork
import HotspotRuntime
import HotspotSystem
import LuaSandbox
import HotspotCore
import HotspotMetrics
import Locking

struct Run: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "The daemon: keeps the device logged in to the networks its sources name.",
        discussion: """
            Each --source interface:IFACE:SSID treats an interface as a joined Wi-Fi network: \
            the daemon joins it (evaluate across the helpers, authenticate), runs maintain every \
            --maintain-interval, authenticates again when a helper says so, leaves the network \
            when the interface goes down and joins it again when it comes back up (the kernel \
            says so at once).

            --source networkmanager follows NetworkManager on the system bus \
            (DBUS_SYSTEM_BUS_ADDRESS, else the standard one): a device it activates is joined \
            (a Wi-Fi network by its SSID, any other by its connection's name), with its \
            interface, name servers and DHCP option 114; a deactivated one is left. Its own \
            connectivity check replaces the daemon's probes: a network it finds behind a \
            portal again is maintained at once. Helpers see its Wi-Fi scan list in \
            filter_scan_list, and a password a helper supplies there is given to NetworkManager \
            when it asks for that network's (the daemon is its secret agent). \
            networkmanager:IFACE follows one device only.

            Scripts are read again on SIGHUP, and whenever one changes with --watch; a script \
            that no longer loads keeps its last good version running. SIGTERM and SIGINT stop \
            the daemon cleanly: what it must remember (chosen helpers, exclusions, switched-off \
            helpers, cmd.store) is written to --state-dir as it changes, so a restart, even \
            after kill -9, goes on where it stopped (maintain with the cached helper, no evaluate).

            `hotspot-helper ui|logoff|disable|enable` talk to the daemon through \
            STATE-DIR/control.sock (or --control-socket), which only its owner may use.

            Under systemd (Type=notify) it says when it is ready, reloading and stopping, keeps \
            a status line, and feeds the watchdog (WatchdogSec=) while its runtime answers; \
            when standard output is the journal, each event is a journal entry with HH_* \
            fields (journalctl HH_NETWORK=Aroma-Guest). Without --secrets it reads the \
            credential `secrets` (LoadCredential=secrets:PATH) when there is one. \
            --metrics-listen serves Prometheus metrics at /metrics.

            Examples:
              hotspot-helper run --scripts /etc/hotspot-helper/scripts \\
                --source interface:wlan0:Aroma-Guest --secrets /etc/hotspot-helper/secrets --watch
              hotspot-helper run --scripts /etc/hotspot-helper/scripts --source networkmanager

            Exit status: 0 after SIGTERM or SIGINT, 2 for usage errors, no loadable script, an \
            unusable state directory, or another daemon on the same state directory.
            """)

    @Option(name: .long, help: ArgumentHelp("A venue script, or a directory of *.lua scripts.", valueName: "path"))
    var scripts: String

    @Option(name: .customLong("source"),
            help: ArgumentHelp("Where networks come from: an interface treated as a joined Wi-Fi network, or NetworkManager; repeatable.",
                               valueName: "interface:IFACE:SSID|networkmanager[:IFACE]"),
            transform: { text in
                do throws(NetworkSourceError) { return try NetworkSourceArgument.parse(text) } catch { throw ValidationError(error.description) }
            })
    var sources: [NetworkSourceArgument]

    @Option(name: .customLong("state-dir"), help: ArgumentHelp("Where state and the control socket are kept.", valueName: "dir"))
    var stateDirectory = "/var/lib/hotspot-helper"

    @Option(name: .customLong("control-socket"),
            help: ArgumentHelp("The control socket (default: STATE-DIR/control.sock), such as /run/hotspot-helper/control.sock.",
                               valueName: "path"))
    var controlSocket: String?

    @Option(name: .customLong("control-group"),
            help: ArgumentHelp("Also let this group's members control the daemon (`hotspot-helper web`, `ui`, `status` run by a person); the control socket is then mode 0660 in the group. Default: the daemon's owner only.",
                               valueName: "group"))
    var controlGroup: String?

    @Option(name: .customLong("metrics-listen"),
            help: ArgumentHelp("Serve Prometheus metrics at http://ADDRESS/metrics: a port (on loopback), ADDRESS:PORT or [IPv6]:PORT (default: none).",
                               valueName: "address"),
            transform: Self.listenAddress)
    var metricsListen: MetricsResponder.ListenAddress?

    @Flag(name: .customLong("metrics-network-labels"),
          help: "Label metrics with networks' SSIDs too (each SSID is a series; off, networks are counted by state only).")
    var metricsNetworkLabels = false

    /// For the watchdog's test: SIGUSR1 wedges the daemon's actor, as a bug would.
    @Flag(name: .customLong("debug-stall-on-sigusr1"), help: .hidden)
    var stallsOnSIGUSR1 = false

    @OptionGroup var resolverOptions: ResolverOptions

    @OptionGroup var runtimeOptions: RuntimeOptions

    @OptionGroup var keeping: KeepingOptions

    @OptionGroup var captivePortalAPI: CaptivePortalAPIOptions

    @Option(name: .customLong("probe-interval"), parsing: .unconditional,
            help: ArgumentHelp("Seconds between connectivity checks of each network, 0.01 to 86400 (0: none), but NetworkManager's, which it checks itself; a network captive again is maintained at once.",
                               valueName: "seconds"),
            transform: Seconds.within(0.01...Seconds.day, offAtZero: true))
    var probeInterval = Seconds(10)

    @Flag(help: "Reload the scripts whenever one is saved, added or removed.")
    var watch = false

    @Flag(help: "Write JSON lines to standard output, and nothing else.")
    var json = false

    func validate() throws {
        guard !sources.isEmpty else {
            throw ValidationError("give at least one --source, such as --source interface:wlan0:Aroma-Guest or --source networkmanager")
        }
        if let controlGroup, ControlServer.groupID(named: controlGroup) == nil {
            throw ValidationError("--control-group: no group called \"\(controlGroup)\" (see /etc/group; `groupadd \(controlGroup)` makes one)")
        }
        var ssids: Set<String> = []
        var interfaces: Set<String> = []
        for source in sources {
            switch source {
            case .interface(let interface, let ssid):
                guard ssids.insert(ssid).inserted else { throw ValidationError("--source: the SSID \(ssid) is given twice") }
                guard interfaces.insert(interface).inserted else { throw ValidationError("--source: the interface \(interface) is given twice") }
            case .networkManager(let interface):
                guard sources.filter({ if case .networkManager = $0 { true } else { false } }).count == 1 || interface != nil else {
                    throw ValidationError("--source networkmanager follows every device already; give it alone, or networkmanager:IFACE for each")
                }
                if let interface, !interfaces.insert(interface).inserted {
                    throw ValidationError("--source: the interface \(interface) is given twice")
                }
            }
        }
    }

    func run() async throws {
        let output = EventOutput(json: json)
        let metrics = metricsListen.map { _ in HotspotMetrics(version: HotspotHelperCommand.version, labelsNetworks: metricsNetworkLabels) }
        // Every event is written, counted in the metrics, kept in the recent activity `status`
        // shows, and sent to the control socket's watchers (`hotspot-helper web`) once it listens.
        let activity = RecentActivity()
        let watchers = PlainLock<ControlServer?>(nil)
        let emit: @Sendable (HotspotEvent) -> Void = { event in
            output.write(event)
            metrics?.record(event)
            activity.record(event)
            watchers.withLock { $0 }?.publish(Array(event.jsonLine.utf8))
        }
        var configuration = try runtimeOptions.configuration(maintainInterval: keeping.maintainInterval.duration, output: output)
        configuration.allowsPlainHTTPCaptivePortalAPI = captivePortalAPI.allowsPlainHTTP
        configuration.verifyAuthentication = !keeping.probes.isEmpty
        // The one directory the control group's search permission may be added to: the state
        // directory this daemon makes now (`/run`, or a private directory, stays as it is).
        let madeStateDirectory = !FileManager.default.fileExists(atPath: stateDirectory)
        let persistence = try LoadedHelpers.stateDirectory(at: stateDirectory, output: output)
        let engine = try LoadedHelpers.engine(workers: runtimeOptions.workers, output: output)
        defer { engine.shutdown() }
        let catalog = HelperCatalog(path: scripts, engine: engine, retirementDelay: configuration.commandDeadline)
        let firstLoad = await catalog.refresh()
        let helpers = await catalog.helpers
        guard !helpers.isEmpty else {
            firstLoad.problems.forEach { output.fail($0.description) }
            output.fail("no script at \(scripts) loads, so there is nothing to run; `hotspot-helper check \(scripts)` lists every problem")
            throw ExitCode(2)
        }
        // Connectivity probes and the check of a helper's success run in this process: libcurl
        // loads while the daemon starts. After the workers start: loading Debian's sets an
        // environment variable for a moment, which a worker spawned meanwhile would inherit.
        if configuration.verifyAuthentication || probeInterval.value > 0 { BoundHTTPClient.loadLibraryInBackground() }
        let runtime = HotspotRuntime(engine: engine, helpers: helpers, persistence: persistence,
                                     configuration: configuration, events: emit)
        let networkSources: [any NetworkSource] = sources.map { source in
            switch source {
            case .interface(let interface, let ssid):
                // A configured Captive Portal API URI is not looked for in the leases.
                InterfaceSource(interface: interface, ssid: ssid, discoveringCaptivePortalAPIIn: captivePortalAPI.url == nil ? .system : nil)
            case .networkManager(let interface):
                NetworkManagerSource(interface: interface)
            }
        }
        let overrides = NetworkOverrides(resolvers: resolverOptions.resolvers, probeURLs: keeping.probes.map(\.text),
                                         captivePortalAPI: captivePortalAPI.url)
        let connectivity = probeInterval.value > 0 ? ConnectivityMonitor.Settings(interval: probeInterval.duration) : nil
        let daemon = HotspotDaemon(runtime: runtime, catalog: catalog, sources: networkSources, overrides: overrides,
                                   connectivity: connectivity, activity: activity, events: emit)
        emit(.reload(ReloadEvent(reason: "started", firstLoad)))

        let control: ControlServer
        let metricsResponder: MetricsResponder?
        do {
            control = try ControlServer(path: controlSocket ?? stateDirectory + "/" + ControlServer.fileName,
                                        group: controlGroup.flatMap(ControlServer.groupID(named:)),
                                        madeDirectory: controlSocket == nil && madeStateDirectory) { await daemon.handle($0) }
            if let problem = control.groupReachProblem { emit(.log(.warn, problem)) }
            metricsResponder = try serve(metrics, of: daemon, engine: engine)
        } catch {
            output.fail("\(error)")
            throw ExitCode(2)
        }
        defer {
            control.stop()
            metricsResponder?.stop()
        }
        watchers.withLock { $0 = control }

        let signals = SignalEvents([SIGHUP, SIGTERM, SIGINT] + (stallsOnSIGUSR1 ? [SIGUSR1] : []))
        let watcher = try watch ? startWatching() : nil
        defer { watcher?.stop() }
        let serviceManager = ServiceNotifier()
        let reload: @Sendable (String) async -> Void = { reason in
            serviceManager?.notify(ServiceNotifier.reloadingAssignments)
            await daemon.reload(reason: reason)
            serviceManager?.notify(["READY=1", ServiceNotifier.status(await daemon.status().summary)])
        }
        let reloads = Task {
            guard let watcher else { return }
            for await _ in watcher.changes { await reload("changed on disk") }
        }
        defer { reloads.cancel() }

        let sourceList = sources.map(\.description).joined(separator: ", ")
        let metricsNote = metricsResponder.map { "; metrics at http://\($0.address)/metrics" } ?? ""
        emit(.log(.info, "running \(helpers.count) helper\(helpers.count == 1 ? "" : "s") for \(sourceList); control socket \(control.path)\(metricsNote)"))
        // The first joins run beside the signals, so a stop or a reload need not wait for them
        // (they can take a whole command deadline); a stop cancels them.
        let starting = Task { await daemon.start() }
        serviceManager?.notify(["READY=1", ServiceNotifier.status(await daemon.status().summary)])
        let heartbeat = Task { await serviceManager?.keepInformed { await daemon.status().summary } }
        for await signal in signals.received {
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
    private func serve(_ metrics: HotspotMetrics?, of daemon: HotspotDaemon, engine: LuaEngine) throws(MetricsResponderError)
        -> MetricsResponder?
    {
        guard let metrics, let metricsListen else { return nil }
        return try MetricsResponder(listening: metricsListen) {
            let status = await daemon.status()
            let replacements = Dictionary(uniqueKeysWithValues: engine.workerReplacements.map { ($0.key.rawValue, $0.value) })
            return metrics.exposition(.init(networkStates: status.networkStates, workerResidentBytes: engine.workerResidentBytes,
                                            workerReplacements: replacements))
        }
    }

    private static func listenAddress(_ text: String) throws -> MetricsResponder.ListenAddress {
        guard let address = MetricsResponder.ListenAddress.parse(text) else {
            throw ValidationError("--metrics-listen \(text) is not a port, ADDRESS:PORT or [IPv6]:PORT, such as 9464 or 127.0.0.1:9464")
        }
        return address
    }

    private func startWatching() throws -> ScriptWatcher {
        do {
            return try ScriptWatcher(path: scripts)
        } catch {
            throw ValidationError("--watch: \(error.description)")
        }
    }
}
