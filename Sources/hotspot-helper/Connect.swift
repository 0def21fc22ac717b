import ArgumentParser
import HotspotCommandLine
import FoundationEssentials
import HotspotNetwork
import HotspotRuntime
import HotspotCore

struct Connect: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "connect",
        abstract: "Joins one network once with every script as a helper, and reports how it went.",
        discussion: """
            The state machine runs: evaluate goes to every helper, the winner authenticates, \
            and the network is kept --stay seconds with maintain every --maintain-interval. \
            With the same --state-dir, a second run uses the cached helper (no evaluate; \
            maintain with did_just_join). With --probe-url, a helper's success is checked by \
            those probes: a network still captive is reported (a connectivity event and a \
            warning naming the helper) and ends in failure, retried with backoff. A helper \
            that asks a person (ui_required) is answered with --answer or --answers, as the \
            person would fill in its form; without them, the run ends there.

            Exit status: 0 when the network is authenticated at the end, 1 when it is not, \
            2 for usage errors and scripts that fail to load, 3 with --require-helper when no \
            helper claimed the network.
            """)

    @Option(name: .long, help: ArgumentHelp("A venue script, or a directory of *.lua scripts.", valueName: "path"))
    var scripts: String

    @Option(help: "The network's SSID.")
    var ssid = "hotspot-helper"

    @Option(help: "The network's BSSID.")
    var bssid = ""

    @Option(help: ArgumentHelp("Signal strength, 0.0 to 1.0.", valueName: "0.0-1.0"))
    var signal = 1.0

    @Flag(help: "The network is secured (WPA).")
    var secure = false

    @OptionGroup var network: NetworkOptions

    @OptionGroup var runtimeOptions: RuntimeOptions

    @OptionGroup var captivePortalAPI: CaptivePortalAPIOptions

    @OptionGroup var keeping: KeepingOptions

    @OptionGroup var requireHelper: RequireHelperOption

    @OptionGroup var failureRecording: FailureRecordingOptions

    @OptionGroup var answerOptions: AnswerOptions

    @Option(name: .customLong("state-dir"),
            help: ArgumentHelp("Where the chosen helper, exclusions and cmd.store are kept (default: nothing is kept).", valueName: "dir"))
    var stateDirectory: String?

    @Option(parsing: .unconditional, help: ArgumentHelp("Seconds to keep the network after joining, up to 604800 (a week).", valueName: "seconds"),
            transform: Seconds.within(0...(7 * Seconds.day)))
    var stay = Seconds(0)

    @Flag(help: "Write JSON lines to standard output, and nothing else.")
    var json = false

    /// Whether `arguments` (those after the executable's path) are a `connect` that checks its
    /// helper's success (`--probe-url`), whose probes run in this process: a guess made before
    /// parsing, so that `main` starts loading libcurl then, while the command parses and its
    /// worker starts. Loaded later, after the scripts, it competed with the worker's own load
    /// before the first command (about 0.1 of the login's ratio to curl's time, in the bench).
    /// With Debian's libcurl (the project's not installed), a further worker (`--workers`)
    /// spawned during the load inherits `GNUTLS_NO_IMPLICIT_INIT`, which its own load sets.
    static func checksSuccess(_ arguments: [String]) -> Bool {
        arguments.first == configuration.commandName && arguments.contains { $0 == "--probe-url" || $0.hasPrefix("--probe-url=") }
    }

    /// What the person at the terminal can do about a network left unauthenticated.
    static func whatNow(ssid: String, state: HotspotState, helper: String?) -> String {
        if state == .presentingUI {
            return "\(helper ?? "the helper") asks a person: run again with --answer name=value (with a daemon: hotspot-helper ui \(ssid))"
        }
        guard helper != nil else {
            return "no helper claimed \(ssid): open its portal in a browser, or add a venue script for it"
        }
        return "a daemon (hotspot-helper run) tries \(ssid) again by itself, after a failure on a long backoff (5 min, doubling up to an hour); "
            + "hotspot-helper join \(ssid) or the person's page's Join again button tries it at once"
    }

    func validate() throws {
        _ = try failureRecording.recordings(stateDirectory: stateDirectory)
        guard (0...1).contains(signal) else { throw ValidationError("--signal must be between 0.0 and 1.0, not \(signal)") }
        if let problem = String.ssidProblem(ssid) { throw ValidationError("--ssid: \(problem)") }
    }

    func run() async throws {
        let output = EventOutput(json: json)
        let answers = try answerOptions.answers()
        let loaded = try await LoadedHelpers.load(scripts, workers: runtimeOptions.workers, output: output)
        defer { loaded.engine.shutdown() }
        var configuration = try runtimeOptions.configuration(maintainInterval: keeping.maintainInterval.duration, output: output)
        configuration.allowsPlainHTTPCaptivePortalAPI = captivePortalAPI.allowsPlainHTTP
        configuration.policy.verifyAuthentication = !keeping.probes.isEmpty
        configuration.failureRecordings = try failureRecording.recordings(stateDirectory: stateDirectory)
        let persistence = try LoadedHelpers.stateDirectory(at: stateDirectory, output: output)
        let runtime = HotspotRuntime(engine: loaded.engine, helpers: loaded.helpers, persistence: persistence,
                                     configuration: configuration, events: output.write)
        let api = captivePortalAPI.uri(interface: network.interface)
        if let note = api.note { output.write(.log(.info, note, network: ssid)) }
        let joined = NetworkDescription(ssid: ssid, bssid: bssid, signalStrength: signal, isSecure: secure,
                                         interface: network.interface, resolvers: network.resolvers, probes: keeping.probes.map(\.probe),
                                         captivePortalAPI: api.uri, captivePortalAPIIsFromLink: api.note != nil)
        if await runtime.join(joined) == .presentingUI, !answers.isEmpty {
            _ = await runtime.presentUI(ssid, answers: answers)
        }
        if stay.value > 0 { try? await Task.sleep(for: stay.duration) }
        await runtime.settle()  // a maintain under way as the stay ends finishes first
        let state = await runtime.state(of: ssid)
        let helper = await runtime.chosenHelper(of: ssid)
        output.write(.done(DoneEvent(network: ssid, state: state, helper: helper)))
        if state != .authenticated {
            output.note(Self.whatNow(ssid: ssid, state: state, helper: helper))
            throw ExitCode(1)
        }
        try requireHelper.check(claimedBy: helper)
    }
}
