/// The hotspot-helper state machine (docs/HOTSPOT-MODEL.md): one session per network, keyed
/// by SSID; arbitration between helpers; backoff after temporary failures; maintain timers.
///
/// It does no I/O of its own: helpers are reached through `Transport`, what must survive a
/// restart (chosen helpers, exclusions, disabled auto-join, switched-off helpers) goes
/// through a `HotspotPersistence` before the transition that relies on it, the network is
/// checked through `NetworkChecks`, and time comes from a `HotspotClock`. Every command and
/// every transition is reported as a `HotspotEvent`.
public actor HotspotMachine<Transport: HelperTransport> {
    public typealias Helper = Transport.Helper

    /// The deadlines and timers of the model.
    public struct Policy: Sendable {
        /// Deadline of every command but `present_ui`.
        public var commandDeadline: Duration
        /// Deadline of `present_ui`; nil means none (it waits on a person).
        public var presentUIDeadline: Duration?
        /// The CPU time `present_ui` may use, deadline or not: a person is no reason for a
        /// script to spin a core.
        public var presentUICPULimit: Duration
        public var maintainInterval: Duration
        /// Backoff after `temporary_failure`: doubles from the first delay up to the maximum.
        public var retryFirstDelay: Duration
        public var retryMaximumDelay: Duration
        /// The long backoff after `failure`, which also leaves the network's auto-join waiting
        /// on it: a device with no person is never left captive for good by one failed try.
        public var failureRetryFirstDelay: Duration
        public var failureRetryMaximumDelay: Duration
        /// After a helper answers `success` to authenticate or present_ui, check the network
        /// (`NetworkChecks.connectivity`); still captive means the helper was wrong.
        public var verifyAuthentication: Bool

        public init(commandDeadline: Duration = .seconds(45), presentUIDeadline: Duration? = nil,
                    presentUICPULimit: Duration = .seconds(10),
                    maintainInterval: Duration = .seconds(300), retryFirstDelay: Duration = .seconds(1),
                    retryMaximumDelay: Duration = .seconds(600), failureRetryFirstDelay: Duration = .seconds(300),
                    failureRetryMaximumDelay: Duration = .seconds(3600), verifyAuthentication: Bool = false) {
            self.commandDeadline = commandDeadline
            self.presentUIDeadline = presentUIDeadline
            self.presentUICPULimit = presentUICPULimit
            self.maintainInterval = maintainInterval
            self.retryFirstDelay = retryFirstDelay
            self.retryMaximumDelay = retryMaximumDelay
            self.failureRetryFirstDelay = failureRetryFirstDelay
            self.failureRetryMaximumDelay = failureRetryMaximumDelay
            self.verifyAuthentication = verifyAuthentication
        }
    }

    struct Session {
        var network: NetworkDescription
        var state: HotspotState = .inactive
        var helper: String?
        var retryDelay: Duration?
        /// The last delay of the long backoff after `failure`.
        var failureRetryDelay: Duration?
        /// Which join of this runtime the session is (see `CommandRequest.join`).
        let join: Int
        /// When the pending maintain or retry comes.
        /// Asking `NetworkChecks` when to maintain, which may bring the maintain forward.
        var scheduling: Task<Void, Never>?
        /// The `present_ui` under way: logging off, switching its helper off and leaving the
        /// network end it.
        var presentingUI: Task<HelperResponse, Never>?
        /// What the helper asks the person, while the network waits for one.
        var questions: PersonQuestions?
    }

    public private(set) var helpers: [Helper]
    /// The helpers' declarations by exact SSID, kept with `helpers`.
    private var declarations: DeclarationIndex
    public nonisolated let transport: Transport
    public nonisolated let policy: Policy
    nonisolated let persistence: any HotspotPersistence
    nonisolated let checks: any NetworkChecks
    nonisolated let clock: any HotspotClock
    package nonisolated let emit: @Sendable (HotspotEvent) -> Void
    private var sessions = BySSID<Session>()
    private var joinCount = 0
    private var timers = TimerSchedule()

    public init(helpers: [Helper], transport: Transport, persistence: any HotspotPersistence, checks: any NetworkChecks,
                clock: any HotspotClock = SystemClock(), policy: Policy = .init(),
                events: @escaping @Sendable (HotspotEvent) -> Void) {
        self.helpers = helpers
        declarations = DeclarationIndex(helpers.map(\.declaredNetworks))
        self.transport = transport
        self.persistence = persistence
        self.checks = checks
        self.clock = clock
        self.policy = policy
        self.emit = events
    }

    public func state(of ssid: String) -> HotspotState { sessions[ssid]?.state ?? .inactive }
    public func chosenHelper(of ssid: String) -> String? { sessions[ssid]?.helper }
    /// How long until the network is tried again after a helper's failure or temporary
    /// failure; nil when no retry is pending.
    public func nextRetry(of ssid: String) -> Duration? {
        guard let due = timers.due(ssid), !due.maintain else { return nil }
        return max(due.at - clock.now, .zero)
    }
    /// What the helper asks the person, while the network waits for one and the helper said.
    public func questions(of ssid: String) -> PersonQuestions? {
        sessions[ssid]?.state == .presentingUI ? sessions[ssid]?.questions : nil
    }

    /// Puts a new set of helpers in place (scripts reloaded, added or removed) without
    /// touching the sessions: a network keeps its chosen helper when that helper is still
    /// there, and is evaluated again at its next maintain when it is not.
    public func replaceHelpers(_ newHelpers: [Helper]) {
        helpers = newHelpers
        declarations = DeclarationIndex(newHelpers.map(\.declaredNetworks))
        transport.helpersReplaced(by: newHelpers)
        for (ssid, session) in sessions.all {
            guard let id = session.helper, !newHelpers.contains(where: { $0.id == id }) else { continue }
            log(ssid, .warn, "the helper \(id) of \(ssid) was removed; \(ssid) is evaluated again at its next maintain")
        }
    }

    // MARK: joining

    /// The device joined `network`: runs the machine until the network rests
    /// (authenticated, presenting UI, failed) and returns that state.
    @discardableResult
    public func join(_ network: NetworkDescription) async -> HotspotState {
        clearTimer(network.ssid)
        joinCount += 1
        sessions[network.ssid] = Session(network: network, join: joinCount)
        if network.captivePortalAPIIsFromLink, let api = network.captivePortalAPI, api.lowercased().hasPrefix("http:") {
            log(network.ssid, .warn, "the Captive Portal API \(api) is plain HTTP; it is used because it came from the link's own "
                + "DHCP or router advertisement, which whoever could forge its answers could forge as well")
        }
        return await start(network.ssid)
    }

    /// `isRetry`: the backoff's own try, which a failure's waiting auto-join does not hold back.
    private func start(_ ssid: String, isRetry: Bool = false) async -> HotspotState {
        guard let network = sessions[ssid]?.network else { return .inactive }
        let saved = persistence.snapshot
        if network.didAutoJoin, !isRetry, saved.autoJoinDisabled.contains(ssid) {
            // Not for good: the long backoff tries it again, so an unattended device gets in once the portal lets it.
            transition(ssid, to: .failure, helper: nil)
            let delay = scheduleRetry(ssid, afterFailure: true)
            log(ssid, .warn, "auto-join of \(ssid) waits since a helper answered failure: tried again in \(delay); join it by hand to try now")
            return .failure
        }
        if let cached = saved.chosenHelpers[ssid], let helper = usableHelper(cached, for: ssid) {
            transition(ssid, to: .maintaining, helper: helper.id)
            let response = await send(.maintain, to: helper, ssid: ssid, didJustJoin: true)
            return await afterMaintain(ssid, helper, response)
        }
        return await evaluate(ssid)
    }

    /// A helper whose declaration matches with high confidence wins without any code running.
    /// Otherwise evaluate goes to every enabled helper that declares nothing, at once; the
    /// first `high` wins at once and the others are cancelled; otherwise the first `low`
    /// (a declaration's before any helper's answer), once all have answered. Portal hosts and
    /// gateway families are matched only when no SSID or BSSID entry did: a declared SSID wins
    /// over a host, and a network a declaration names is not probed first.
    private func evaluate(_ ssid: String) async -> HotspotState {
        guard let network = sessions[ssid]?.network else { return .inactive }
        transition(ssid, to: .evaluating, helper: nil)
        let off = persistence.snapshot.helpersOff(for: ssid)
        var declared = declaredMatches(for: network, except: off)
        if declared.isEmpty, helpers.contains(where: { $0.declaredNetworks?.namesPortals == true && !off.contains($0.id) }) {
            declared = await portalMatches(for: network, among: helpers(except: off))
            if Task.isCancelled { return stopped(ssid) }
        }
        if let (helper, match) = declared.first {
            log(ssid, .info, "\(ssid) matches the declaration of \(helper.id) (\(match))", helper: helper.id)
            if declared.count > 1, declared[1].match.confidence == match.confidence {
                log(ssid, .warn, "\(ssid) matches the declarations of \(declared.map(\.helper.id).joined(separator: ", ")) alike; "
                    + "\(helper.id) is chosen, being first by name", helper: helper.id)
            }
            if match.confidence == .high { return await authenticate(ssid, with: helper) }
        }
        var winner: Helper? = declared.first?.helper
        let candidates = declarations.undeclared.map { helpers[$0] }.filter { !off.contains($0.id) }
        await sendAll(request(.evaluate, ssid: ssid), to: candidates) { helper, response in
            if response.confidence == .high {
                winner = helper
                return false
            }
            if response.confidence == .low, winner == nil { winner = helper }
            return true
        }
        if Task.isCancelled { return stopped(ssid) }
        guard let winner else {
            transition(ssid, to: .authenticated, helper: nil)  // nobody claims it
            return .authenticated
        }
        return await authenticate(ssid, with: winner)
    }

    /// The helpers not in `off` whose declarations match `network`, high confidence first,
    /// each in the helpers' order; only the index's candidates are asked.
    private func declaredMatches(for network: NetworkDescription, except off: Set<String>) -> [(helper: Helper, match: NetworkDeclaration.Match)] {
        Self.highFirst(declarations.candidates(for: network.ssid).compactMap { position in
            let helper = helpers[position]
            guard !off.contains(helper.id), let match = helper.declaredNetworks?.match(network) else { return nil }
            return (helper: helper, match: match)
        })
    }

    /// The helpers among `candidates` whose portal hosts or gateway families match what a probe
    /// of `network` sees, high confidence first; none when it is not captive.
    private func portalMatches(for network: NetworkDescription, among candidates: [Helper]) async -> [(helper: Helper, match: NetworkDeclaration.Match)] {
        guard let portal = await checks.portal(of: network) else {
            log(network.ssid, .info, "\(network.ssid) shows no portal; the declared portal hosts and gateway families do not match it")
            return []
        }
        log(network.ssid, .info, "\(network.ssid)'s portal is at \(portal.host)"
            + (portal.family.map { ", a \($0.rawValue) gateway by its redirect" } ?? ""))
        return Self.highFirst(candidates.compactMap { helper in
            helper.declaredNetworks?.match(network, portal: portal).map { (helper: helper, match: $0) }
        })
    }

    private static func highFirst(_ matches: [(helper: Helper, match: NetworkDeclaration.Match)]) -> [(helper: Helper, match: NetworkDeclaration.Match)] {
        matches.filter { $0.match.confidence == .high } + matches.filter { $0.match.confidence != .high }
    }

    /// The helper whose declaration evaluate would choose for `network`, and how it matched;
    /// nil when no enabled helper's declaration matches it.
    public func declaredHelper(for network: NetworkDescription) -> (helper: Helper, match: NetworkDeclaration.Match)? {
        declaredMatches(for: network, except: persistence.snapshot.helpersOff(for: network.ssid)).first
    }

    private func authenticate(_ ssid: String, with helper: Helper) async -> HotspotState {
        guard sessions[ssid] != nil else { return .inactive }
        transition(ssid, to: .authenticating, helper: helper.id)
        let response = await send(.authenticate, to: helper, ssid: ssid, isChosen: true)
        return await afterAuthentication(ssid, helper, response)
    }

    private func afterAuthentication(_ ssid: String, _ helper: Helper, _ response: HelperResponse) async -> HotspotState {
        if Task.isCancelled { return stopped(ssid) }
        switch response.result {
        case .success:
            if let verdict = await verifiedConnectivity(of: ssid, after: helper), verdict.verdict == .captive {
                // A claim the portal contradicts: retried like a temporary failure, nothing remembered.
                log(ssid, .warn, "helper \(helper.id) claimed success but the network is still captive"
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
            sessions[ssid]?.failureRetryDelay = nil
            transition(ssid, to: .authenticated, helper: helper.id)
            scheduleMaintain(ssid)
            return .authenticated
        case .uiRequired:
            sessions[ssid]?.questions = response.questions
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
            scheduleRetry(ssid, afterFailure: true)
            return .failure
        }
    }

    /// With `verifyAuthentication`, checks the network after `helper`'s success and reports
    /// the verdict; nil when not verifying or when it could not be checked.
    private func verifiedConnectivity(of ssid: String, after helper: Helper) async -> ConnectivityEvent? {
        guard policy.verifyAuthentication, let network = sessions[ssid]?.network,
              let verdict = await checks.connectivity(of: network, after: helper.id) else { return nil }
        emit(.connectivity(verdict))
        return verdict
    }

    private func afterMaintain(_ ssid: String, _ helper: Helper, _ response: HelperResponse) async -> HotspotState {
        if Task.isCancelled { return stopped(ssid) }
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

    /// The task running the network's commands was cancelled (the daemon is stopping): the
    /// answer of a cancelled command says nothing of the network, so nothing is remembered or
    /// scheduled from it, and the network stays in the state it was in.
    private func stopped(_ ssid: String) -> HotspotState {
        log(ssid, .info, "stopped while \(state(of: ssid).rawValue); nothing is remembered from the command cut short")
        return state(of: ssid)
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
            return await start(ssid, isRetry: true)
        }
        guard let session = sessions[ssid], session.state == .authenticated else { return state(of: ssid) }
        guard let id = session.helper, let helper = helpers.first(where: { $0.id == id }) else {
            persist(ssid) { $0.chosenHelpers[ssid] = nil }
            return await evaluate(ssid)
        }
        transition(ssid, to: .maintaining, helper: id)
        let response = await send(.maintain, to: helper, ssid: ssid)
        return await afterMaintain(ssid, helper, response)
    }

    /// The user opened the helper's UI for a network waiting in `presenting_ui`, with what
    /// they entered (`cmd.answers`: an email address, a room number, a voucher...).
    @discardableResult
    ///
    /// One at a time per network. When the helper said what it asks, the answers are checked
    /// first: answers that do not do are not sent, and the network keeps waiting (the
    /// caller finds why with `questions(of:)` and `PersonQuestions.problems(with:)`). When the
    /// caller's task is cancelled (the person gave up), the helper's command is cancelled and
    /// the network keeps waiting for a person.
    public func presentUI(_ ssid: String, answers: [String: String] = [:]) async -> HotspotState {
        guard let session = sessions[ssid], session.state == .presentingUI, session.presentingUI == nil,
              let id = session.helper, let helper = helpers.first(where: { $0.id == id }) else { return state(of: ssid) }
        var answers = answers
        if let questions = session.questions {
            let problems = questions.problems(with: answers)
            guard problems.isEmpty else {
                log(ssid, .warn, "answers for \(ssid) not sent to its helper: \(problems.joined(separator: "; "))", helper: id)
                return .presentingUI
            }
            answers = questions.normalized(answers)
        }
        let command = Task { await send(.presentUI, to: helper, ssid: ssid, isChosen: true, answers: answers) }
        sessions[ssid]?.presentingUI = command
        let response = await withTaskCancellationHandler { await command.value } onCancel: { command.cancel() }
        // Ended meanwhile by a logoff, its helper switched off or the network left.
        guard sessions[ssid]?.presentingUI == command else { return state(of: ssid) }
        sessions[ssid]?.presentingUI = nil
        if command.isCancelled, response.result != .success {
            log(ssid, .info, "present_ui was cancelled; \(ssid) still waits for a person", helper: id)
            return state(of: ssid)
        }
        return await afterAuthentication(ssid, helper, response)
    }

    /// A network waiting for a person stops waiting: its `present_ui` under way, if any, is
    /// cancelled, and the network is inactive until it is joined again.
    private func stopWaitingForAPerson(_ ssid: String, because reason: String) {
        guard let session = sessions[ssid], session.state == .presentingUI else { return }
        session.presentingUI?.cancel()
        sessions[ssid]?.presentingUI = nil
        log(ssid, .info, "\(ssid) no longer waits for a person: \(reason)", helper: session.helper)
        transition(ssid, to: .inactive, helper: session.helper)
    }

    /// The user asked to log off: `logoff` goes to the chosen helper, then the device
    /// leaves the network. A network waiting for a person was never logged in: it just
    /// stops waiting (and its `present_ui` under way ends).
    @discardableResult
    public func logoff(_ ssid: String) async -> HotspotState {
        if sessions[ssid]?.state == .presentingUI {
            stopWaitingForAPerson(ssid, because: "the person logged off")
            return state(of: ssid)
        }
        guard let session = sessions[ssid], session.state == .authenticated else { return state(of: ssid) }
        clearTimer(ssid)
        if let id = session.helper, let helper = helpers.first(where: { $0.id == id }) {
            transition(ssid, to: .loggingOff, helper: id)
            _ = await send(.logoff, to: helper, ssid: ssid, isChosen: true)
        }
        transition(ssid, to: .inactive, helper: session.helper)
        return .inactive
    }

    /// Something of a joined network changed without the device leaving it (its resolvers, its
    /// Captive Portal API URI): the next commands see the new description. How the network was
    /// joined stays as it was.
    public func update(_ network: NetworkDescription) {
        guard let joined = sessions[network.ssid]?.network else { return }
        var updated = network
        updated.didAutoJoin = joined.didAutoJoin
        sessions[network.ssid]?.network = updated
    }

    /// The device left the network: no command is sent.
    public func leave(_ ssid: String) {
        guard let session = sessions[ssid] else { return }
        session.presentingUI?.cancel()
        clearTimer(ssid)
        transition(ssid, to: .inactive, helper: session.helper)
        sessions[ssid] = nil
    }

    /// Runs `filter_scan_list` on every enabled helper and returns what each claims; a helper
    /// that declares its networks only when one of them is in the list (its code does not run
    /// for networks it does not handle; one naming only portals never, a list having none).
    public func filterScanList(_ networks: [NetworkDescription]) async -> [NetworkClaim] {
        let off = persistence.snapshot.disabledHelpers
        // The helpers that declare nothing, and the declared ones the index offers for a
        // scanned network, kept when one matches.
        var chosen = Set(declarations.undeclared)
        for network in networks {
            for position in declarations.candidates(for: network.ssid) where !chosen.contains(position) {
                if helpers[position].declaredNetworks?.match(network) != nil { chosen.insert(position) }
            }
        }
        let candidates = chosen.sorted().map { helpers[$0] }.filter { !off.contains($0.id) }
        var claims: [NetworkClaim] = []
        let request = CommandRequest(.filterScanList, network: nil, networkList: networks, deadline: deadline(of: .filterScanList))
        await sendAll(request, to: candidates) { helper, response in
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
                    try? await self.clock.sleep(until: self.clock.now + interval)
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// The person asks for `network` again (after a helper's failure disabled its auto-join,
    /// say): auto-join is enabled again and the network joined now, as the person's join.
    @discardableResult
    public func rejoin(_ network: NetworkDescription) async -> HotspotState {
        persist(network.ssid) { $0.autoJoinDisabled.remove(network.ssid) }
        var asked = network
        asked.didAutoJoin = false
        return await join(asked)
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
        guard !enabled else { return }
        for (network, session) in sessions.all where session.helper == id && (ssid.map { $0.utf8.elementsEqual(network.utf8) } ?? true) {
            stopWaitingForAPerson(network, because: "its helper \(id) was switched off; join it to evaluate it again")
        }
    }

    // MARK: timers

    /// No maintain or retry runs after this (the daemon is stopping).
    public func stopTimers() {
        for ssid in sessions.ssids { clearTimer(ssid) }
        timers.stop()
    }

    private func scheduleMaintain(_ ssid: String) {
        guard let network = sessions[ssid]?.network else { return }
        let interval = policy.maintainInterval
        sessions[ssid]?.scheduling?.cancel()  // an older reading would be stale
        setTimer(ssid, .init(at: clock.now + interval, maintain: true))
        guard network.captivePortalAPI != nil else { return }
        // What the network says about the session may bring the maintain forward.
        let asked = clock.now
        sessions[ssid]?.scheduling = Task { [weak self, checks] in
            let delay = await checks.maintainDelay(for: network, interval: interval)
            await self?.bringMaintainForward(ssid, to: asked + delay)
        }
    }

    private func bringMaintainForward(_ ssid: String, to at: Duration) {
        // A maintain, logoff or leave since cancelled the reading: its answer is stale.
        guard !Task.isCancelled, let due = timers.due(ssid), due.maintain, at < due.at else { return }
        setTimer(ssid, .init(at: at, maintain: true))
    }

    /// The next try after `temporary_failure` (a short backoff), or after `failure` (a long one).
    @discardableResult
    private func scheduleRetry(_ ssid: String, afterFailure: Bool = false) -> Duration {
        guard let session = sessions[ssid] else { return .zero }
        let delay: Duration
        if afterFailure {
            delay = session.failureRetryDelay.map { min($0 * 2, policy.failureRetryMaximumDelay) } ?? policy.failureRetryFirstDelay
            sessions[ssid]?.failureRetryDelay = delay
        } else {
            delay = session.retryDelay.map { min($0 * 2, policy.retryMaximumDelay) } ?? policy.retryFirstDelay
            sessions[ssid]?.retryDelay = delay
        }
        setTimer(ssid, .init(at: clock.now + delay, maintain: false))
        log(ssid, .info, "retrying \(ssid) in \(delay)")
        return delay
    }

    private func clearTimer(_ ssid: String) {
        sessions[ssid]?.scheduling?.cancel()
        sessions[ssid]?.scheduling = nil
        timers.clear(ssid)
    }

    private func setTimer(_ ssid: String, _ due: TimerSchedule.Due) {
        guard sessions[ssid] != nil else { return }
        timers.set(ssid, due) {
            Task { [weak self] in
                while let sleep = await self?.nextAlarmSleep() {
                    await sleep.value
                    await self?.fireDueTimers()
                }
            }
        }
    }

    private func nextAlarmSleep() -> Task<Void, Never>? { timers.nextSleep(on: clock) }

    private func fireDueTimers() {
        for (ssid, due) in timers.takeDue(at: clock.now) {
            // A task of its own per firing, which nothing cancels: its commands run to their end.
            timers.addFiring { firing in
                Task {
                    _ = await self.timerFired(ssid, maintain: due.maintain)
                    self.timers.firingEnded(firing)
                }
            }
        }
    }

    /// Stops the timers and waits for the maintains and retries already under way, so that
    /// each network is in the state it rests in (`connect --stay` reports it as it ends).
    public func settle() async {
        stopTimers()
        while let firing = timers.takeFiring() { await firing.value }
    }

    /// When the earliest maintain or retry is due, if any (for tests).
    var nextDue: Duration? { timers.nextDue }

    // MARK: commands

    /// The helpers not in `off`; the list itself when none is off, as is usual, so a
    /// command to every helper neither copies it nor looks each one up.
    private func helpers(except off: Set<String>) -> [Helper] {
        off.isEmpty ? helpers : helpers.filter { !off.contains($0.id) }
    }

    private func usableHelper(_ id: String, for ssid: String) -> Helper? {
        guard !persistence.snapshot.helpersOff(for: ssid).contains(id) else { return nil }
        return helpers.first { $0.id == id }
    }

    private nonisolated func deadline(of command: HotspotCommand) -> Duration? {
        command == .presentUI ? policy.presentUIDeadline : policy.commandDeadline
    }

    private func request(_ command: HotspotCommand, ssid: String, didJustJoin: Bool = false, isChosen: Bool = false,
                         answers: [String: String] = [:]) -> CommandRequest {
        CommandRequest(command, network: sessions[ssid]?.network, didJustJoin: didJustJoin, isChosen: isChosen,
                       join: sessions[ssid]?.join, answers: answers, deadline: deadline(of: command),
                       cpuLimit: command == .presentUI ? policy.presentUICPULimit : nil)
    }

    /// Sends one command to one helper of a session and reports it.
    private func send(_ command: HotspotCommand, to helper: Helper, ssid: String, didJustJoin: Bool = false,
                      isChosen: Bool = false, answers: [String: String] = [:]) async -> HelperResponse {
        let request = request(command, ssid: ssid, didJustJoin: didJustJoin, isChosen: isChosen, answers: answers)
        let start = clock.now
        let response = helper.handlers.contains(command)
            ? await transport.send(request, to: helper).checked(answering: command)
            : .notRecognized
        report(request, helper, response, since: start)
        return response
    }

    /// Sends one command to several helpers at once and hands each response to `take` as
    /// it answers; when `take` returns false, the commands not answered yet are cancelled
    /// and reported so.
    private func sendAll(_ request: CommandRequest, to helpers: [Helper], _ take: (Helper, HelperResponse) -> Bool) async {
        let start = clock.now
        let command = request.command
        let handling = helpers.allSatisfy({ $0.handlers.contains(command) })
            ? helpers  // as usual: no copy of the list
            : helpers.filter { $0.handlers.contains(command) }
        for helper in helpers where !helper.handlers.contains(command) {
            report(request, helper, .notRecognized, since: start)
            guard take(helper, .notRecognized) else { return }
        }
        var answered = Set<String>()
        var stopped = false
        await transport.sendAll(request, to: handling) { helper, answer in
            let response = answer.checked(answering: command)
            answered.insert(helper.id)
            report(request, helper, response, since: start)
            stopped = !take(helper, response)
            return !stopped
        }
        guard stopped else { return }
        for helper in handling where !answered.contains(helper.id) {
            report(request, helper, .failure("cancelled"), since: start)
        }
    }

    private nonisolated func report(_ request: CommandRequest, _ helper: Helper, _ response: HelperResponse, since start: Duration) {
        let milliseconds = (clock.now - start) / .milliseconds(1)
        emit(.command(CommandEvent(
            network: request.network?.ssid, command: request.command, helper: helper.id, result: response.result,
            confidence: request.command == .evaluate ? response.confidence : nil,
            milliseconds: (milliseconds * 1000).rounded() / 1000, error: response.error)))
    }

    // MARK: events and persistence

    private func transition(_ ssid: String, to state: HotspotState, helper: String?) {
        let from = sessions[ssid]?.state ?? .inactive
        sessions[ssid]?.state = state
        sessions[ssid]?.helper = helper
        emit(.state(StateEvent(network: ssid, from: from, to: state, helper: helper)))
    }

    private func persist(_ ssid: String, _ change: (inout PersistentState) -> Void) {
        do {
            try persistence.update(change)
        } catch {
            log(ssid, .error, "the state directory could not be written: \(error)")
        }
    }

    private func log(_ ssid: String, _ level: LogEvent.Level, _ message: String, helper: String? = nil) {
        emit(.log(level, message, network: ssid, helper: helper))
    }
}
