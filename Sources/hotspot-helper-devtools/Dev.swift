#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import HotspotCommandLine
import FoundationEssentials
import HotspotNetwork
import HotspotRuntime
import LinuxFiles
import LuaSandbox
import PortalSimulator
import PortalRecording
import Locking
import HotspotCore

struct Dev: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: DevTools.devAbstract,
        discussion: """
            Each run joins a network with the script as its only helper and goes through \
            evaluate, authenticate (present_ui with --answer when the script asks for a \
            person), maintain and logoff, printing the timeline. Then it watches the file: \
            every save reloads the script and runs it again. A version that no longer loads is \
            reported with file:line and the last good version stays loaded.

            With --scenario, the portal simulator plays that portal on loopback, under the \
            first name in the script's hosts, and answers every DNS name; it starts afresh \
            before each run. With --portal, the script runs against a real portal: URL is a page \
            the portal intercepts, used as the network's connectivity probe.

            Examples:
              hotspot-helper dev VenueHelpers/aroma.lua --scenario click-through --ssid Aroma-Guest
              hotspot-helper dev venue.lua --portal http://neverssl.com/ --interface wlan0

            Exit status with --once: 0 when the run reached authenticated, 1 when it did not, \
            2 for usage errors and a script that does not load, 3 with --require-helper when \
            the script did not claim the network.
            """)

    @Argument(help: ArgumentHelp("The venue script.", valueName: "script"))
    var script: String

    @Option(help: ArgumentHelp("A portal simulator scenario (see `hotspot-helper simulate --list`).", valueName: "name"))
    var scenario: String?

    @Option(help: ArgumentHelp("A real portal: a URL that its network intercepts.", valueName: "url"))
    var portal: String?

    @Option(help: "The SSID of the network the script is given.")
    var ssid = "hotspot-helper-dev"

    @OptionGroup var network: NetworkOptions

    @OptionGroup var runtimeOptions: RuntimeOptions

    @OptionGroup var answerOptions: AnswerOptions

    @Flag(help: "Run once and exit, instead of watching the script.")
    var once = false

    @OptionGroup var requireHelper: RequireHelperOption

    @Flag(help: "Write JSON lines to standard output, and nothing else.")
    var json = false

    func validate() throws {
        guard (scenario == nil) != (portal == nil) else {
            throw ValidationError("give either --scenario NAME (a simulated portal) or --portal URL (a real one)")
        }
        if let scenario, Scenario.named(scenario) == nil {
            throw ValidationError("--scenario \(scenario): no such scenario; the scenarios are \(Scenario.all.map(\.name).joined(separator: ", "))")
        }
        if let portal, !(portal.hasPrefix("http://") || portal.hasPrefix("https://")) {
            throw ValidationError("--portal \(portal) is not an http:// or https:// URL")
        }
        var isDirectory = false
        guard FileManager.default.fileExists(atPath: script, isDirectory: &isDirectory), !isDirectory else {
            throw ValidationError("\(script): no such script file")
        }
    }

    func run() async throws {
        let output = EventOutput(json: json)
        var configuration = try runtimeOptions.configuration(maintainInterval: .seconds(3600), output: output)
        // The simulated Captive Portal API is plain HTTP on loopback.
        configuration.allowsPlainHTTPCaptivePortalAPI = scenario == "capport"
        // A helper that claims success while the portal still holds the network is reported.
        configuration.policy.verifyAuthentication = true
        let answers = try answerOptions.answers()
        let engine = try LoadedHelpers.engine(workers: runtimeOptions.workers, output: output)
        defer { engine.shutdown() }
        let catalog = HelperCatalog(path: script, engine: engine, retirementDelay: configuration.policy.commandDeadline)
        let progress = ProgressLine(enabled: !json)
        let session = DevSession(engine: engine, output: output, progress: progress, configuration: configuration, answers: answers,
                                 ssid: ssid, scenario: scenario.flatMap(Scenario.named), portalURL: portal, network: network)
        defer { progress.stop() }

        let first = await catalog.refresh()
        output.write(.reload(ReloadEvent(reason: "started", first)))
        if once {
            guard let helper = await catalog.helpers.first else {
                LoadedHelpers.report(first.problems, output: output)
                throw ExitCode(2)
            }
            let run = try await session.run(helper)
            await session.stop()
            if run.reached != .authenticated { throw ExitCode(1) }
            try requireHelper.check(claimedBy: run.claimedBy)
            return
        }
        let watcher: ScriptWatcher
        do {
            watcher = try ScriptWatcher(path: script)
        } catch {
            output.fail(error.description)
            throw ExitCode(2)
        }
        let signals = SignalEvents([SIGINT, SIGTERM])
        let stopping = Task {
            for await _ in signals.received { break }
            watcher.stop()
        }
        if let helper = await catalog.helpers.first { _ = try await session.run(helper) }
        output.note("watching \(script): save it to run again; Ctrl-C stops")
        for await _ in watcher.changes {
            let change = await catalog.refresh()
            output.write(.reload(ReloadEvent(reason: "saved", change)))
            guard change.changesHelpers, let helper = await catalog.helpers.first else { continue }
            _ = try await session.run(helper)
            output.note("watching \(script): save it to run again; Ctrl-C stops")
        }
        stopping.cancel()
        await session.stop()
    }
}

