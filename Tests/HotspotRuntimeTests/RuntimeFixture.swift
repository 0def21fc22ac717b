import Foundation
import LuaSandbox
import Locking
// `eventually` for every suite of this target.
@_exported import TestSupport
@testable import HotspotRuntime
import HotspotCore

/// Collects a runtime's events.
final class EventLog: Sendable {
    private let events = PlainLock<[HotspotEvent]>([])

    func append(_ event: HotspotEvent) { events.withLock { $0.append(event) } }
    var all: [HotspotEvent] { events.withLock { $0 } }

    func commands(_ command: HotspotCommand? = nil) -> [CommandEvent] { all.commands(command) }
    var logs: [LogEvent] { all.logs }
    var connectivity: [ConnectivityEvent] { all.connectivity }
    var transitions: [String] { all.transitions }
}

/// A directory of venue scripts, a state directory and a runtime over a real engine.
struct RuntimeFixture {
    let scripts: String
    let stateDirectory: String
    let engine: LuaEngine
    let runtime: HotspotRuntime
    let events: EventLog

    static func temporaryDirectory() -> String {
        try! scratchDirectory("runtime")
    }

    init(scripts: [String: String], stateDirectory: String? = nil,
         configuration: HotspotRuntime.Configuration = .init(policy: .init(commandDeadline: .seconds(5)))) async throws {
        let directory = Self.temporaryDirectory()
        for (name, text) in scripts {
            try text.write(toFile: "\(directory)/\(name).lua", atomically: true, encoding: .utf8)
        }
        try await self.init(scriptDirectory: directory, stateDirectory: stateDirectory ?? Self.temporaryDirectory(),
                            configuration: configuration)
    }

    init(scriptDirectory: String, stateDirectory: String, configuration: HotspotRuntime.Configuration) async throws {
        scripts = scriptDirectory
        self.stateDirectory = stateDirectory
        engine = try LuaEngine(HotspotRuntime.engineConfiguration())
        let (helpers, problems) = await HotspotRuntime.loadHelpers(at: scriptDirectory, into: engine)
        guard problems.isEmpty else { throw ScriptProblems(problems: problems) }
        let events = EventLog()
        self.events = events
        runtime = HotspotRuntime(engine: engine, helpers: helpers, persistence: try StateDirectory(path: stateDirectory),
                                 configuration: configuration, events: { events.append($0) })
    }

    /// Sends one command straight to a helper, as the state machine would, and checks the
    /// answer against the model: for tests of the script contract.
    func send(_ command: HotspotCommand, to helper: HelperScript, network: NetworkDescription?,
              networkList: [NetworkDescription]? = nil) async -> HelperResponse {
        let request = CommandRequest(command, network: network, networkList: networkList, deadline: .seconds(5))
        return await runtime.transport.send(request, to: helper).checked(answering: command)
    }

    /// The same scripts and state directory in a new engine and runtime, as after a restart.
    func restarted(configuration: HotspotRuntime.Configuration = .init(policy: .init(commandDeadline: .seconds(5)))) async throws -> RuntimeFixture {
        engine.shutdown()
        return try await RuntimeFixture(scriptDirectory: scripts, stateDirectory: stateDirectory, configuration: configuration)
    }
}

/// A venue script: `evaluate` answers `confidence` after `delay` seconds (or runs `evaluate`
/// as given), other handlers as given.
func venue(_ name: String, confidence: String = "none", delay: Double = 0, evaluate: String? = nil,
           handlers: [String: String] = [:]) -> String {
    let evaluateBody = evaluate ?? """
        if \(delay) > 0 then sleep(\(delay)) end -- real time is the point: a slow helper against deadlines
        cmd.network:set_confidence("\(confidence)")
        local response = cmd:create_response("success")
        response:set_network(cmd.network)
        response:deliver()
        """
    var body = "return {\n  name = \"\(name)\",\n  hosts = { \"portal.example\" },\n"
    body += "  evaluate = function(cmd)\n\(evaluateBody)\n  end,\n"
    for (handler, code) in handlers.sorted(by: { $0.key < $1.key }) {
        body += "  \(handler) = function(cmd)\n\(code)\n  end,\n"
    }
    return body + "}\n"
}

let guest = NetworkDescription(ssid: "Venue-Guest", bssid: "02:00:00:00:00:01", signalStrength: 0.8)
