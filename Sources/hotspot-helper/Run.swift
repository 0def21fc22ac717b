#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import FoundationEssentials
import HotspotCommandLine
import HotspotControl
import HotspotDaemon
import HotspotRuntime
import NetworkSources
import ServiceIntegration

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

            --source networkd follows systemd-networkd on the system bus: a link it makes \
            routable is joined (a Wi-Fi link by its SSID, any other by its .network file's \
            name), with its name servers and the captive portal URI networkd records (systemd \
            254 and later; else option 114 from its lease file); a link that loses its carrier \
            is left. networkd checks no connectivity: the daemon probes (--probe-interval). \
            networkd:IFACE follows one link only.

            --source connman follows ConnMan on the system bus: a service it makes ready or \
            online is joined (a Wi-Fi service by its SSID, ethernet as "Wired"), with its \
            interface and name servers; one that goes idle or fails is left. Ready is not \
            online (Debian 12's ConnMan never goes online behind a portal): the daemon probes. \
            The daemon is ConnMan's agent: a passphrase request gets a helper's password for \
            that SSID, and ConnMan's RequestBrowser (a portal) is answered once the helpers \
            logged in. Helpers see its Wi-Fi services in filter_scan_list. connman:IFACE \
            follows one interface only.

            --source auto follows NetworkManager, else ConnMan, else systemd-networkd, \
            whichever has its name on the system bus first as the daemon starts; with none, \
            every interface that is up, each as a network of its name. Its first event says \
            what it chose and why.

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
            --metrics-listen serves Prometheus metrics at /metrics. --record-failures writes \
            each failed attempt of a helper at a venue as a HAR file in STATE-DIR/failures \
            (docs/OPERATIONS.md, "When a helper fails at a venue").

            --catalog DIR --trust KEYS runs a signed catalog instead (docs/OPERATIONS.md): only \
            the scripts its minisign-signed manifest lists with their digests load, and what is \
            refused is said with why; SIGHUP (or --watch, when the path names another directory) \
            takes a replaced catalog whole, or keeps the last good one when the new one does not \
            verify or a script of it fails to load.

            Examples:
              hotspot-helper run --scripts /etc/hotspot-helper/scripts \\
                --source interface:wlan0:Aroma-Guest --secrets /etc/hotspot-helper/secrets --watch
              hotspot-helper run --scripts /etc/hotspot-helper/scripts --source networkmanager
              hotspot-helper run --scripts /etc/hotspot-helper/scripts --source networkd:eth0
              hotspot-helper run --catalog /var/lib/fleet/catalog --trust /etc/hotspot-helper/fleet.pub \\
                --signed-only --source networkmanager

            Exit status: 0 after SIGTERM or SIGINT, 2 for usage errors, no loadable script, an \
            unusable state directory, or another daemon on the same state directory.
            """)

    @Option(name: .long, help: ArgumentHelp("A venue script, or a directory of *.lua scripts.", valueName: "path"))
    var scripts: String?

    @Option(name: .long, help: ArgumentHelp("A signed catalog instead: a directory with manifest.json, its minisign signature manifest.json.minisig and the scripts it lists (docs/OPERATIONS.md).",
                                            valueName: "dir"))
    var catalog: String?

    @Option(name: .long, help: ArgumentHelp("The minisign public keys that may sign the catalog, as `minisign -G` writes them (one or more).",
                                            valueName: "keys"))
    var trust: String?

    @Flag(name: .customLong("signed-only"), help: "Refuse to run unsigned scripts: only a --catalog that verifies against --trust.")
    var signedOnly = false

    @Option(name: .customLong("source"),
            help: ArgumentHelp("Where networks come from: an interface treated as a joined Wi-Fi network, NetworkManager, ConnMan, systemd-networkd, or auto (whichever runs); repeatable.",
                               valueName: "interface:IFACE:SSID|networkmanager[:IFACE]|connman[:IFACE]|networkd[:IFACE]|auto"),
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

    @OptionGroup var failureRecording: FailureRecordingOptions

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
        switch (scripts, catalog, trust) {
        case (nil, nil, _): throw ValidationError("give --scripts PATH, or --catalog DIR --trust KEYS")
        case (.some, .some, _): throw ValidationError("give --scripts or --catalog, not both")
        case (_, .some, nil): throw ValidationError("--catalog needs --trust KEYS: the minisign public keys that may sign it")
        case (.some, nil, .some): throw ValidationError("--trust goes with --catalog DIR")
        case (.some, nil, nil) where signedOnly:
            throw ValidationError("--signed-only refuses --scripts, whose scripts are not signed; give --catalog DIR --trust KEYS")
        default: break
        }
        guard !sources.isEmpty else {
            throw ValidationError("give at least one --source, such as --source interface:wlan0:Aroma-Guest or --source networkmanager")
        }
        if let controlGroup, ControlServer.groupID(named: controlGroup) == nil {
            throw ValidationError("--control-group: no group called \"\(controlGroup)\" (see /etc/group; `groupadd \(controlGroup)` makes one)")
        }
        var ssids: Set<[UInt8]> = []  // bytes: NFC and NFD forms of one name are two SSIDs
        var interfaces: Set<String> = []
        for source in sources {
            switch source {
            case .interface(let interface, let ssid):
                guard ssids.insert(Array(ssid.utf8)).inserted else { throw ValidationError("--source: the SSID \(ssid) is given twice") }
                guard interfaces.insert(interface).inserted else { throw ValidationError("--source: the interface \(interface) is given twice") }
            case .networkManager, .networkd, .connman:
                let interface = source.managedInterface
                guard sources.filter({ $0.sameManager(as: source) }).count == 1 || interface != nil else {
                    throw ValidationError("--source \(source) follows every device already; give it alone, or \(source):IFACE for each")
                }
                if let interface, !interfaces.insert(interface).inserted {
                    throw ValidationError("--source: the interface \(interface) is given twice")
                }
            case .auto:
                guard sources.count == 1 else { throw ValidationError("--source auto chooses what to follow itself; give it alone") }
            }
        }
    }

    func run() async throws {
        // First, so that a stop or reload that comes while the helpers load, the engine starts
        // or the sources connect is held for `serve` rather than ending the daemon by the signal.
        let signals = SignalEvents([SIGHUP, SIGTERM, SIGINT] + (stallsOnSIGUSR1 ? [SIGUSR1] : []))
        defer { withExtendedLifetime(signals) {} }  // its signal sources live while the daemon serves
        let output = EventOutput(json: json)
        var configuration = try runtimeOptions.configuration(maintainInterval: keeping.maintainInterval.duration, output: output)
        configuration.allowsPlainHTTPCaptivePortalAPI = captivePortalAPI.allowsPlainHTTP
        configuration.policy.verifyAuthentication = !keeping.probes.isEmpty
        configuration.failureRecordings = try failureRecording.recordings(stateDirectory: stateDirectory)
        // The one directory the control group's search permission may be added to: the state
        // directory this daemon makes now (`/run`, or a private directory, stays as it is).
        let madeStateDirectory = !FileManager.default.fileExists(atPath: stateDirectory)
        var settings = DaemonService.Settings(scripts: scripts ?? catalog ?? "", sources: sources, stateDirectory: stateDirectory,
                                              version: HotspotHelperCommand.version)
        if let trust {
            do throws(CatalogProblem) {
                settings.trust = try CatalogTrust.load(path: trust)
            } catch {
                output.fail("--trust \(error)")
                throw ExitCode(2)
            }
        }
        settings.controlSocket = controlSocket
        settings.controlGroup = controlGroup.flatMap(ControlServer.groupID(named:))
        settings.metricsListen = metricsListen
        settings.metricsNetworkLabels = metricsNetworkLabels
        settings.overrides = NetworkOverrides(resolvers: resolverOptions.resolvers, probes: keeping.probes.map(\.probe),
                                              captivePortalAPI: captivePortalAPI.url)
        settings.probeInterval = probeInterval.value > 0 ? probeInterval.duration : nil
        settings.watch = watch
        settings.controlSocketDirectoryIsOurs = controlSocket == nil && madeStateDirectory
        let persistence = try LoadedHelpers.stateDirectory(at: stateDirectory, output: output)
        let engine = try LoadedHelpers.engine(workers: runtimeOptions.workers, output: output)
        defer { engine.shutdown() }
        let service: DaemonService
        do {
            service = try await DaemonService(settings, engine: engine, persistence: persistence, configuration: configuration,
                                              events: output.write)
        } catch {
            if error.isUsage { throw ValidationError(error.lines.joined(separator: "\n")) }
            error.lines.forEach(output.fail)
            throw ExitCode(2)
        }
        await service.serve(signals: signals.received)
    }

    private static func listenAddress(_ text: String) throws -> MetricsResponder.ListenAddress {
        guard let address = MetricsResponder.ListenAddress.parse(text) else {
            throw ValidationError("--metrics-listen \(text) is not a port, ADDRESS:PORT or [IPv6]:PORT, such as 9464 or 127.0.0.1:9464")
        }
        return address
    }
}