/// What one run of a script went through.
struct DevRun: Sendable {
    /// The state the login reached (after present_ui, when the script asked and answers were given).
    let reached: HotspotState
    let claimedBy: String?
    /// Whether authenticate answered ui_required.
    let askedPerson: Bool
    /// Every command the script answered, in order.
    let commands: [CommandEvent]
}

/// The portal, the network and the runs of one `dev` session (and of each case of `test`).
actor DevSession {
    let engine: LuaEngine
    let output: EventOutput
    let progress: ProgressLine
    let configuration: HotspotRuntime.Configuration
    let answers: [String: String]
    let ssid: String
    let scenario: Scenario?
    let portalURL: String?
    /// A recorded login to replay instead of a scenario (`test --har`).
    let recording: PortalLogin?
    let network: NetworkOptions
    private var simulated: (portal: SimulatedPortal, host: String)?
    private var runs = 0

    init(engine: LuaEngine, output: EventOutput, progress: ProgressLine, configuration: HotspotRuntime.Configuration, answers: [String: String],
         ssid: String, scenario: Scenario?, portalURL: String?, recording: PortalLogin? = nil, network: NetworkOptions) {
        self.engine = engine
        self.output = output
        self.progress = progress
        self.configuration = configuration
        self.answers = answers
        self.ssid = ssid
        self.scenario = scenario
        self.portalURL = portalURL
        self.recording = recording
        self.network = network
    }

    /// One lifecycle: join, a person's answers when asked for, maintain, logoff. Returns
    /// the state the login reached.
    /// Runs the script once: the state reached, the helper that claimed the network, what it answered.
    func run(_ helper: HelperScript) async throws -> DevRun {
        runs += 1
        let joined = try await networkToJoin(for: helper)
        output.note("run \(runs): \(helper.id) on \(ssid)")
        let commands = PlainLock<[CommandEvent]>([])
        let runtime = HotspotRuntime(engine: engine, helpers: [helper], persistence: try StateDirectory(path: nil),
                                     configuration: configuration) { [output, progress] event in
            progress.observe(event)
            output.write(event)
            if case .command(let command) = event { commands.withLock { $0.append(command) } }
        }
        let started = ContinuousClock.now
        var state = await runtime.join(joined)
        let askedPerson = state == .presentingUI
        if state == .presentingUI {
            if answers.isEmpty {
                output.note("\(helper.id) waits for a person: give what they would enter with --answer name=value")
            } else {
                state = await runtime.presentUI(ssid, answers: answers)
            }
        }
        let reached = state
        let claimedBy = await runtime.chosenHelper(of: ssid)
        if state == .authenticated, claimedBy != nil {
            state = await runtime.maintain(ssid)
            await runtime.logoff(ssid)
        } else if state == .authenticated {
            output.note("\(helper.id) did not claim \(ssid) (evaluate answered none); give the SSID it expects with --ssid, and the credentials it needs with --secrets")
        }
        await runtime.stopTimers()
        progress.observe(nil)
        output.write(.done(DoneEvent(network: ssid, state: reached, helper: claimedBy)))
        let milliseconds = Int((ContinuousClock.now - started) / .milliseconds(1))
        output.note("run \(runs) ended \(reached.rawValue) in \(milliseconds) ms")
        return DevRun(reached: reached, claimedBy: claimedBy, askedPerson: askedPerson, commands: commands.withLock { $0 })
    }

    func stop() async {
        await simulated?.portal.stop()
        simulated = nil
    }

    private func networkToJoin(for helper: HelperScript) async throws -> NetworkDescription {
        guard scenario != nil || recording != nil else {
            return NetworkDescription(ssid: ssid, interface: network.interface, resolvers: network.resolvers,
                                      probes: try portalURL.map { [try Probe.parse($0).get()] } ?? [])
        }
        let host = Self.portalHost(of: helper)
        if let simulated, simulated.host == host {
            simulated.portal.reset()
        } else {
            await simulated?.portal.stop()
            var settings = ScenarioSettings()
            settings.portalHost = host
            let secrets = configuration.secrets.of(helper: helper.id)
            if let username = secrets["username"] { settings.username = username }
            if let password = secrets["password"] { settings.password = password }
            if let recording {
                let portal = try await SimulatedPortal.start(replaying: recording, settings: settings, dnsPort: 0,
                                                             requestLog: { [output] in output.note($0) })
                simulated = (portal, host)
                output.note("replaying \(recording.source) at http://\(host):\(portal.port)/ (every name resolves to it)")
            } else if let scenario {
                let portal = try await SimulatedPortal.start(scenario, settings: settings, dnsPort: 0)
                simulated = (portal, host)
                output.note("simulating \(scenario.name) at http://\(host):\(portal.port)/ (every name resolves to it); " +
                            "it accepts username \(settings.username), password \(settings.password)")
            }
        }
        let portal = simulated!.portal
        return NetworkDescription(ssid: ssid, resolvers: ["127.0.0.1:\(portal.dns!.port)"],
                                  probes: [Probe(url: "http://connectivitycheck.dev.example:\(portal.port)/generate_204")],
                                  captivePortalAPI: scenario == .capport ? "http://api.\(host):\(portal.port)/capport-api" : nil)
    }

    /// The first name in the script's hosts (a wildcard becomes `portal.`), so the script
    /// may reach the simulated portal; a script that follows the portal (`@portal`) reaches
    /// whatever name the portal gives. A portal at an address (openNDS's gateway) is the
    /// simulator's own address, which no resolver could make that address reach.
    static func portalHost(of helper: HelperScript) -> String {
        guard let first = helper.hosts.first(where: { !$0.text.hasPrefix("@") })?.text else { return "portal.example" }
        if RecordedURL("http://\(first)/")?.hostIsAddress == true { return "127.0.0.1" }
        return first.hasPrefix("*.") ? "portal" + first.dropFirst() : first
    }
}

