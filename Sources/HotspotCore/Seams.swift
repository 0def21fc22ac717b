/// The seams between the state machine and the world: helpers are reached through a
/// transport, what survives a restart goes through a persistence, the network is checked
/// through `NetworkChecks`, and time comes from a clock. The runtime's implementations run
/// venue scripts in sandboxed workers, write the state directory, probe over the bound
/// network and read the monotonic clock; tests give in-memory ones.

/// What the state machine knows of a helper.
public protocol HotspotHelper: Sendable, Equatable {
    /// How events and the persistence name it.
    var id: String { get }
    /// Shown beside the networks the helper claims.
    var displayName: String { get }
    /// The commands it has a handler for; any other is answered `command_not_recognized`
    /// without reaching it.
    var handlers: Set<HotspotCommand> { get }
    /// The networks it declares it handles; nil for a helper that evaluates each network.
    var declaredNetworks: NetworkDeclaration? { get }
}

extension HotspotHelper {
    public var declaredNetworks: NetworkDeclaration? { nil }
}

/// One command as the state machine sends it.
public struct CommandRequest: Sendable {
    public var command: HotspotCommand
    public var network: NetworkDescription?
    /// For `filter_scan_list`.
    public var networkList: [NetworkDescription]?
    /// For `maintain`: the device has just joined a network it had authenticated before.
    public var didJustJoin: Bool
    /// The helper receiving it is the network's chosen one.
    public var isChosen: Bool
    /// Counts the network's joins in this runtime: a new join is a new web session (its
    /// cookie jars start empty).
    public var join: Int?
    /// For `present_ui`: what the person entered.
    public var answers: [String: String]
    /// How long the helper may take; nil for no limit.
    public var deadline: Duration?
    /// How much CPU time the helper may use, whatever the deadline; nil for no limit.
    public var cpuLimit: Duration?

    public init(_ command: HotspotCommand, network: NetworkDescription?, networkList: [NetworkDescription]? = nil,
                didJustJoin: Bool = false, isChosen: Bool = false, join: Int? = nil, answers: [String: String] = [:],
                deadline: Duration?, cpuLimit: Duration? = nil) {
        self.command = command
        self.network = network
        self.networkList = networkList
        self.didJustJoin = didJustJoin
        self.isChosen = isChosen
        self.join = join
        self.answers = answers
        self.deadline = deadline
        self.cpuLimit = cpuLimit
    }
}

/// Carries commands to helpers and brings back what they answered. The state machine sends
/// a helper only commands it has a handler for; checking the answer against the model is
/// the state machine's.
public protocol HelperTransport<Helper>: Sendable {
    associatedtype Helper: HotspotHelper

    /// Sends `request` to `helper` and returns its answer (a failure when it broke or overran).
    nonisolated(nonsending) func send(_ request: CommandRequest, to helper: Helper) async -> HelperResponse

    /// Sends `request` to every helper at once and hands each answer to `take` as it comes;
    /// when `take` returns false, the commands not answered yet are cancelled and nothing more
    /// is handed on.
    nonisolated(nonsending) func sendAll(_ request: CommandRequest, to helpers: [Helper],
                                         _ take: (Helper, HelperResponse) -> Bool) async

    /// The helpers now in place; what the transport kept for helpers that are gone can go.
    func helpersReplaced(by helpers: [Helper])
}

/// Where the state machine keeps what must survive a restart. `update` writes the change
/// durably before it returns, so a transition that relies on it comes after it.
public protocol HotspotPersistence: Sendable {
    var snapshot: PersistentState { get }
    func update(_ change: (inout PersistentState) -> Void) throws
}

/// What the state machine asks of the network it manages, apart from the helpers.
public protocol NetworkChecks: Sendable {
    /// Probes `network` after `helper` claimed success; nil when it cannot be checked (the
    /// implementation says why in an event).
    func connectivity(of network: NetworkDescription, after helper: String) async -> ConnectivityEvent?
    /// Probes `network` at a join, before any helper's code runs, for the declarations that name
    /// portal hosts or gateway families: its portal when it is captive and a probe named one,
    /// else nil (the implementation reports the verdict in an event).
    func portal(of network: NetworkDescription) async -> PortalSighting?
    /// When the next maintain should come, at most `interval` from now (a Captive Portal
    /// API's session can bring it forward).
    func maintainDelay(for network: NetworkDescription, interval: Duration) async -> Duration
}

/// Monotonic time, as a duration since a fixed origin.
public protocol HotspotClock: Sendable {
    var now: Duration { get }
    /// Returns once `now` has reached `deadline`; throws `CancellationError` when the task is
    /// cancelled first.
    func sleep(until deadline: Duration) async throws
}

/// The system's monotonic clock (`ContinuousClock`, which keeps counting while the
/// device sleeps, so a maintain due during a suspend runs at wake-up).
public struct SystemClock: HotspotClock {
    private let origin = ContinuousClock.now

    public init() {}

    public var now: Duration { ContinuousClock.now - origin }

    public func sleep(until deadline: Duration) async throws {
        try await Task.sleep(until: origin + deadline, clock: .continuous)
    }
}
