public import HotspotCore
import HTTPServing
public import PortalRecording

/// Why the simulator could not start.
public enum SimulatorError: Error, CustomStringConvertible {
    case notAnIPv4Address(String)
    /// The HTTP server ended before it listened, without saying why.
    case serverEndedBeforeListening

    public var description: String {
        switch self {
        case .notAnIPv4Address(let text): "\"\(text)\" is not an IPv4 address"
        case .serverEndedBeforeListening: "the HTTP server ended before it listened"
        }
    }
}

/// One scenario served on a real HTTP server, with its own sessions, and optionally its DNS
/// hijack. Several run side by side in one process, each on its own port.
///
/// ```swift
/// let portal = try await SimulatedPortal.start(.credentials, port: 0, dnsPort: 0)
/// // a script fetches http://portal.aroma.example:\(portal.port)/generate_204,
/// // resolving the name through 127.0.0.1:\(portal.dns!.port)
/// await portal.stop()
/// ```
public final class SimulatedPortal: Sendable {
    public let scenario: Scenario
    public let settings: ScenarioSettings
    /// The address the HTTP server listens on.
    public let host: String
    /// The HTTP port it listens on (the one picked, when started with port 0).
    public let port: Int
    /// The scenario's DNS hijack, when one was asked for.
    public let dns: DNSResponder?

    private let state: PortalState
    private let server: RunningHTTPServer

    /// The portal's root URL, such as `http://127.0.0.1:8080/`.
    public var url: String {
        "http://\(host.contains(":") ? "[\(host)]" : host):\(port)/"
    }

    private init(scenario: Scenario, settings: ScenarioSettings, host: String, dns: DNSResponder?, state: PortalState,
                 server: RunningHTTPServer) {
        self.scenario = scenario
        self.settings = settings
        self.host = host
        self.port = server.port
        self.dns = dns
        self.state = state
        self.server = server
    }

    /// Starts serving `scenario` on `host`:`port`, and returns once it listens.
    /// - Parameters:
    ///   - port: The HTTP port; 0 picks a free one.
    ///   - dnsPort: Starts a `DNSResponder` on `host` at this UDP port (0 picks one); nil for none.
    ///   - dnsAnswer: The address the DNS responder answers; by default `host` when it is an
    ///     IPv4 address other than 0.0.0.0, otherwise 127.0.0.1.
    ///   - requestLog: Called with one line per request: scenario, client, method, path, status.
    ///   - clock: What sessions, retry intervals and pending logins are timed by: the system's, or
    ///     one a test moves (`TestClock`), so a session runs out without waiting for it.
    public static func start(
        _ scenario: Scenario, host: String = "127.0.0.1", port: Int = 0, settings: ScenarioSettings = .init(),
        dnsPort: Int? = nil, dnsAnswer: String? = nil, requestLog: (@Sendable (String) -> Void)? = nil,
        clock: any HotspotClock = SystemClock()
    ) async throws -> SimulatedPortal {
        let state = PortalState()
        return try await start(scenario, behavior: behavior(of: scenario, state: state, settings: settings), state: state, host: host, port: port,
                               settings: settings, dnsPort: dnsPort, dnsAnswer: dnsAnswer, requestLog: requestLog, clock: clock)
    }

    /// Starts replaying the recorded `login` (`simulate --har`), as `start` starts a scenario;
    /// the request log also says which steps it accepted and what differed in those it refused.
    public static func start(
        replaying login: PortalLogin, host: String = "127.0.0.1", port: Int = 0, settings: ScenarioSettings = .init(),
        dnsPort: Int? = nil, requestLog: (@Sendable (String) -> Void)? = nil, clock: any HotspotClock = SystemClock()
    ) async throws -> SimulatedPortal {
        let state = PortalState()
        let scenario = Scenario.recorded(login)
        return try await start(scenario, behavior: RecordedPortal(login: login, state: state, log: requestLog), state: state, host: host,
                               port: port, settings: settings, dnsPort: dnsPort, dnsAnswer: nil, requestLog: requestLog, clock: clock)
    }

