public import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle

/// A Hummingbird responder serving on one address until stopped: what the portal simulator
/// and the person's page share.
public final class RunningHTTPServer: Sendable {
    /// The port it listens on (the one picked, when started with port 0).
    public let port: Int
    private let serviceGroup: ServiceGroup
    private let server: Task<Void, any Error>

    public struct StartError: Error, CustomStringConvertible {
        public let description: String
    }

    /// Serves `responder` on `host`:`port` (0 picks a free port), and returns once it listens.
    /// At `stop`, connections still busy after `shutdownGrace` are cancelled rather than
    /// waited for (endless responses: a portal's, a page's event stream). With `limits`,
    /// clients that connect and stall cannot lock others out (`ConnectionLimits`).
    public static func start<Responder: HTTPResponder>(_ responder: Responder, host: String, port: Int,
                                                       shutdownGrace: Duration, limits: ConnectionLimits? = nil)
        async throws -> RunningHTTPServer
    where Responder.Context: InitializableFromSource<ApplicationRequestContextSource> {
        let logger = Logger(label: "RunningHTTPServer") { _ in SwiftLogNoOpLogHandler() }
        let (listeningPorts, listening) = AsyncStream.makeStream(of: Int.self)
        let ledger = limits.map(ConnectionLedger.init)
        // Hummingbird's idle timeout counts from the last request part read, not byte: it is
        // the time to send a request's head too.
        let idleTimeout = limits.map { limits in
            let (seconds, attoseconds) = limits.idleTimeout.components
            return TimeAmount.nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
        }
        let application = Application(
            responder: responder,
            server: .http1(configuration: .init(additionalChannelHandlers: ledger.map { [ConnectionLimitHandler($0)] } ?? [],
                                                idleTimeout: idleTimeout)),
            configuration: .init(address: .hostname(host, port: port)),
            onServerRunning: { channel in
                listening.yield(channel.localAddress?.port ?? port)
                listening.finish()
            },
            logger: logger)
        var configuration = ServiceGroupConfiguration(services: [application], logger: logger)
        configuration.maximumGracefulShutdownDuration = shutdownGrace
        let serviceGroup = ServiceGroup(configuration: configuration)
        let server = Task {
            defer { listening.finish() }
            try await serviceGroup.run()
        }
        guard let actualPort = await listeningPorts.first(where: { _ in true }) else {
            try await server.value
            throw StartError(description: "the HTTP server ended before it listened")
        }
        return RunningHTTPServer(port: actualPort, serviceGroup: serviceGroup, server: server)
    }

    private init(port: Int, serviceGroup: ServiceGroup, server: Task<Void, any Error>) {
        self.port = port
        self.serviceGroup = serviceGroup
        self.server = server
    }

    /// Returns when the server has ended.
    public func wait() async throws {
        try await server.value
    }

    /// Stops serving (open connections close, busy ones after the grace) and returns once it
    /// has. Stopping twice is harmless.
    public func stop() async {
        await serviceGroup.triggerGracefulShutdown()
        _ = await server.result
    }
}
