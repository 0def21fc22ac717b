import Hummingbird
import HotspotSystem
import Logging
import NIOCore
import ServiceLifecycle

/// The page a person opens to see and answer the daemon (`hotspot-helper web`): a small web
/// server on loopback, run as that person, that talks to the daemon over its control socket.
/// It is a process of its own, so the daemon's executable and memory stay as they are.
///
/// Every request must carry the session's token (in the address printed, then as a cookie);
/// its Host must be the loopback address it listens on (no DNS rebinding); a request that
/// changes something must come from the page itself (same Origin) with the page's CSRF token.
/// The page builds its view with `textContent` only, so nothing a helper or a portal says is
/// ever taken for markup.
public final class PersonPage: Sendable {
    /// The address to open, with the session's token.
    public let url: String
    public let port: Int
    private let serviceGroup: ServiceGroup
    private let server: Task<Void, any Error>
    private let relay: EventRelay

    public struct StartError: Error, CustomStringConvertible {
        public let description: String
    }

    /// The hosts it may listen on: loopback only.
    public static let loopbackHosts: Set<String> = ["127.0.0.1", "::1", "localhost"]

    /// Starts serving on `host`:`port` (0 picks a free port), for the daemon whose control
    /// socket is at `controlSocket`, and returns once it listens.
    public static func start(controlSocket: String, host: String = "127.0.0.1", port: Int = 0) async throws -> PersonPage {
        guard loopbackHosts.contains(host) else {
            throw StartError(description: "the page listens on loopback only (127.0.0.1, ::1 or localhost), not \(host)")
        }
        let logger = Logger(label: "PersonPage") { _ in SwiftLogNoOpLogHandler() }
        let relay = EventRelay(controlSocket: controlSocket)
        let session = PageSession()
        let (listeningPorts, listening) = AsyncStream.makeStream(of: Int.self)
        let responder = PersonPageResponder(session: session, controlSocket: controlSocket, relay: relay)
        let application = Application(
            responder: responder, configuration: .init(address: .hostname(host, port: port)),
            onServerRunning: { channel in
                listening.yield(channel.localAddress?.port ?? port)
                listening.finish()
            },
            logger: logger)
        var configuration = ServiceGroupConfiguration(services: [application], logger: logger)
        // The event streams never end by themselves: cancelled rather than waited for.
        configuration.maximumGracefulShutdownDuration = .seconds(1)
        let serviceGroup = ServiceGroup(configuration: configuration)
        let server = Task {
            defer { listening.finish() }
            try await serviceGroup.run()
        }
        guard let actualPort = await listeningPorts.first(where: { _ in true }) else {
            try await server.value
            throw StartError(description: "the server ended before it listened")
        }
        session.port = actualPort
        relay.start()
        let authority = host.contains(":") ? "[\(host)]:\(actualPort)" : "\(host):\(actualPort)"
        return PersonPage(url: "http://\(authority)/?token=\(session.token)", port: actualPort, serviceGroup: serviceGroup,
                          server: server, relay: relay)
    }

    private init(url: String, port: Int, serviceGroup: ServiceGroup, server: Task<Void, any Error>, relay: EventRelay) {
        self.url = url
        self.port = port
        self.serviceGroup = serviceGroup
        self.server = server
        self.relay = relay
    }

    /// Runs until the server ends (a signal's graceful shutdown).
    public func wait() async throws {
        try await server.value
    }

    public func stop() async {
        relay.stop()
        await serviceGroup.triggerGracefulShutdown()
        _ = await server.result
    }
}