    private static func start(
        _ scenario: Scenario, behavior: any PortalBehavior, state: PortalState, host: String, port: Int, settings: ScenarioSettings,
        dnsPort: Int?, dnsAnswer: String?, requestLog: (@Sendable (String) -> Void)?, clock: any HotspotClock
    ) async throws -> SimulatedPortal {
        let responder = PortalResponder(
            scenarioName: scenario.name, behavior: behavior, state: state,
            latency: settings.latency(for: scenario.kind), portalHost: settings.portalHost, clock: clock, requestLog: requestLog)
        // Connections still busy at a stop after this are cancelled rather than waited for.
        let server: RunningHTTPServer
        do {
            server = try await RunningHTTPServer.start(responder, host: host, port: port, shutdownGrace: .seconds(2))
        } catch is RunningHTTPServer.StartError {
            throw SimulatorError.serverEndedBeforeListening
        }
        var dns: DNSResponder?
        do {
            if let dnsPort { dns = try await DNSResponder.start(host: host, port: dnsPort, answer: dnsAnswer) }
        } catch {
            await server.stop()
            throw error
        }
        return SimulatedPortal(scenario: scenario, settings: settings, host: host, dns: dns, state: state, server: server)
    }

    /// Forgets every client (logins, sessions, refused attempts), so the next client starts
    /// from the beginning of the scenario; `hotspot-helper dev` does this before every run.
    public func reset() {
        state.forgetClients()
    }

    /// Runs `body` against a freshly started portal on any free port, and stops the portal
    /// whatever happens.
    public static func running(_ scenario: Scenario, settings: ScenarioSettings = .init(), dnsPort: Int? = nil,
                               clock: any HotspotClock = SystemClock(), _ body: (SimulatedPortal) async throws -> Void) async throws {
        let portal = try await start(scenario, settings: settings, dnsPort: dnsPort, clock: clock)
        do {
            try await body(portal)
        } catch {
            await portal.stop()
            throw error
        }
        await portal.stop()
    }

    /// Stops the HTTP server (endless responses end, open connections close) and the DNS
    /// responder, and returns once both have. Stopping twice is harmless.
    public func stop() async {
        state.beginStopping()
        await server.stop()
        await dns?.stop()
    }

    private static func behavior(of scenario: Scenario, state: PortalState, settings: ScenarioSettings) -> any PortalBehavior {
        let sessionLength = settings.sessionLength(for: scenario.kind)
        func clickThrough(_ gate: ClickThroughPortal.Gate) -> ClickThroughPortal {
            ClickThroughPortal(state: state, venue: settings.venueName, gate: gate, sessionLength: sessionLength,
                               declineButton: settings.termsDeclineButton)
        }
        switch scenario.kind {
        case .clickThrough, .sessionExpiry, .slow: return clickThrough(.none)
        case .flaky: return clickThrough(.flaky(count: settings.failingLogins))
        case .rateLimited: return clickThrough(.rateLimited(interval: settings.minimumLoginInterval))
        case .credentials: return CredentialsPortal(state: state, settings: settings)
        case .email: return EmailPortal(state: state, settings: settings)
        case .redirectChain: return RedirectChainPortal(state: state, settings: settings)
        case .wispr: return WISPrPortal(state: state, settings: settings)
        case .capport:
            return CaptivePortalAPIPortal(state: state, venue: settings.venueName, sessionLength: sessionLength,
                                          canExtendSession: settings.capportCanExtendSession)
        case .opennds: return OpenNDSPortal(state: state, venue: settings.venueName)
        case .coovachilli: return CoovaChilliPortal(state: state, settings: settings)
        case .pfsense: return PfSensePortal(state: state, settings: settings)
        case .opnsense: return OPNsensePortal(state: state, settings: settings)
        case .mikrotik: return MikroTikPortal(state: state, settings: settings)
        case .meraki: return MerakiPortal(state: state, settings: settings, signsOn: false)
        case .merakiSignOn: return MerakiPortal(state: state, settings: settings, signsOn: true)
        case .unifi: return UniFiPortal(state: state, settings: settings)
        case .ciscoWLC: return CiscoWLCPortal(state: state, settings: settings)
        case .aruba: return ArubaPortal(state: state, settings: settings)
        case .hostile: return HostilePortal(state: state, settings: settings)
        // Started by `start(replaying:)`, which makes its behavior from the recording.
        case .recorded: preconditionFailure("a recorded login is replayed with start(replaying:)")
        }
    }
}
