import FoundationEssentials
import Synchronization
import Locking
public import HotspotCore
import LuaSandbox
import ScriptContract

/// Carries the state machine's commands to venue scripts in the sandboxed engine: a command
/// travels as two plain tables to the prelude's `dispatch` entry in the helper's state (the
/// helper's own part, `context` and `store`, and the part every helper of the command gets
/// alike), and what the prelude returns comes back as a `HelperResponse`. The script's log
/// lines are reported as events, and its `cmd.store` is saved in the state directory.
public final class ScriptTransport: HelperTransport {
    public typealias Helper = HelperScript

    private let engine: LuaEngine
    public let stateDirectory: StateDirectory
    public let configuration: RuntimeConfiguration
    private let emit: @Sendable (HotspotEvent) -> Void
    /// Cookie sessions are this transport's random prefix and the join's count: unique in
    /// its workers, without reading the system's random source at every join.
    private let cookieSessionPrefix = UUID().uuidString
    /// Each helper's encoded own table, by helper id and command (see `encodedHelperTable`).
    private let encodedHelperTables = PlainLock<[EncodedHelperTable.Key: EncodedHelperTable]>([:])
    /// The declared helpers' states built, least recently used first (see `acquire`).
    private let recentDeclaredStates = PlainLock<[HelperState]>([])
    private let statesBuilt = Atomic<Int>(0)

    init(engine: LuaEngine, stateDirectory: StateDirectory, configuration: RuntimeConfiguration,
         events: @escaping @Sendable (HotspotEvent) -> Void) {
        self.engine = engine
        self.stateDirectory = stateDirectory
        self.configuration = configuration
        self.emit = events
    }

    public nonisolated(nonsending) func send(_ request: CommandRequest, to helper: HelperScript) async -> HelperResponse {
        let handle: ScriptHandle
        switch await acquire(helper) {
        case .success(let acquired): handle = acquired
        case .failure(let error): return conclude(request, helper, outcome: CallOutcome(result: .failure(error)))
        }
        defer { helper.state.release() }
        let arguments = [helperTable(for: helper, network: request.network, command: request.command), sharedTable(request)]
        let outcome = await engine.call(handle, ScriptNames.Entry.dispatch.rawValue, arguments, deadline: Self.deadline(of: request),
                                        cpuLimit: request.cpuLimit)
        let response = conclude(request, helper, outcome: outcome)
        if let recordings = configuration.failureRecordings, let network = request.network,
           FailureRecordings.records(request.command, response.result) {
            await recordFailure(request, of: helper, in: handle, on: network, arguments: arguments, into: recordings)
        }
        return response
    }

    /// Takes the requests the helper's session made from its worker and writes them where
    /// `recordings` says, reporting the file (or why there is none) as an event.
    private func recordFailure(_ request: CommandRequest, of helper: HelperScript, in handle: ScriptHandle,
                               on network: NetworkDescription, arguments: [LuaValue], into recordings: FailureRecordings) async {
        let outcome = await engine.call(handle, ScriptNames.Entry.exchanges.rawValue, arguments, deadline: .after(.seconds(5)))
        let log = { (level: LogEvent.Level, message: String) in
            self.emit(.log(level, message, network: network.ssid, helper: helper.id, command: request.command))
        }
        guard case .success(let values) = outcome.result, let answer = values.first else {
            log(.error, "the failed attempt could not be recorded: its requests were not handed over")
            return
        }
        do throws(RecordingProblem) {
            let hidden = configuration.secrets.hiding(Array(request.answers.values))
            guard let (path, count) = try recordings.write(answer, helper: helper.id, network: network.ssid, command: request.command,
                                                           hidden: hidden)
            else { return }
            log(.warn, "the failed attempt's \(count) requests are recorded in \(path), secrets and personal data taken out; "
                + "replay it with `hotspot-helper simulate --har \(path)`")
        } catch {
            log(.error, "the failed attempt could not be recorded: \(error)")
        }
    }

