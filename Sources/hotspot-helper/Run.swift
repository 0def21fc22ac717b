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
import Synchronization

struct Run: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "The daemon: keeps the device logged in to the networks its sources name.",
        discussion: """
            Each --source interface:IFACE:SSID treats an interface as a joined Wi-Fi network: \
            the daemon joins it (evaluate across the helpers, authenticate), runs maintain every \
            --maintain-interval, authenticates again when a helper says so, leaves the network \
            when the interface goes down and joins it again when it comes back up.

            Scripts are read again on SIGHUP, and whenever one changes with --watch; a script \
            that no longer loads keeps its last good version running. SIGTERM and SIGINT stop \
            the daemon cleanly: what it must remember (chosen helpers, exclusions, switched-off \
            helpers, cmd.store) is written to --state-dir as it changes, so a restart, even \
            after kill -9, goes on where it stopped (maintain with the cached helper, no evaluate).

            `hotspot-helper ui|logoff|disable|enable` talk to the daemon through \
            STATE-DIR/control.sock, which only its owner may use.

            Example:
              hotspot-helper run --scripts /etc/hotspot-helper/scripts \\
                --source interface:wlan0:Aroma-Guest --secrets /etc/hotspot-helper/secrets --watch

            Exit status: 0 after SIGTERM or SIGINT, 2 for usage errors, no loadable script, an \
            unusable state directory, or another daemon on the same state directory.
            """)

    @Option(name: .long, help: ArgumentHelp("A venue script, or a directory of *.lua scripts.", valueName: "path"))
    var scripts: String

    @Option(name: .customLong("source"),
            help: ArgumentHelp("A network to keep: an interface treated as a joined Wi-Fi network; repeatable.",
                               valueName: "interface:IFACE:SSID"),
            transform: { text in
                do throws(HotspotDaemon.SourceError) { return try HotspotDaemon.Source.parse(text) } catch { throw ValidationError(error.description) }
            })
    var sources: [HotspotDaemon.Source]

    @Option(name: .customLong("state-dir"), help: ArgumentHelp("Where state and the control socket are kept.", valueName: "dir"))
    var stateDirectory = "/var/lib/hotspot-helper"

    @Option(name: .customLong("control-group"),
            help: ArgumentHelp("Also let this group's members control the daemon (`hotspot-helper web`, `ui`, `status` run by a person); the control socket is then mode 0660 in the group. Default: the daemon's owner only.",
                               valueName: "group"))
    var controlGroup: String?

    @OptionGroup var resolverOptions: ResolverOptions

    @OptionGroup var runtimeOptions: RuntimeOptions

    @OptionGroup var keeping: KeepingOptions

    @OptionGroup var captivePortalAPI: CaptivePortalAPIOptions

    @Option(name: .customLong("probe-interval"), parsing: .unconditional,
            help: ArgumentHelp("Seconds between connectivity checks of each network, 0.01 to 86400 (0: none); a network captive again is maintained at once.",
                               valueName: "seconds"),
            transform: Seconds.within(0.01...Seconds.day, offAtZero: true))
    var probeInterval = Seconds(10)

    @Flag(help: "Reload the scripts whenever one is saved, added or removed.")
    var watch = false

    @Flag(help: "Write JSON lines to standard output, and nothing else.")
    var json = false

    func validate() throws {
        guard !sources.isEmpty else {
            throw ValidationError("give at least one --source interface:IFACE:SSID, such as --source interface:wlan0:Aroma-Guest")
        }
        if let controlGroup, ControlServer.groupID(named: controlGroup) == nil {
            throw ValidationError("--control-group: no group called \"\(controlGroup)\" (see /etc/group; `groupadd \(controlGroup)` makes one)")
        }
        var seen: Set<String> = []
        for source in sources {
            guard seen.insert(source.ssid).inserted else { throw ValidationError("--source: the SSID \(source.ssid) is given twice") }
        }
    }

    func run() async throws {
        let output = EventOutput(json: json)
        var configuration = try runtimeOptions.configuration(maintainInterval: keeping.maintainInterval.duration, output: output)
        configuration.allowsPlainHTTPCaptivePortalAPI = captivePortalAPI.allowsPlainHTTP
        configuration.verifyAuthentication = !keeping.probes.isEmpty
        let persistence = try LoadedHelpers.stateDirectory(at: stateDirectory, output: output)
        let engine = try LoadedHelpers.engine(workers: runtimeOptions.workers, output: output)
        defer { engine.shutdown() }
        // Connectivity probes and the check of a helper's success run in this process (after
        // the workers start, as in connect).
        if configuration.verifyAuthentication || probeInterval.value > 0 { BoundHTTPClient.loadLibraryInBackground() }
        let catalog = HelperCatalog(path: scripts, engine: engine, retirementDelay: configuration.commandDeadline)
        let firstLoad = await catalog.refresh()
        let helpers = await catalog.helpers
        guard !helpers.isEmpty else {
            firstLoad.problems.forEach { output.fail($0.description) }
            output.fail("no script at \(scripts) loads, so there is nothing to run; `hotspot-helper check \(scripts)` lists every problem")
            throw ExitCode(2)
        }
        // Every event is written, kept in the recent activity `status` shows, and sent to the
        // control socket's watchers (`hotspot-helper web`) once it listens.
        let activity = RecentActivity()
        let watchers = Mutex<ControlServer?>(nil)
        let emit: @Sendable (HotspotEvent) -> Void = { event in
            activity.record(event)
            output.write(event)
            watchers.withLock { $0 }?.publish(Array(event.jsonLine.utf8))
        }
        let runtime = HotspotRuntime(engine: engine, helpers: helpers, persistence: persistence,
                                     configuration: configuration, events: emit)
        let networks = sources.map { source in
            let api = captivePortalAPI.uri(interface: source.interface)
            if let note = api.note { output.write(.log(.info, note, network: source.ssid)) }
            return NetworkDescription(ssid: source.ssid, interface: source.interface, resolvers: resolverOptions.resolvers,
                                      probeURLs: keeping.probes.map(\.text), captivePortalAPI: api.uri)
        }
        let connectivity = probeInterval.value > 0 ? ConnectivityMonitor.Settings(interval: probeInterval.duration) : nil
        let daemon = HotspotDaemon(runtime: runtime, catalog: catalog, networks: networks, connectivity: connectivity,
                                   activity: activity, events: emit)
        output.write(.reload(ReloadEvent(reason: "started", firstLoad)))

        let control: ControlServer
        do {
            control = try ControlServer(path: stateDirectory + "/" + ControlServer.fileName, group: controlGroup.flatMap(ControlServer.groupID(named:))) {
                await daemon.handle($0)
            }
        } catch {
            output.fail(error.description)
            throw ExitCode(2)
        }
        defer { control.stop() }
        watchers.withLock { $0 = control }

        let signals = SignalEvents([SIGHUP, SIGTERM, SIGINT])
        let watcher = try watch ? startWatching() : nil
        defer { watcher?.stop() }
        let reloads = Task {
            guard let watcher else { return }
            for await _ in watcher.changes { await daemon.reload(reason: "changed on disk") }
        }
        defer { reloads.cancel() }

        let sourceList = networks.map { "\($0.ssid) on \($0.interface ?? "?")" }.joined(separator: ", ")
        output.write(.log(.info, "running \(helpers.count) helper\(helpers.count == 1 ? "" : "s") for \(sourceList); control socket \(control.path)"))
        // The first joins run beside the signals, so a stop or a reload need not wait for them
        // (they can take a whole command deadline); a stop cancels them.
        let starting = Task { await daemon.start() }
        for await signal in signals.received {
            if signal == SIGHUP {
                await daemon.reload(reason: "SIGHUP")
                continue
            }
            output.write(.log(.info, "stopping on \(signal == SIGTERM ? "SIGTERM" : "SIGINT")"))
            break
        }
        starting.cancel()
        await starting.value
        await daemon.stop()
    }

    private func startWatching() throws -> ScriptWatcher {
        do {
            return try ScriptWatcher(path: scripts)
        } catch {
            throw ValidationError("--watch: \(error.description)")
        }
    }
}
