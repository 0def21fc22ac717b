import HotspotControl
import HTTPServing

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
    private let server: RunningHTTPServer
    private let relay: EventRelay
    private let notifying: Task<Void, Never>?

    public struct StartError: Error, CustomStringConvertible {
        public let description: String
    }

    /// The hosts it may listen on: loopback only.
    public static let loopbackHosts: Set<String> = ["127.0.0.1", "::1", "localhost"]

    /// Starts serving on `host`:`port` (0 picks a free port), for the daemon whose control
    /// socket is at `controlSocket`, and returns once it listens. With `open`, a network
    /// that starts waiting for a person is shown on their desktop, when there is one, and
    /// clicking the notice calls `open` with the page's address.
    public static func start(controlSocket: String, host: String = "127.0.0.1", port: Int = 0,
                             open: (@Sendable (String) -> Void)? = nil) async throws -> PersonPage {
        guard loopbackHosts.contains(host) else {
            throw StartError(description: "the page listens on loopback only (127.0.0.1, ::1 or localhost), not \(host)")
        }
        let relay = EventRelay(controlSocket: controlSocket)
        let session = PageSession()
        let daemon = DaemonLink(controlSocket: controlSocket)
        let responder = PersonPageResponder(session: session, daemon: daemon, relay: relay)
        // The event streams never end by themselves: cancelled at a stop rather than waited for.
        // Any local user can connect: half-sent requests must not lock the person out.
        let server = try await RunningHTTPServer.start(responder, host: host, port: port, shutdownGrace: .seconds(1),
                                                       limits: ConnectionLimits())
        session.port = server.port
        let authority = host.contains(":") ? "[\(host)]:\(server.port)" : "\(host):\(server.port)"
        let url = "http://\(authority)/?token=\(session.token)"
        var notifying: Task<Void, Never>?
        if let open, let notifications = WaitingNotifications(open: { open(url) }) {
            // Every event may start or end a wait; the first comes when the relay connects.
            let events = relay.subscribe(keepAlive: .seconds(3600))
            notifying = Task {
                for await line in events where !line.isEmpty {
                    if let status = await daemon.send(ControlRequest(command: .status)).status { await notifications.update(status) }
                }
                await notifications.stop()
            }
        }
        relay.start()
        return PersonPage(url: url, server: server, relay: relay, notifying: notifying)
    }

    private init(url: String, server: RunningHTTPServer, relay: EventRelay, notifying: Task<Void, Never>?) {
        self.url = url
        self.port = server.port
        self.server = server
        self.relay = relay
        self.notifying = notifying
    }

    /// Runs until the server ends (after `stop`).
    public func wait() async throws {
        try await server.wait()
    }

    public func stop() async {
        relay.stop()  // ends the notices' events too
        await notifying?.value
        await server.stop()
    }
}
