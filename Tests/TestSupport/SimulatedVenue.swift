import Foundation
public import PortalSimulator

extension CLI {
    /// The bundled venue helpers (VenueHelpers/), as a device gets them.
    public static let bundledScripts = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../VenueHelpers").standardized.path

    /// A helper that claims no network: the daemon follows a network's link and probes
    /// with no script's login in the way.
    public static let helperClaimingNothing = """
        return {
          name = "Quick",
          hosts = {},
          evaluate = function(cmd) return "none" end,
        }
        """
}

/// A simulated venue on loopback for the daemon: the portal simulator's scenario with its
/// resolver, a scripts directory holding one bundled helper, a state directory.
public struct SimulatedVenue: Sendable {
    public let portal: SimulatedPortal
    public let scripts: String
    public let state: String
    public let ssid: String

    public init(_ scenario: Scenario, script: String, ssid: String, portalHost: String,
                settings: ScenarioSettings = ScenarioSettings()) async throws {
        var settings = settings
        settings.portalHost = portalHost
        portal = try await SimulatedPortal.start(scenario, settings: settings, dnsPort: 0)
        scripts = try CLI.temporaryDirectory()
        try FileManager.default.copyItem(atPath: CLI.bundledScripts + "/" + script, toPath: scripts + "/" + script)
        state = try CLI.temporaryDirectory()
        self.ssid = ssid
    }

    /// `run --json` following the venue's network on loopback, its names resolved by the
    /// simulator, its probe the simulator's.
    public func arguments(_ extra: [String] = []) -> [String] {
        ["run", "--json", "--scripts", scripts, "--source", "interface:lo:\(ssid)", "--state-dir", state,
         "--resolver", "127.0.0.1:\(portal.dns!.port)",
         "--probe-url", "http://connectivitycheck.test.example:\(portal.port)/generate_204"] + extra
    }

    /// A command to the daemon of this venue's state directory (`status`, `ui`...), run to its end.
    public func control(_ arguments: [String]) async throws -> CLI.Run {
        try await CLI.run(arguments + ["--state-dir", state])
    }
}

extension EventLine {
    /// Matches the daemon's move of `network` to the state `to`.
    public static func isState(_ to: String, _ network: String = "Aroma-Guest") -> @Sendable (EventLine) -> Bool {
        { $0.event == "state" && $0.to == to && $0.network == network }
    }

    /// Matches a `command` that ended with `result`.
    public static func isCommand(_ command: String, _ result: String = "success") -> @Sendable (EventLine) -> Bool {
        { $0.event == "command" && $0.command == command && $0.result == result }
    }
}

/// The status a `dev` or `simulate` portal's probe at `url` answers (connectivitycheck.dev.example
/// resolved to loopback), asked with curl outside any browser or daemon, so neither records it.
public func probeStatus(_ url: String) throws -> Int {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
    process.arguments = ["-s", "-o", "/dev/null", "-w", "%{http_code}", "--resolve", "connectivitycheck.dev.example:\(URL(string: url)!.port!):127.0.0.1", url]
    let pipe = Pipe()
    process.standardOutput = pipe
    try process.run()
    process.waitUntilExit()
    return Int(String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)) ?? 0
}