    public nonisolated(nonsending) func sendAll(_ request: CommandRequest, to helpers: [HelperScript],
                                                _ take: (HelperScript, HelperResponse) -> Bool) async {
        // Every helper's state first (a declared helper's is built now if it is not); one
        // that cannot be had answers its failure at once.
        var handles: [ScriptHandle] = []
        var called: [Int] = []
        var acquired: [HelperState] = []
        defer { acquired.forEach { $0.release() } }
        for (index, helper) in helpers.enumerated() {
            // A state built at load stays until the helper is retired, well after this call.
            if !helper.state.isLazy, let handle = helper.state.handle {
                handles.append(handle)
                called.append(index)
                continue
            }
            switch await acquire(helper) {
            case .success(let handle):
                handles.append(handle)
                called.append(index)
                acquired.append(helper.state)
            case .failure(let error):
                guard take(helper, conclude(request, helper, outcome: CallOutcome(result: .failure(error)))) else { return }
            }
        }
        // Each helper's part is made (or taken already encoded) as it is sent, so the first
        // helpers run while the rest are made; the part they share is encoded once.
        let network = request.network, command = request.command
        let outcomes = engine.callAll(count: called.count, sharing: [sharedTable(request)], deadline: Self.deadline(of: request),
                                      cpuLimit: request.cpuLimit) { position in
            let helper = helpers[called[position]], handle = handles[position]
            guard let encoded = self.encodedHelperTable(for: helper, network: network, command: command) else {
                return ScriptCall(handle, ScriptNames.Entry.dispatch.rawValue, [self.helperTable(for: helper, network: network, command: command)])  // reports the error
            }
            return ScriptCall(handle, ScriptNames.Entry.dispatch.rawValue, encodedArguments: encoded)
        }
        // Leaving the loop cancels the calls not answered yet in the engine.
        for await (position, outcome) in outcomes {
            let helper = helpers[called[position]]
            guard take(helper, conclude(request, helper, outcome: outcome)) else { return }
        }
    }

    /// The helper's state, built first for a declared helper whose state is not, and counted
    /// in use until `release`. Of the declared helpers' states, the `keptDeclaredStates` most
    /// recently used stay built; beyond them, the least recently used not in use is dropped.
    private nonisolated(nonsending) func acquire(_ helper: HelperScript) async -> Result<ScriptHandle, LuaScriptError> {
        let state = helper.state
        let result = await state.acquire(in: engine) {
            statesBuilt.add(1, ordering: .relaxed)
            emit(.log(.debug, "the state of \(helper.id) is built", helper: helper.id))
        }
        guard state.isLazy, case .success = result else { return result }
        let dropping: [HelperState] = recentDeclaredStates.withLock { recent in
            recent.removeAll { $0 === state }
            recent.append(state)
            let surplus = recent.count - configuration.keptDeclaredStates
            guard surplus > 0 else { return [] }
            return Array(recent.prefix(surplus))
        }
        let dropped = dropping.filter { $0.dropIfUnused(from: engine) }
        if !dropped.isEmpty {
            recentDeclaredStates.withLock { recent in recent.removeAll { state in dropped.contains { $0 === state } } }
        }
        return result
    }

    /// How many declared helpers' states were built when they were first needed (for tests).
    public var declaredStatesBuilt: Int { statesBuilt.load(ordering: .relaxed) }

    public func helpersReplaced(by helpers: [HelperScript]) {
        // An encoding of a helper that is gone would stay for good, holding its table.
        let ids = Set(helpers.map(\.id))
        encodedHelperTables.withLock { tables in tables = tables.filter { ids.contains($0.key.helper) } }
        let states = Set(helpers.map(\.state))
        recentDeclaredStates.withLock { recent in recent.removeAll { !states.contains($0) } }
    }

    /// The helpers whose own table is kept encoded (for tests).
    var encodedHelperIDs: Set<String> { encodedHelperTables.withLock { Set($0.keys.map(\.helper)) } }

    private static func deadline(of request: CommandRequest) -> CallDeadline {
        request.deadline.map { .after($0) } ?? .unlimited
    }

    /// `helperTable`, encoded: from the last command for the same helper and network link when
    /// the helper's store is empty, since then nothing in it changes (its context depends on
    /// the helper, the command, the configuration and the network's link alone: the commands
    /// sent to every helper read no secret of a network's own), so a join
    /// does not build and encode it for each of its helpers again.
    private func encodedHelperTable(for helper: HelperScript, network: NetworkDescription?, command: HotspotCommand) -> EncodedLuaValues? {
        let link = network.map(HelperNetworkContext.init)
        let key = EncodedHelperTable.Key(helper: helper.id, command: command)
        let hasStore = network.map { !stateDirectory.store(helper: helper.id, ssid: $0.ssid).isEmpty } ?? false
        if !hasStore, let cached = encodedHelperTables.withLock({ $0[key] }),
           cached.helper == helper, cached.link == link {
            return cached.values
        }
        guard let values = try? EncodedLuaValues([helperTable(for: helper, network: network, command: command)]) else { return nil }
        if !hasStore {
            encodedHelperTables.withLock { $0[key] = EncodedHelperTable(helper: helper, link: link, values: values) }
        }
        return values
    }

