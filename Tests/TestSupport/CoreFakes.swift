public import HotspotCore
import Locking
public import Synchronization

// The hotspot core's seams faked, for any suite: a transport answering from a script, a
// persistence that can fail, network checks that say what the test says, a clock that moves
// only when the test says, and a machine over them (`Harness`).

/// A helper of the fake transport.
public struct FakeHelper: HotspotHelper {
    public let id: String
    public let displayName: String
    public let handlers: Set<HotspotCommand>
    public let declaredNetworks: NetworkDeclaration?

    public init(_ id: String, displayName: String? = nil, handles handlers: Set<HotspotCommand> = Set(HotspotCommand.allCases),
                declaring declaredNetworks: NetworkDeclaration? = nil) {
        self.id = id
        self.displayName = displayName ?? id
        self.handlers = handlers
        self.declaredNetworks = declaredNetworks
    }
}

/// A transport whose helpers answer from a script of responses, at once. `sendAll` hands
/// the answers on in the order the helpers are listed in `answerOrder` (the others after,
/// in the order given), so arbitration can be tested without any real time.
public final class FakeTransport: HelperTransport {
    public typealias Answer = @Sendable (CommandRequest) -> HelperResponse

    private struct State {
        var held: [String: [CheckedContinuation<Bool, Never>]] = [:]
        var holding: Set<String> = []
        var answers: [String: [HotspotCommand: [Answer]]] = [:]
        var sent: [(helper: String, request: CommandRequest)] = []
        var cancelled: [String] = []
        var cancelledCommands: [String] = []
        var replaced: [[String]] = []
        var answerOrder: [String] = []
    }

    private let state = PlainLock(State())

    /// `helper` answers `command` with `responses`, one per command in turn; the last one
    /// again once they are used up.
    public func answer(_ helper: String, _ command: HotspotCommand, _ responses: HelperResponse...) {
        let answers = responses.map { response in { @Sendable (_: CommandRequest) in response } }
        state.withLock { $0.answers[helper, default: [:]][command] = answers }
    }

    public func answer(_ helper: String, _ command: HotspotCommand, with answer: @escaping Answer) {
        state.withLock { $0.answers[helper, default: [:]][command] = [answer] }
    }

    public func answerInOrder(_ helpers: String...) { state.withLock { $0.answerOrder = helpers } }

    /// Every command sent, in order, as `helper:command`.
    public var sent: [String] { state.withLock { $0.sent.map { "\($0.helper):\($0.request.command.rawValue)" } } }
    public var requests: [(helper: String, request: CommandRequest)] { state.withLock { $0.sent } }
    /// The helpers `sendAll` left out after `take` said stop.
    public var cancelled: [String] { state.withLock { $0.cancelled } }
    /// The held commands cancelled while they waited, as `helper:command`.
    public var cancelledCommands: [String] { state.withLock { $0.cancelledCommands } }
    public var replaced: [[String]] { state.withLock { $0.replaced } }

    private func respond(_ request: CommandRequest, _ helper: FakeHelper) -> HelperResponse {
        let answer: Answer? = state.withLock { state in
            state.sent.append((helper.id, request))
            guard var queue = state.answers[helper.id]?[request.command], !queue.isEmpty else { return nil }
            let next = queue.count > 1 ? queue.removeFirst() : queue[0]
            state.answers[helper.id]?[request.command] = queue
            return next
        }
        return answer?(request) ?? .failure("no answer scripted for \(helper.id):\(request.command.rawValue)")
    }

    /// `helper`'s answers to `command` wait until `release` (a command in flight).
    public func hold(_ helper: String, _ command: HotspotCommand) {
        _ = state.withLock { $0.holding.insert("\(helper):\(command.rawValue)") }
    }

    /// Lets the held commands answer, and those to come.
    public func release(_ helper: String, _ command: HotspotCommand) {
        let key = "\(helper):\(command.rawValue)"
        let waiting = state.withLock { state in
            state.holding.remove(key)
            return state.held.removeValue(forKey: key) ?? []
        }
        for continuation in waiting { continuation.resume(returning: true) }
    }

    /// Whether a command of `helper` waits in `hold`.
    public func isHolding(_ helper: String, _ command: HotspotCommand) -> Bool {
        state.withLock { !($0.held["\(helper):\(command.rawValue)"] ?? []).isEmpty }
    }

