import FoundationEssentials
public import HotspotCore
import HotspotNetwork
public import LuaSandbox

/// The hotspot-helper runtime: the state machine with venue scripts as helpers, run in the
/// sandboxed engine (`ScriptTransport`), the state directory as its persistence, and the
/// network checked over its own interface and resolvers (`BoundNetworkChecks`).
public typealias HotspotRuntime = HotspotMachine<ScriptTransport>

/// What a device configures about its runtime: the machine's policy (deadlines, maintain,
/// backoff, the check after success) and what the runtime adds to it.
public struct RuntimeConfiguration: Sendable {
    /// What the state machine is told: deadlines, the maintain interval, the backoff, whether
    /// a helper's success is checked.
    public var policy: HotspotRuntime.Policy
    /// Venue credentials for `cmd:secret`; their values never appear in an event.
    public var secrets: Secrets
    /// Extra trusted CA certificates (PEM) for helpers' HTTPS requests.
    public var caFile: String?
    /// Whether a network's Captive Portal API may be plain HTTP (local testing only).
    public var allowsPlainHTTPCaptivePortalAPI = false
    /// How long before a Captive Portal API session runs out `maintain` comes (at most a
    /// quarter of what remains).
    public var captivePortalRenewalMargin: Duration = .seconds(60)
    /// How many declared helpers' states stay built once used (see `HelperState`): the venues
    /// a device is at or was at lately, without its memory growing with every venue it passes.
    public var keptDeclaredStates = 16
    /// Where a helper's failed attempts are written as HAR files; nil (the default) keeps
    /// no request at all.
    public var failureRecordings: FailureRecordings?

    public init(policy: HotspotRuntime.Policy = .init(), secrets: Secrets = Secrets(), caFile: String? = nil) {
        self.policy = policy
        self.secrets = secrets
        self.caFile = caFile
    }
}

extension HotspotMachine where Transport == ScriptTransport {
    public typealias Configuration = RuntimeConfiguration

    /// A runtime whose helpers are venue scripts loaded into `engine`, remembering in
    /// `persistence`; every event goes to `events` with the secrets' values taken out, then its
    /// texts cut to a log line's length (an error can quote a whole portal page, and every
    /// reply, event and journal line carries it; cut after redaction, so no secret is cut
    /// into a part redaction would miss).
    public init(engine: LuaEngine, helpers: [HelperScript], persistence: StateDirectory,
                configuration: RuntimeConfiguration = .init(), events: @escaping @Sendable (HotspotEvent) -> Void) {
        let secrets = configuration.secrets
        let emit: @Sendable (HotspotEvent) -> Void = { events(secrets.redact($0).mappingText { $0.boundedLikeALogLine() }) }
        for warning in persistence.warnings { emit(.log(.warn, warning)) }
        self.init(helpers: helpers,
                  transport: ScriptTransport(engine: engine, stateDirectory: persistence, configuration: configuration, events: emit),
                  persistence: persistence, checks: BoundNetworkChecks(configuration: configuration, events: emit),
                  policy: configuration.policy, events: emit)
    }

    public nonisolated var configuration: RuntimeConfiguration { transport.configuration }
    /// The state directory: what the machine remembers and the helpers' stores.
    public nonisolated var stateDirectory: StateDirectory { transport.stateDirectory }

    /// The executable of the helpers' workers: `hotspot-helper`, beside the running one.
    public static var workerExecutable: String { LuaEngine.Configuration.executableBesideCurrent(named: "hotspot-helper") }

    /// The prelude of every helper's state, as `engineConfiguration` configures it.
    public static var prelude: ScriptSource { HelperPrelude.source }

    /// The engine configuration helpers need: the worker with the script libraries (the
    /// `hotspot-helper` executable, which is its own worker), and the contract's prelude
    /// in every state. One worker by default: its scripts run in parallel on threads of
    /// their own anyway, and each further worker costs about 2 MiB (release build); more
    /// workers only narrow what a worker killed for an overrun interrupts.
    public static func engineConfiguration(
        workerExecutable: String = workerExecutable,
        workerCount: Int = 1
    ) -> LuaEngine.Configuration {
        LuaEngine.Configuration(workerExecutable: workerExecutable, workerCount: workerCount,
                                prelude: prelude)
    }

    /// Loads every script at `path` (a file or a directory of `*.lua`) as a helper.
    public static func loadHelpers(at path: String, into engine: LuaEngine) async -> ([HelperScript], [ScriptProblem]) {
        let catalog = HelperCatalog(path: path, engine: engine)
        let change = await catalog.refresh()
        return (await catalog.helpers, change.problems)
    }
}