    /// What of a network the helper's context holds.
    struct HelperNetworkContext: Equatable {
        let interface: String?
        let resolvers: [String]
        let probes: [Probe]
        let captivePortalAPI: String?

        init(_ network: NetworkDescription) {
            (interface, resolvers, probes, captivePortalAPI) =
                (network.interface, network.resolvers, network.probes, network.captivePortalAPI)
        }
    }

    struct EncodedHelperTable {
        struct Key: Hashable {
            let helper: String
            let command: HotspotCommand
        }

        let helper: HelperScript
        let link: HelperNetworkContext?
        let values: EncodedLuaValues
    }

    /// The helper's own part of a command: its context and store.
    private func helperTable(for helper: HelperScript, network: NetworkDescription?, command: HotspotCommand) -> LuaValue {
        var table = LuaTable()
        if let network {
            let store = stateDirectory.store(helper: helper.id, ssid: network.ssid)
            if !store.isEmpty {  // the prelude takes an absent store as empty
                table[ScriptNames.HelperKey.store] = .table(LuaTable(Dictionary(uniqueKeysWithValues:
                    store.map { (LuaValue.text($0.key), LuaValue.text($0.value)) })))
            }
        }
        table[ScriptNames.HelperKey.context] = context(for: helper, network: network, command: command)
        return .table(table)
    }

    /// The command's part every helper gets alike, with the session naming its cookie jars
    /// (the prelude adds it to a helper's context when the command first reaches the network).
    private func sharedTable(_ request: CommandRequest) -> LuaValue {
        var table = LuaTable()
        table[ScriptNames.CommandKey.type] = .text(request.command.rawValue)
        table[ScriptNames.CommandKey.session] = request.join.map { .text("\(cookieSessionPrefix)-\($0)") } ?? nil
        if let network = request.network {
            table[ScriptNames.CommandKey.network] = Self.networkValue(network, didJustJoin: request.didJustJoin, isChosen: request.isChosen)
        }
        if request.command == .presentUI {
            table[ScriptNames.CommandKey.answers] = .table(LuaTable(Dictionary(uniqueKeysWithValues:
                request.answers.map { (LuaValue.text($0.key), LuaValue.text($0.value)) })))
        }
        if let networkList = request.networkList {
            table[ScriptNames.CommandKey.networkList] = .table(LuaTable(array: networkList.map { Self.networkValue($0, didJustJoin: false, isChosen: false) }))
        }
        return .table(table)
    }

    /// Turns what a helper's handler produced into its response: its logs reported as
    /// events, its store saved.
    private func conclude(_ request: CommandRequest, _ helper: HelperScript, outcome: CallOutcome) -> HelperResponse {
        let network = request.network
        if let reason = outcome.rerunReason {
            emit(.log(.warn, "\(request.command.rawValue) ran again on a new worker process: \(reason)", network: network?.ssid,
                      helper: helper.id, command: request.command))
        }
        for record in outcome.logs {
            emit(.log(LogEvent.Level(record.level), record.message, network: network?.ssid, helper: helper.id,
                      command: request.command))
        }
        var (response, store) = Self.interpret(outcome)
        if response.result == .uiRequired, response.questions == nil { response.questions = helper.questions }
        // Shown by `status` and the person's page, which events' redaction does not reach.
        response.questions = response.questions.map(configuration.secrets.redact)
        if let store, let network {
            do {
                try stateDirectory.setStore(store, helper: helper.id, ssid: network.ssid)
            } catch {
                // The device's storage, not the helper: its answer (and the portal's real
                // session) stands, and the store is kept in memory and written later.
                emit(.log(.error, "cmd.store could not be saved: \(error)", network: network.ssid, helper: helper.id,
                          command: request.command))
            }
        }
        return response
    }

