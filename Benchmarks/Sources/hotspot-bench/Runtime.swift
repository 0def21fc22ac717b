import HotspotRuntime
import LuaSandbox
import Synchronization
import HotspotCore

/// A hotspot runtime over a real engine, as the `hotspot-helper` command builds one: the
/// helper worker beside this executable, the scripts in a temporary directory, and no
/// state directory (nothing persists between runs; within one, a network that a helper
/// authenticated is remembered in memory, so each measured join uses a new SSID).
///
/// The same scripts are also loaded a second time straight into the engine, outside the
/// runtime, for the baselines.
struct RuntimeBench {
    let runtime: HotspotRuntime
    let engine: LuaEngine
    let probe: RuntimeProbe
    /// The scripts loaded outside the runtime, in the same order as `sources`.
    let direct: [ScriptHandle]
    private let directory: ScratchDirectory

    /// `observe` takes every event too, as the daemon's metrics do.
    init(sources: [String], observe: @escaping @Sendable (HotspotEvent) -> Void = { _ in }) async throws {
        directory = try ScratchDirectory(helperScripts: sources)
        engine = try LuaEngine(HotspotRuntime.engineConfiguration(workerExecutable: HelperCommand.path))
        let (helpers, problems) = await HotspotRuntime.loadHelpers(at: directory.path, into: engine)
        guard problems.isEmpty, helpers.count == sources.count else {
            throw BenchError("the bench's venue scripts did not load: \(problems)")
        }
        var direct: [ScriptHandle] = []
        for (number, text) in sources.enumerated() {
            direct.append(try await engine.load(ScriptSource(path: "direct\(number).lua", text: text)))
        }
        self.direct = direct
        let probe = RuntimeProbe()
        self.probe = probe
        runtime = HotspotRuntime(engine: engine, helpers: helpers, persistence: try StateDirectory(path: nil),
                                 events: { event in
                                     probe.record(event)
                                     observe(event)
                                 })
    }

    /// The id of the helper made from `sources[number]`: its file name, zero-padded so the
    /// runtime's load order (sorted names) is the order of `sources`.
    static func helperID(_ number: Int) -> String {
        "helper-" + String(repeating: "0", count: max(0, 3 - String(number).count)) + String(number)
    }

    /// Stops the engine and removes the scripts. Networks still joined keep a maintain
    /// timer (a sleeping task) until the process ends, which is harmless here.
    func finish() {
        engine.shutdown()
        directory.remove()
    }

    /// The command table the runtime sends for `command` on a network it just saw (see
    /// `HotspotRuntime.send`), for calling `dispatch` directly.
    static func command(_ command: HotspotCommand, ssid: String) -> LuaValue {
        [
            "type": .text(command.rawValue),
            "network": [
                "ssid": .text(ssid), "bssid": "", "signal_strength": .number(1), "is_secure": false,
                "did_auto_join": false, "did_just_join": false, "is_chosen_helper": false,
            ],
            "store": .table(LuaTable()),
        ]
    }
}

/// Takes the runtime's events as they are emitted (synchronously, inside the runtime
/// actor), keeping only what the figures need.
final class RuntimeProbe: Sendable {
    struct Decision {
        let at: Int64
        let to: HotspotState
        let helper: String?
    }

    private let decision = Mutex<Decision?>(nil)
    private let logMessages = Mutex<[String]>([])
    let failedCommands = Atomic<Int>(0)

    func record(_ event: HotspotEvent) {
        switch event {
        case .state(let change) where change.from == .evaluating:
            let now = Deadline.now.nanoseconds
            decision.withLock { $0 = Decision(at: now, to: change.to, helper: change.helper) }
        case .command(let answered) where answered.result != .success:
            // Helpers cancelled once another claimed the network do not count.
            if answered.error != "cancelled" { failedCommands.add(1, ordering: .relaxed) }
        case .log(let line):
            // Scripts that time themselves report by logging.
            logMessages.withLock { $0.append(line.message) }
        default:
            break
        }
    }

    /// The last decision seen, forgetting it.
    func takeDecision() -> Decision? { decision.withLock { value in defer { value = nil }; return value } }

    /// The messages scripts logged since the last call, oldest first, forgetting them.
    func takeLogMessages() -> [String] { logMessages.withLock { messages in defer { messages = [] }; return messages } }
}