    /// A held command whose task is cancelled answers `failure("cancelled")` at once, as
    /// the engine's calls do, and is listed in `cancelledCommands`.
    public nonisolated(nonsending) func send(_ request: CommandRequest, to helper: FakeHelper) async -> HelperResponse {
        let key = "\(helper.id):\(request.command.rawValue)"
        let released = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let held = state.withLock { state in
                    guard state.holding.contains(key), !Task.isCancelled else { return false }
                    state.held[key, default: []].append(continuation)
                    return true
                }
                if !held { continuation.resume(returning: !Task.isCancelled) }
            }
        } onCancel: {
            let waiting = state.withLock { $0.held.removeValue(forKey: key) ?? [] }
            for continuation in waiting { continuation.resume(returning: false) }
        }
        guard released else {
            state.withLock { $0.cancelledCommands.append(key) }
            return .failure("cancelled")
        }
        return respond(request, helper)
    }

    public nonisolated(nonsending) func sendAll(_ request: CommandRequest, to helpers: [FakeHelper],
                                         _ take: (FakeHelper, HelperResponse) -> Bool) async {
        let order = state.withLock { $0.answerOrder }
        let ordered = helpers.sorted { (order.firstIndex(of: $0.id) ?? order.count) < (order.firstIndex(of: $1.id) ?? order.count) }
        for (index, helper) in ordered.enumerated() {
            guard take(helper, respond(request, helper)) else {
                state.withLock { $0.cancelled += ordered[(index + 1)...].map(\.id) }
                return
            }
        }
    }

    public func helpersReplaced(by helpers: [FakeHelper]) {
        state.withLock { $0.replaced.append(helpers.map(\.id)) }
    }
}

/// Persistence in memory that can be made to fail.
public final class FakePersistence: HotspotPersistence {
    private let state = PlainLock(PersistentState())
    public let failing = Atomic(false)

    public var snapshot: PersistentState { state.withLock { $0 } }

    public func update(_ change: (inout PersistentState) -> Void) throws {
        if failing.load(ordering: .relaxed) { throw FakeFailure() }
        state.withLock { change(&$0) }
    }

    public struct FakeFailure: Error, CustomStringConvertible {
        public var description: String { "disk full" }
    }
}

/// Network checks that answer what the test says.
public final class FakeChecks: NetworkChecks {
    private let verdicts = PlainLock<[ConnectivityState]>([])
    private let delay = PlainLock<Duration?>(nil)
    private let portal = PlainLock<(sighting: PortalSighting?, probes: Int)>((nil, 0))

    /// The verdicts of the next checks after a success, in turn.
    public func verdicts(_ states: ConnectivityState...) { verdicts.withLock { $0 = states } }
    /// What the network says about when to maintain next; nil: the interval.
    public func maintainAfter(_ duration: Duration?) { delay.withLock { $0 = duration } }

    public func connectivity(of network: NetworkDescription, after helper: String) async -> ConnectivityEvent? {
        guard let state = verdicts.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else { return nil }
        return ConnectivityEvent(network: network.ssid, verdict: state,
                                 portalURL: state == .captive ? "http://portal.example/login" : nil, helper: helper)
    }

    /// The portal a join's probe sees; nil (the default): none.
    public func portal(_ sighting: PortalSighting?) { portal.withLock { $0.sighting = sighting } }
    /// How many joins probed for a portal.
    public var portalProbes: Int { portal.withLock { $0.probes } }

    public func portal(of network: NetworkDescription) async -> PortalSighting? {
        portal.withLock { state in
            state.probes += 1
            return state.sighting
        }
    }

    public func maintainDelay(for network: NetworkDescription, interval: Duration) async -> Duration {
        delay.withLock { $0 } ?? interval
    }
}

/// A clock that moves only when the test says: sleepers wake when `advance` passes their
/// deadline, in deadline order.
public final class TestClock: HotspotClock {
    private struct Sleeper {
        let id: Int
        let deadline: Duration
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now: Duration = .zero
        var sleepers: [Sleeper] = []
        var nextID = 0
        var sleeperWaiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = PlainLock(State())

    public init() {}

    public var now: Duration { state.withLock { $0.now } }

