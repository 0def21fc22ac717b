import FoundationEssentials
import HotspotNetwork
import Synchronization
public import LuaSandbox

/// The hotspot-helper state machine (hotspot-model.md), with venue scripts as helpers.
///
/// One session per network, keyed by SSID. Commands go to helpers through the sandboxed
/// engine; every command and every transition is reported as a `HotspotEvent`. What must
/// survive a restart (chosen helpers, exclusions, disabled auto-join, switched-off helpers,
/// `cmd.store`) is written to the state directory before the transition that relies on it.
public actor HotspotRuntime {
    public struct Configuration: Sendable {
        /// Deadline of every command but `present_ui`.
        public var commandDeadline: Duration
        /// Deadline of `present_ui`; nil means none (it waits on a person).
        public var presentUIDeadline: Duration?
        public var maintainInterval: Duration
        /// Backoff after `temporary_failure`: doubles from the first delay up to the maximum.
        public var retryFirstDelay: Duration
        public var retryMaximumDelay: Duration
        /// Venue credentials for `cmd:secret`; their values never appear in an event.
        public var secrets: Secrets
        /// Extra trusted CA certificates (PEM) for helpers' HTTPS requests.
        public var caFile: String?
        /// Whether a network's Captive Portal API may be plain HTTP (local testing only).
        public var allowsPlainHTTPCaptivePortalAPI = false
        /// How long before a Captive Portal API session runs out `maintain` comes (at most a
        /// quarter of what remains).
        public var captivePortalRenewalMargin: Duration = .seconds(60)
        /// After a helper answers `success` to authenticate or present_ui, probe the network
        /// (its probes, interface and resolvers); still captive means the helper was wrong.
        public var verifyAuthentication: Bool

        public init(commandDeadline: Duration = .seconds(45), presentUIDeadline: Duration? = nil,
                    maintainInterval: Duration = .seconds(300), retryFirstDelay: Duration = .seconds(1),
                    retryMaximumDelay: Duration = .seconds(600), secrets: Secrets = Secrets(), caFile: String? = nil,
                    verifyAuthentication: Bool = false) {
            self.commandDeadline = commandDeadline
            self.presentUIDeadline = presentUIDeadline
            self.maintainInterval = maintainInterval
            self.retryFirstDelay = retryFirstDelay
            self.retryMaximumDelay = retryMaximumDelay
            self.secrets = secrets
            self.caFile = caFile
            self.verifyAuthentication = verifyAuthentication
        }
    }

    /// The engine configuration helpers need: the worker with the script libraries (the
    /// `hotspot-helper` executable, which is its own worker), and the contract's prelude
    /// in every state. One worker by default: its scripts run in parallel on threads of
    /// their own anyway, and each further worker costs about 2 MiB (release build); more
    /// workers only narrow what a worker killed for an overrun interrupts.
    public static func engineConfiguration(
        workerExecutable: String = LuaEngine.Configuration.executableBesideCurrent(named: "hotspot-helper"),
        workerCount: Int = 1
    ) -> LuaEngine.Configuration {
        LuaEngine.Configuration(workerExecutable: workerExecutable, workerCount: workerCount,
                                prelude: HelperPrelude.source)
    }

    /// Loads every script at `path` (a file or a directory of `*.lua`) as a helper.
    public static func loadHelpers(at path: String, into engine: LuaEngine) async -> ([HelperScript], [ScriptProblem]) {
        let catalog = HelperCatalog(path: path, engine: engine)
        let change = await catalog.refresh()
        return (await catalog.helpers, change.problems)
    }

    struct Session {
        var network: NetworkDescription
        var state: HotspotState = .inactive
        var helper: String?
        var retryDelay: Duration?
        /// Names this session's cookie jars in the workers: a new session starts empty.
        let cookieSession: String
        /// When the pending maintain or retry comes.
        var due: Due?
        /// Reading the network's Captive Portal API to bring its maintain forward.
        var scheduling: Task<Void, Never>?
    }

    struct Due {
        let at: ContinuousClock.Instant
        /// A maintain; otherwise a retry after `temporary_failure`.
        let maintain: Bool
    }

    public private(set) var helpers: [HelperScript]
    public nonisolated let persistence: StateDirectory
    public nonisolated let configuration: Configuration
    private nonisolated let engine: LuaEngine
    nonisolated let emit: @Sendable (HotspotEvent) -> Void
    private var sessions: [String: Session] = [:]
    /// Cookie sessions are this runtime's random prefix and a count: unique in its workers,
    /// without reading the system's random source at every join.
    private let cookieSessionPrefix = UUID().uuidString
    private var cookieSessionCount = 0
    /// Each helper's encoded own table, by helper id (see `encodedHelperTable`).
    private nonisolated let encodedHelperTables = Mutex<[String: EncodedHelperTable]>([:])
    /// One alarm for every session's maintain or retry: it sleeps until the earliest, so
    /// scheduling a later one (each maintain does) starts no task and wakes nothing.
    private var alarm: Task<Void, Never>?
    private var alarmSleep: (until: ContinuousClock.Instant, task: Task<Void, Never>)?
    private var timersStopped = false

    public init(engine: LuaEngine, helpers: [HelperScript], persistence: StateDirectory,
                configuration: Configuration = .init(), events: @escaping @Sendable (HotspotEvent) -> Void) {
        self.engine = engine
        self.helpers = helpers
        self.persistence = persistence
        self.configuration = configuration
        let secrets = configuration.secrets
        self.emit = { events(secrets.redact($0)) }
        for warning in persistence.warnings { emit(HotspotEvent(event: .log, level: "warn", message: warning)) }
    }

    public func state(of ssid: String) -> HotspotState { sessions[ssid]?.state ?? .inactive }
    public func chosenHelper(of ssid: String) -> String? { sessions[ssid]?.helper }

    /// Puts a new set of helpers in place (scripts reloaded, added or removed) without
    /// touching the sessions: a network keeps its chosen helper when that helper is still
    /// there, and is evaluated again at its next maintain when it is not.
    public func replaceHelpers(_ newHelpers: [HelperScript]) {
        helpers = newHelpers
        // An encoding of a helper that is gone would stay for good, holding its table.
        let ids = Set(newHelpers.map(\.id))
        encodedHelperTables.withLock { tables in tables = tables.filter { ids.contains($0.key) } }
        for (ssid, session) in sessions {
            guard let id = session.helper, !newHelpers.contains(where: { $0.id == id }) else { continue }
            log(ssid, "warn", "the helper \(id) of \(ssid) was removed; \(ssid) is evaluated again at its next maintain")
        }
    }

    // MARK: joining

    /// The device joined `network`: runs the machine until the network rests
    /// (authenticated, presenting UI, failed) and returns that state.
    @discardableResult
    public func join(_ network: NetworkDescription) async -> HotspotState {
        clearTimer(network.ssid)
        cookieSessionCount += 1
        sessions[network.ssid] = Session(network: network, cookieSession: "\(cookieSessionPrefix)-\(cookieSessionCount)")
        return await start(network.ssid)
    }

    private func start(_ ssid: String) async -> HotspotState {
        guard let network = sessions[ssid]?.network else { return .inactive }
        let saved = persistence.snapshot
        if network.didAutoJoin, saved.autoJoinDisabled.contains(ssid) {
            log(ssid, "warn", "auto-join of \(ssid) is disabled since a helper answered failure; join it by hand to try again")
            return .inactive
        }
        if let cached = saved.chosenHelpers[ssid], let helper = usableHelper(cached, for: ssid) {
            transition(ssid, to: .maintaining, helper: helper.id)
            let response = await send(.maintain, to: helper, network: network, didJustJoin: true,
                                      cookieSession: sessions[ssid]?.cookieSession)
            return await afterMaintain(ssid, helper, response)
        }
        return await evaluate(ssid)
    }

    /// Evaluate goes to every enabled helper at once; the first `high` wins at once and
    /// the others are cancelled; otherwise the first `low`, once all have answered.
    private func evaluate(_ ssid: String) async -> HotspotState {
        guard let network = sessions[ssid]?.network else { return .inactive }
        transition(ssid, to: .evaluating, helper: nil)
        let candidates = helpers(except: persistence.snapshot.helpersOff(for: ssid))
        var winner: HelperScript?
        await sendAll(.evaluate, to: candidates, network: network, cookieSession: sessions[ssid]?.cookieSession) { helper, response in
            if response.confidence == .high {
                winner = helper
                return false
            }
            if response.confidence == .low, winner == nil { winner = helper }
            return true
        }
        guard let winner else {
            transition(ssid, to: .authenticated, helper: nil)  // nobody claims it
            return .authenticated
        }
        return await authenticate(ssid, with: winner)
    }

    private func authenticate(_ ssid: String, with helper: HelperScript) async -> HotspotState {
        guard let network = sessions[ssid]?.network else { return .inactive }
        transition(ssid, to: .authenticating, helper: helper.id)
        let response = await send(.authenticate, to: helper, network: network, isChosen: true,
                                  cookieSession: sessions[ssid]?.cookieSession)
        return await afterAuthentication(ssid, helper, response)
    }

    private func afterAuthentication(_ ssid: String, _ helper: HelperScript, _ response: HelperResponse) async -> HotspotState {
        switch response.result {
        case .success:
            if let verdict = await verifiedConnectivity(of: ssid, after: helper), verdict.state == .captive {
                // A claim the portal contradicts: retried like a temporary failure, nothing remembered.
                log(ssid, "warn", "helper \(helper.id) claimed success but the network is still captive"
                    + (verdict.portalURL.map { " at \($0)" } ?? ""), helper: helper.id)
                transition(ssid, to: .failure, helper: helper.id)
                scheduleRetry(ssid)
                return .failure
            }
            persist(ssid) {
                $0.chosenHelpers[ssid] = helper.id
                $0.autoJoinDisabled.remove(ssid)
            }
            sessions[ssid]?.retryDelay = nil
            transition(ssid, to: .authenticated, helper: helper.id)
            scheduleMaintain(ssid)
            return .authenticated
        case .uiRequired:
            transition(ssid, to: .presentingUI, helper: helper.id)  // until the user opens the UI
            return .presentingUI
        case .unsupportedNetwork:
            persist(ssid) { $0.exclusions[ssid, default: []].insert(helper.id) }
            return await evaluate(ssid)
        case .temporaryFailure:
            transition(ssid, to: .failure, helper: helper.id)
            scheduleRetry(ssid)
            return .failure
        default:
            persist(ssid) { $0.autoJoinDisabled.insert(ssid) }
            transition(ssid, to: .failure, helper: helper.id)
            return .failure
        }
    }

    /// With `verifyAuthentication`, probes the network after `helper`'s success and reports
    /// the verdict; nil when not verifying.
    private func verifiedConnectivity(of ssid: String, after helper: HelperScript) async -> ConnectivityVerdict? {
        guard configuration.verifyAuthentication, let network = sessions[ssid]?.network else { return nil }
        let probes: ProbeSet
        switch ProbeSet.parse(network.probeURLs) {
        case .success(let parsed): probes = parsed
        case .failure(let error):
            log(ssid, "warn", "\(helper.id)'s success is not checked: \(error)")
            return nil
        }
        let verdict = await ConnectivityProbe.verdict(of: probes, binding: NetworkBinding(
            interface: network.interface, resolvers: network.resolvers, caFile: configuration.caFile))
        emit(HotspotEvent(connectivity: verdict, network: ssid, helper: helper.id))
        return verdict
    }

    private func afterMaintain(_ ssid: String, _ helper: HelperScript, _ response: HelperResponse) async -> HotspotState {
        switch response.result {
        case .success:
            transition(ssid, to: .authenticated, helper: helper.id)
            scheduleMaintain(ssid)
            return .authenticated
        case .authenticationRequired:
            return await authenticate(ssid, with: helper)
        default:
            persist(ssid) { $0.chosenHelpers[ssid] = nil }
            return await evaluate(ssid)
        }
    }

    // MARK: what the user and the timers ask for

    /// Runs `maintain` now on an authenticated network (the timer does this every interval).
    @discardableResult
    public func maintain(_ ssid: String) async -> HotspotState {
        clearTimer(ssid)
        return await timerFired(ssid, maintain: true)
    }

    /// A maintain or retry came (its timer, or the user asked for a maintain).
    private func timerFired(_ ssid: String, maintain: Bool) async -> HotspotState {
        guard maintain else {
            guard sessions[ssid]?.state == .failure else { return state(of: ssid) }
            sessions[ssid]?.network.didAutoJoin = true
            return await start(ssid)
        }
        guard let session = sessions[ssid], session.state == .authenticated else { return state(of: ssid) }
        guard let id = session.helper, let helper = helpers.first(where: { $0.id == id }) else {
            persist(ssid) { $0.chosenHelpers[ssid] = nil }
            return await evaluate(ssid)
        }
        transition(ssid, to: .maintaining, helper: id)
        let response = await send(.maintain, to: helper, network: session.network, cookieSession: session.cookieSession)
        return await afterMaintain(ssid, helper, response)
    }

    /// The user opened the helper's UI for a network waiting in `presenting_ui`, with what
    /// they entered (`cmd.answers`: an email address, a room number, a voucher...).
    @discardableResult
    public func presentUI(_ ssid: String, answers: [String: String] = [:]) async -> HotspotState {
        guard let session = sessions[ssid], session.state == .presentingUI,
              let id = session.helper, let helper = helpers.first(where: { $0.id == id }) else { return state(of: ssid) }
        let response = await send(.presentUI, to: helper, network: session.network, isChosen: true,
                                  cookieSession: session.cookieSession, answers: answers)
        return await afterAuthentication(ssid, helper, response)
    }

    /// The user asked to log off: `logoff` goes to the chosen helper, then the device
    /// leaves the network.
    @discardableResult
    public func logoff(_ ssid: String) async -> HotspotState {
        guard let session = sessions[ssid], session.state == .authenticated else { return state(of: ssid) }
        clearTimer(ssid)
        if let id = session.helper, let helper = helpers.first(where: { $0.id == id }) {
            transition(ssid, to: .loggingOff, helper: id)
            _ = await send(.logoff, to: helper, network: session.network, isChosen: true,
                           cookieSession: session.cookieSession)
        }
        transition(ssid, to: .inactive, helper: session.helper)
        return .inactive
    }

    /// The device left the network: no command is sent.
    public func leave(_ ssid: String) {
        guard let session = sessions[ssid] else { return }
        clearTimer(ssid)
        transition(ssid, to: .inactive, helper: session.helper)
        sessions[ssid] = nil
    }

    /// Runs `filter_scan_list` on every enabled helper and returns what each claims.
    public func filterScanList(_ networks: [NetworkDescription]) async -> [NetworkClaim] {
        let candidates = helpers(except: persistence.snapshot.disabledHelpers)
        var claims: [NetworkClaim] = []
        await sendAll(.filterScanList, to: candidates, network: nil, networkList: networks) { helper, response in
            guard response.result == .success else { return true }
            claims += response.claims.map {
                NetworkClaim(ssid: $0.ssid, bssid: $0.bssid, helper: helper.id,
                             displayName: helper.displayName, password: $0.password)
            }
            return true
        }
        return claims.sorted { ($0.ssid, $0.helper) < ($1.ssid, $1.helper) }
    }

    /// While the stream is consumed (the user looks at the list of networks), runs
    /// `filter_scan_list` over the current scan list every `interval` (5 s by default).
    public nonisolated func watchScanList(
        every interval: Duration = .seconds(5),
        scanList: @escaping @Sendable () async -> [NetworkDescription]
    ) -> AsyncStream<[NetworkClaim]> {
        AsyncStream { continuation in
            let task = Task {
                while !Task.isCancelled {
                    continuation.yield(await self.filterScanList(await scanList()))
                    try? await Task.sleep(for: interval)
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// Switches a helper on or off, everywhere or for one SSID.
    public func setHelper(_ id: String, enabled: Bool, ssid: String? = nil) throws {
        try persistence.update { state in
            if let ssid {
                if enabled { state.disabledForNetwork[ssid]?.remove(id) } else { state.disabledForNetwork[ssid, default: []].insert(id) }
                if state.disabledForNetwork[ssid]?.isEmpty == true { state.disabledForNetwork[ssid] = nil }
            } else if enabled {
                state.disabledHelpers.remove(id)
            } else {
                state.disabledHelpers.insert(id)
            }
        }
    }

    // MARK: timers

    /// No maintain or retry runs after this (the daemon is stopping).
    public func stopTimers() {
        timersStopped = true
        for ssid in sessions.keys { clearTimer(ssid) }
        alarm?.cancel()
        alarmSleep?.task.cancel()
    }

    private func scheduleMaintain(_ ssid: String) {
        guard let network = sessions[ssid]?.network else { return }
        let interval = configuration.maintainInterval
        sessions[ssid]?.scheduling?.cancel()  // an older reading would be stale
        setTimer(ssid, Due(at: .now + interval, maintain: true))
        guard network.captivePortalAPI != nil else { return }
        // What the API says about the session may bring the maintain forward.
        sessions[ssid]?.scheduling = Task { [weak self] in
            guard let delay = await self?.maintainDelay(for: network, interval: interval) else { return }
            await self?.bringMaintainForward(ssid, to: .now + delay)
        }
    }

    private func bringMaintainForward(_ ssid: String, to at: ContinuousClock.Instant) {
        // A maintain, logoff or leave since cancelled the reading: its answer is stale.
        guard !Task.isCancelled, let due = sessions[ssid]?.due, due.maintain, at < due.at else { return }
        setTimer(ssid, Due(at: at, maintain: true))
    }

    private func scheduleRetry(_ ssid: String) {
        guard let session = sessions[ssid] else { return }
        let delay = session.retryDelay.map { min($0 * 2, configuration.retryMaximumDelay) } ?? configuration.retryFirstDelay
        sessions[ssid]?.retryDelay = delay
        setTimer(ssid, Due(at: .now + delay, maintain: false))
        log(ssid, "info", "retrying \(ssid) in \(delay)")
    }

    private func clearTimer(_ ssid: String) {
        sessions[ssid]?.scheduling?.cancel()
        sessions[ssid]?.scheduling = nil
        sessions[ssid]?.due = nil
    }

    private func setTimer(_ ssid: String, _ due: Due) {
        guard !timersStopped, sessions[ssid] != nil else { return }
        sessions[ssid]?.due = due
        if alarm == nil {
            alarm = Task { [weak self] in
                while let sleep = await self?.nextAlarmSleep() {
                    await sleep.value
                    await self?.fireDueTimers()
                }
            }
        } else if let sleeping = alarmSleep, due.at < sleeping.until {
            sleeping.task.cancel()  // wakes the alarm to sleep until this one instead
        }
    }

    /// A sleep until the earliest maintain or retry; nil (and the alarm ends) when none is due.
    private func nextAlarmSleep() -> Task<Void, Never>? {
        guard !timersStopped, let earliest = sessions.values.compactMap(\.due?.at).min() else {
            alarm = nil
            alarmSleep = nil
            return nil
        }
        let sleep = Task { _ = try? await Task.sleep(until: earliest, clock: .continuous) }
        alarmSleep = (earliest, sleep)
        return sleep
    }

    private func fireDueTimers() {
        let now = ContinuousClock.now
        for (ssid, session) in sessions {
            guard let due = session.due, due.at <= now else { continue }
            sessions[ssid]?.due = nil
            // A task of its own per firing, which nothing cancels: its commands run to their end.
            Task { await self.timerFired(ssid, maintain: due.maintain) }
        }
    }

    // MARK: commands

    /// The helpers not in `off`; the list itself when none is off, as is usual, so a
    /// command to every helper neither copies it nor looks each one up.
    private func helpers(except off: Set<String>) -> [HelperScript] {
        off.isEmpty ? helpers : helpers.filter { !off.contains($0.id) }
    }

    private func usableHelper(_ id: String, for ssid: String) -> HelperScript? {
        guard !persistence.snapshot.helpersOff(for: ssid).contains(id) else { return nil }
        return helpers.first { $0.id == id }
    }

    /// Sends one command to one helper and reports it.
    nonisolated(nonsending) func send(_ command: HotspotCommand, to helper: HelperScript, network: NetworkDescription?,
                          networkList: [NetworkDescription]? = nil, didJustJoin: Bool = false,
                          isChosen: Bool = false, cookieSession: String? = nil,
                          answers: [String: String] = [:]) async -> HelperResponse {
        let start = Deadline.now
        guard helper.handlers.contains(command) else {
            return conclude(command, helper, network: network, outcome: nil, since: start)
        }
        let arguments = [
            helperTable(for: helper, network: network),
            sharedTable(command, network: network, networkList: networkList, cookieSession: cookieSession,
                        didJustJoin: didJustJoin, isChosen: isChosen, answers: answers),
        ]
        let outcome = await engine.call(helper.handle, "dispatch", arguments, deadline: deadline(of: command))
        return conclude(command, helper, network: network, outcome: outcome, since: start)
    }

    /// Sends one command to several helpers at once (`LuaEngine.callAll`) and hands each
    /// response to `take` as it answers; when `take` returns false, the commands not
    /// answered yet are cancelled.
    nonisolated(nonsending) func sendAll(_ command: HotspotCommand, to helpers: [HelperScript], network: NetworkDescription?,
                             networkList: [NetworkDescription]? = nil, cookieSession: String? = nil,
                             _ take: (HelperScript, HelperResponse) -> Bool) async {
        let start = Deadline.now
        let (handling, notHandling) = helpers.allSatisfy({ $0.handlers.contains(command) })
            ? (helpers, [])  // as usual: no copies of the list
            : (helpers.filter { $0.handlers.contains(command) }, helpers.filter { !$0.handlers.contains(command) })
        for helper in notHandling {
            guard take(helper, conclude(command, helper, network: network, outcome: nil, since: start)) else { return }
        }
        var unanswered = Set(handling.indices)
        // Each helper's part is made (or taken already encoded) as it is sent, so the first
        // helpers run while the rest are made; the part they share is encoded once.
        let shared = sharedTable(command, network: network, networkList: networkList, cookieSession: cookieSession,
                                 didJustJoin: false, isChosen: false)
        let outcomes = engine.callAll(count: handling.count, sharing: [shared], deadline: deadline(of: command)) { index in
            let helper = handling[index]
            guard let encoded = encodedHelperTable(for: helper, network: network) else {
                return ScriptCall(helper.handle, "dispatch", [helperTable(for: helper, network: network)])  // reports the error
            }
            return ScriptCall(helper.handle, "dispatch", encodedArguments: encoded)
        }
        for await (index, outcome) in outcomes {
            unanswered.remove(index)
            guard take(handling[index], conclude(command, handling[index], network: network, outcome: outcome, since: start)) else {
                // Leaving the loop cancels them in the engine; they are reported now.
                let cancelled = CallOutcome(result: .failure(LuaScriptError(.cancelled, "cancelled")))
                for index in unanswered.sorted() {
                    _ = conclude(command, handling[index], network: network, outcome: cancelled, since: start)
                }
                return
            }
        }
    }

    /// `helperTable`, encoded: from the last command for the same helper and network link when
    /// the helper's store is empty, since then nothing in it changes (its context depends on
    /// the helper, the configuration and the network's link alone), so a join does not build
    /// and encode it for each of its helpers again.
    private nonisolated func encodedHelperTable(for helper: HelperScript, network: NetworkDescription?) -> EncodedLuaValues? {
        let link = network.map(NetworkLink.init)
        let hasStore = network.map { !persistence.store(helper: helper.id, ssid: $0.ssid).isEmpty } ?? false
        if !hasStore, let cached = encodedHelperTables.withLock({ $0[helper.id] }),
           cached.helper == helper, cached.link == link {
            return cached.values
        }
        guard let values = try? EncodedLuaValues([helperTable(for: helper, network: network)]) else { return nil }
        if !hasStore {
            encodedHelperTables.withLock { $0[helper.id] = EncodedHelperTable(helper: helper, link: link, values: values) }
        }
        return values
    }

    /// The helpers whose own table is kept encoded (for tests).
    nonisolated var encodedHelperIDs: Set<String> { encodedHelperTables.withLock { Set($0.keys) } }

    /// What of a network the helper's context holds.
    struct NetworkLink: Equatable {
        let interface: String?
        let resolvers: [String]
        let probeURLs: [String]
        let captivePortalAPI: String?

        init(_ network: NetworkDescription) {
            (interface, resolvers, probeURLs, captivePortalAPI) =
                (network.interface, network.resolvers, network.probeURLs, network.captivePortalAPI)
        }
    }

    struct EncodedHelperTable {
        let helper: HelperScript
        let link: NetworkLink?
        let values: EncodedLuaValues
    }

    /// `dispatch` in the prelude turns two tables into the script's `cmd`: the helper's own
    /// part (its context and store) and the part every helper of a command gets alike.
    private nonisolated func helperTable(for helper: HelperScript, network: NetworkDescription?) -> LuaValue {
        var table = LuaTable()
        if let network {
            let store = persistence.store(helper: helper.id, ssid: network.ssid)
            if !store.isEmpty {  // the prelude takes an absent store as empty
                table["store"] = .table(LuaTable(Dictionary(uniqueKeysWithValues:
                    store.map { (LuaValue.text($0.key), LuaValue.text($0.value)) })))
            }
        }
        table["context"] = context(for: helper, network: network)
        return .table(table)
    }

    /// The command's part every helper gets alike, with the session naming its cookie jars
    /// (the prelude adds it to a helper's context when the command first reaches the network).
    private nonisolated func sharedTable(_ command: HotspotCommand, network: NetworkDescription?,
                                         networkList: [NetworkDescription]?, cookieSession: String?,
                                         didJustJoin: Bool, isChosen: Bool, answers: [String: String] = [:]) -> LuaValue {
        var table = LuaTable()
        table["type"] = .text(command.rawValue)
        table["session"] = cookieSession.map(LuaValue.text) ?? nil
        if let network {
            table["network"] = Self.networkValue(network, didJustJoin: didJustJoin, isChosen: isChosen)
        }
        if command == .presentUI {
            table["answers"] = .table(LuaTable(Dictionary(uniqueKeysWithValues: answers.map { (LuaValue.text($0.key), LuaValue.text($0.value)) })))
        }
        if let networkList {
            table["network_list"] = .table(LuaTable(array: networkList.map { Self.networkValue($0, didJustJoin: false, isChosen: false) }))
        }
        return .table(table)
    }

    private nonisolated func deadline(of command: HotspotCommand) -> CallDeadline {
        if command == .presentUI {
            configuration.presentUIDeadline.map { .after($0) } ?? .unlimited
        } else {
            .after(configuration.commandDeadline)
        }
    }

    /// Turns what a helper's handler produced (nil: it has no handler for the command)
    /// into its response: its logs and the command reported as events, its store saved.
    private nonisolated func conclude(_ command: HotspotCommand, _ helper: HelperScript, network: NetworkDescription?,
                                      outcome: CallOutcome?, since start: Deadline) -> HelperResponse {
        var response: HelperResponse
        if let outcome {
            for record in outcome.logs {
                emit(HotspotEvent(event: .log, network: network?.ssid, command: command, helper: helper.id,
                                  level: record.level.name, message: record.message))
            }
            response = Self.interpret(outcome, answering: command)
            if let store = response.store, let network {
                do {
                    try persistence.setStore(store, helper: helper.id, ssid: network.ssid)
                } catch {
                    response = .failure("cmd.store could not be saved: \(error)")
                }
            }
        } else {
            response = HelperResponse(result: .commandNotRecognized, confidence: .none, claims: [], error: nil, store: nil)
        }
        let milliseconds = Double(Deadline.now.nanoseconds - start.nanoseconds) / 1_000_000
        emit(HotspotEvent(event: .command, network: network?.ssid, command: command, helper: helper.id,
                          result: response.result, confidence: command == .evaluate ? response.confidence : nil,
                          ms: (milliseconds * 1000).rounded() / 1000, error: response.error))
        return response
    }

    /// What the prelude keeps out of the script's reach for `cmd:http` and `cmd:secret`; the
    /// prelude adds the command's cookie session.
    nonisolated func context(for helper: HelperScript, network: NetworkDescription?) -> LuaValue {
        // Empty lists and false flags are left out (their readers take absent as empty or
        // false): every command carries this table into the helper's state, where each key
        // and value costs a string to intern.
        var context = LuaTable()
        func list(_ key: LuaValue, _ items: [String]) {
            if !items.isEmpty { context[key] = .table(LuaTable(array: items.map(LuaValue.text))) }
        }
        list("hosts", helper.hosts.map(\.text))
        let secrets = configuration.secrets.of(helper: helper.id)
        if !secrets.isEmpty {
            context["secrets"] = .table(LuaTable(Dictionary(uniqueKeysWithValues:
                secrets.map { (LuaValue.text($0.key), LuaValue.text($0.value)) })))
        }
        context["helper"] = .text(helper.id)  // with the session, names the helper's cookie jar
        context["interface"] = network?.interface.map(LuaValue.text) ?? nil
        list("resolvers", network?.resolvers ?? [])
        list("probes", network?.probeURLs ?? [])
        context["ca_file"] = configuration.caFile.map(LuaValue.text) ?? nil
        context["capport_url"] = network?.captivePortalAPI.map(LuaValue.text) ?? nil
        if configuration.allowsPlainHTTPCaptivePortalAPI { context["capport_allow_http"] = true }
        if helper.followsPortal { context["portal_hosts"] = true }
        return .table(context)
    }

    static func networkValue(_ network: NetworkDescription, didJustJoin: Bool, isChosen: Bool) -> LuaValue {
        [
            "ssid": .text(network.ssid), "bssid": .text(network.bssid),
            "signal_strength": .number(network.signalStrength), "is_secure": .boolean(network.isSecure),
            "did_auto_join": .boolean(network.didAutoJoin), "did_just_join": .boolean(didJustJoin),
            "is_chosen_helper": .boolean(isChosen),
        ]
    }

    /// Checks what the prelude collected against the model; anything else is a `failure`
    /// whose error says why.
    static func interpret(_ outcome: CallOutcome, answering command: HotspotCommand) -> HelperResponse {
        let answer: DispatchAnswer
        switch outcome.result {
        case .failure(let error): return .failure(error.description)
        case .success(let values): answer = DispatchAnswer(values)
        }
        let store = answer.store.tableValue.map { table in
            Dictionary(uniqueKeysWithValues: table.entries.compactMap { key, value in
                key.stringValue.flatMap { key in value.stringValue.map { (key, $0) } }
            })
        }
        if let store, store.reduce(0, { $0 + $1.key.utf8.count + $1.value.utf8.count }) > StateDirectory.storeLimit {
            return .failure("cmd.store holds more than \(StateDirectory.storeLimit) bytes")
        }
        guard let name = answer.result.stringValue, let result = CommandResult(rawValue: name) else {
            return .failure("the handler answered no known result")
        }
        if let broken = result.ruleBroken(answering: command) {
            var failure = HelperResponse.failure("result '\(name)' is not valid for \(command.rawValue): \(broken)")
            failure.store = store
            return failure
        }
        let confidence = answer.confidence.stringValue.flatMap(Confidence.init(rawValue:)) ?? .none
        let claims = (answer.claims.tableValue?.array ?? []).compactMap { entry -> ScannedNetwork? in
            guard let table = entry.tableValue, let ssid = table["ssid"].stringValue else { return nil }
            return ScannedNetwork(ssid: ssid, bssid: table["bssid"].stringValue, password: table["password"].stringValue)
        }
        return HelperResponse(result: result, confidence: result == .success ? confidence : .none,
                              claims: claims, error: answer.error.stringValue, store: store)
    }

    // MARK: events and persistence

    private func transition(_ ssid: String, to state: HotspotState, helper: String?) {
        let from = sessions[ssid]?.state ?? .inactive
        sessions[ssid]?.state = state
        sessions[ssid]?.helper = helper
        emit(HotspotEvent(event: .state, network: ssid, helper: helper, from: from, to: state))
    }

    private func persist(_ ssid: String, _ change: (inout PersistentState) -> Void) {
        do {
            try persistence.update(change)
        } catch {
            log(ssid, "error", "the state directory could not be written: \(error)")
        }
    }

    private func log(_ ssid: String, _ level: String, _ message: String, helper: String? = nil) {
        emit(HotspotEvent(event: .log, network: ssid, helper: helper, level: level, message: message))
    }
}