    /// What the prelude keeps out of the script's reach for `cmd:http` and `cmd:secret`, with
    /// the secrets `command` may read; the prelude adds the command's cookie session.
    func context(for helper: HelperScript, network: NetworkDescription?, command: HotspotCommand) -> LuaValue {
        HelperContext(
            hosts: helper.hosts, secrets: CommandPrivileges.secrets(configuration.secrets, of: helper.id, in: command, on: network),
            helper: helper.id,
            interface: network?.interface, resolvers: network?.resolvers ?? [], probes: network?.probes.map(\.compactText) ?? [],
            caFile: configuration.caFile, captivePortalAPI: network?.captivePortalAPI,
            allowsPlainHTTPCaptivePortalAPI: network?.allowsPlainHTTPCaptivePortalAPI(configured: configuration.allowsPlainHTTPCaptivePortalAPI)
                ?? configuration.allowsPlainHTTPCaptivePortalAPI,
            followsPortal: helper.followsPortal, recordsExchanges: configuration.failureRecordings != nil
        ).luaValue
    }

    static func networkValue(_ network: NetworkDescription, didJustJoin: Bool, isChosen: Bool) -> LuaValue {
        var table = LuaTable()
        table[ScriptNames.NetworkKey.ssid] = .text(network.ssid)
        table[ScriptNames.NetworkKey.bssid] = .text(network.bssid)
        table[ScriptNames.NetworkKey.signalStrength] = .number(network.signalStrength)
        table[ScriptNames.NetworkKey.isSecure] = .boolean(network.isSecure)
        table[ScriptNames.NetworkKey.didAutoJoin] = .boolean(network.didAutoJoin)
        table[ScriptNames.NetworkKey.didJustJoin] = .boolean(didJustJoin)
        table[ScriptNames.NetworkKey.isChosenHelper] = .boolean(isChosen)
        return .table(table)
    }

    /// Reads what the prelude collected: the response (a failure whose error says why when
    /// it cannot be read) and the helper's store when the handler changed it. Whether the
    /// result is valid for the command is the state machine's to check.
    static func interpret(_ outcome: CallOutcome) -> (HelperResponse, store: [String: String]?) {
        let answer: DispatchAnswer
        switch outcome.result {
        case .failure(let error): return (.failure(error.description), nil)
        case .success(let values): answer = DispatchAnswer(values)
        }
        let store = answer.store.tableValue.map { table in
            Dictionary(uniqueKeysWithValues: table.entries.compactMap { key, value in
                key.stringValue.flatMap { key in value.stringValue.map { (key, $0) } }
            })
        }
        if let store, store.reduce(0, { $0 + $1.key.utf8.count + $1.value.utf8.count }) > StateDirectory.storeLimit {
            return (.failure("cmd.store holds more than \(StateDirectory.storeLimit) bytes"), nil)
        }
        guard let name = answer.result.stringValue, let result = CommandResult(rawValue: name) else {
            return (.failure("the handler answered no known result"), nil)
        }
        var questions: PersonQuestions?
        if result == .uiRequired, !answer.questions.isNil {
            do throws(PersonQuestions.ReadingProblem) {
                questions = try PersonQuestions(lua: answer.questions, named: ScriptNames.ScriptField.ui.rawValue)
            } catch {
                return (.failure("the questions returned with ui_required: \(error)"), store)
            }
        }
        let confidence = answer.confidence.stringValue.flatMap(Confidence.init(rawValue:)) ?? .none
        let claims = (answer.claims.tableValue?.array ?? []).compactMap { entry -> ScannedNetwork? in
            guard let table = entry.tableValue, let ssid = table[ScriptNames.ClaimKey.ssid].stringValue else { return nil }
            return ScannedNetwork(ssid: ssid, bssid: table[ScriptNames.ClaimKey.bssid].stringValue,
                                  password: table[ScriptNames.ClaimKey.password].stringValue)
        }
        return (HelperResponse(result: result, confidence: confidence, claims: claims, error: answer.error.stringValue,
                               questions: questions), store)
    }
}

extension LogEvent.Level {
    init(_ level: LogLevel) {
        switch level {
        case .print: self = .print
        case .debug: self = .debug
        case .info: self = .info
        case .warn: self = .warn
        case .error: self = .error
        }
    }
}

extension HelperScript: HotspotHelper {}