    public func sleep(until deadline: Duration) async throws {
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                // Checked under the lock: a cancellation that came before the sleeper is
                // registered finds nothing to cancel, so the sleeper must see it here.
                let (resumeNow, waiters) = state.withLock { state in
                    guard deadline > state.now, !Task.isCancelled else { return (true, [CheckedContinuation<Void, Never>]()) }
                    state.sleepers.append(Sleeper(id: id, deadline: deadline, continuation: continuation))
                    defer { state.sleeperWaiters = [] }
                    return (false, state.sleeperWaiters)
                }
                if resumeNow { continuation.resume() }
                for waiter in waiters { waiter.resume() }
            }
        } onCancel: {
            let sleeper = state.withLock { state -> Sleeper? in
                guard let index = state.sleepers.firstIndex(where: { $0.id == id }) else { return nil }
                return state.sleepers.remove(at: index)
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Returns once something sleeps on this clock, so that an advance reaches it.
    public func waitForSleeper() async {
        await withCheckedContinuation { continuation in
            let sleeping = state.withLock { state in
                if state.sleepers.isEmpty { state.sleeperWaiters.append(continuation) }
                return !state.sleepers.isEmpty
            }
            if sleeping { continuation.resume() }
        }
    }

    public func advance(by duration: Duration) {
        let woken = state.withLock { state -> [Sleeper] in
            state.now += duration
            let due = state.sleepers.filter { $0.deadline <= state.now }.sorted { $0.deadline < $1.deadline }
            state.sleepers.removeAll { $0.deadline <= state.now }
            return due
        }
        for sleeper in woken { sleeper.continuation.resume() }
    }
}

/// Collects a machine's events, and lets a test wait for one without any timeout of its own
/// (the suite's time limit catches a wait that never ends).
public final class EventRecorder: Sendable {
    private struct State {
        var events: [HotspotEvent] = []
        var waiters: [(predicate: @Sendable (HotspotEvent) -> Bool, continuation: CheckedContinuation<HotspotEvent, Never>)] = []
    }

    private let state = PlainLock(State())

    public func record(_ event: HotspotEvent) {
        let waiting = state.withLock { state in
            state.events.append(event)
            let matching = state.waiters.filter { $0.predicate(event) }
            state.waiters.removeAll { $0.predicate(event) }
            return matching
        }
        for waiter in waiting { waiter.continuation.resume(returning: event) }
    }

    public var all: [HotspotEvent] { state.withLock { $0.events } }

    public var transitions: [String] { all.transitions }
    public func commands(_ command: HotspotCommand? = nil) -> [CommandEvent] { all.commands(command) }
    public var logs: [LogEvent] { all.logs }

    /// Waits until `count` events (counting those already recorded) match, and returns the
    /// `count`-th.
    public func wait(for count: Int = 1, _ predicate: @escaping @Sendable (HotspotEvent) -> Bool) async -> HotspotEvent {
        while true {
            let matched = state.withLock { $0.events.filter(predicate) }
            if matched.count >= count { return matched[count - 1] }
            _ = await withCheckedContinuation { continuation in
                state.withLock { state in
                    // Checked again under the lock, so an event recorded meanwhile is not missed.
                    if state.events.filter(predicate).count >= count {
                        continuation.resume(returning: state.events[state.events.count - 1])
                    } else {
                        state.waiters.append((predicate, continuation))
                    }
                }
            }
        }
    }

    /// Waits until `ssid` has reached `state` `count` times in all.
    @discardableResult
    public func waitForState(_ ssid: String, _ target: HotspotState, count: Int = 1) async -> HotspotEvent {
        await wait(for: count) { event in
            if case .state(let change) = event { change.network == ssid && change.to == target } else { false }
        }
    }
}

/// A machine over the fakes.
public struct Harness: Sendable {
    public let transport = FakeTransport()
    public let persistence = FakePersistence()
    public let checks = FakeChecks()
    public let clock = TestClock()
    public let events = EventRecorder()
    public let machine: HotspotMachine<FakeTransport>

    public static let policy = HotspotMachine<FakeTransport>.Policy(
        commandDeadline: .seconds(45), presentUIDeadline: nil, maintainInterval: .seconds(300),
        retryFirstDelay: .seconds(1), retryMaximumDelay: .seconds(8))

    public init(_ helpers: [FakeHelper], policy: HotspotMachine<FakeTransport>.Policy = Harness.policy) {
        let events = self.events
        machine = HotspotMachine(helpers: helpers, transport: transport, persistence: persistence, checks: checks,
                                 clock: clock, policy: policy, events: { events.record($0) })
    }

    public init(_ ids: String..., policy: HotspotMachine<FakeTransport>.Policy = Harness.policy) {
        self.init(ids.map { FakeHelper($0) }, policy: policy)
    }
}

public let cafe = NetworkDescription(ssid: "Cafe", bssid: "02:00:00:00:00:01", signalStrength: 0.8)
public let autoJoinedCafe = NetworkDescription(ssid: "Cafe", bssid: "02:00:00:00:00:01", signalStrength: 0.8, didAutoJoin: true)

extension HelperResponse {
    public static let success = HelperResponse(result: .success)
    public static func claims(_ confidence: Confidence) -> HelperResponse { HelperResponse(result: .success, confidence: confidence) }
    public static func result(_ result: CommandResult) -> HelperResponse { HelperResponse(result: result) }
}