/// While a command runs longer than a second, a line on standard error says which, and
/// for how long (redrawn in place on a terminal, written once otherwise).
final class ProgressLine: Sendable {
    private struct Activity {
        var text: String
        var started: ContinuousClock.Instant
        var shown = false
    }

    private let activity = PlainLock<Activity?>(nil)
    private let terminal = isatty(STDERR_FILENO) == 1
    private let ticker = PlainLock<Task<Void, Never>?>(nil)

    init(enabled: Bool) {
        guard enabled else { return }
        ticker.withLock {
            $0 = Task { [weak self] in
                while !Task.isCancelled {
                    try? await Task.sleep(for: .milliseconds(100))
                    self?.redraw()
                }
            }
        }
    }

    private func redraw() {
        activity.withLock { current in
            guard var shown = current, ContinuousClock.now - shown.started >= .seconds(1) else { return }
            let seconds = (ContinuousClock.now - shown.started) / .seconds(1)
            if terminal {
                Self.write("\r\u{1B}[2K… \(shown.text) \(seconds.withOneDecimal) s")
            } else if !shown.shown {
                Self.write("… \(shown.text): still running after 1 s\n")
            }
            shown.shown = true
            current = shown
        }
    }

    /// A transition starts an activity; a command's answer (or nil) ends it.
    func observe(_ event: HotspotEvent?) {
        activity.withLock { current in
            if current?.shown == true, terminal { Self.write("\r\u{1B}[2K") }
            switch event {
            case .state(let change) where [.evaluating, .authenticating, .maintaining, .loggingOff].contains(change.to):
                current = Activity(text: change.to.rawValue + (change.helper.map { " (\($0))" } ?? ""), started: .now)
            case nil, .command, .state:
                current = nil
            default:
                break
            }
        }
    }

    func stop() {
        ticker.withLock { $0?.cancel() }
        observe(nil)
    }

    private static func write(_ text: String) {
        writeUnbuffered(text, to: STDERR_FILENO)
    }
}
