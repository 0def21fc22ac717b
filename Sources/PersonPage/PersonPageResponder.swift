import FoundationEssentials
import HTTPTypes
import Hummingbird
import HotspotControl
import NIOCore

/// Routes and checks every request (see `PersonPage`).
struct PersonPageResponder: HTTPResponder {
    typealias Context = BasicRequestContext

    let session: PageSession
    let daemon: DaemonLink
    let relay: EventRelay

    /// The commands the page may send: not `status` (it has its own route) nor `watch`.
    static let pageCommands: Set<ControlRequest.Command> = [.ui, .logoff, .join, .enable, .disable]
    static let maximumBodySize = 64 * 1024
    static let csrfHeader = HTTPField.Name("X-CSRF-Token")!
    /// How often an idle event stream says it is alive, so proxies and the page keep it.
    static let keepAliveInterval = Duration.seconds(15)

    func respond(to request: Request, context: Context) async throws -> Response {
        let authority = request.head.authority
        // A page reached through any other name could be a DNS-rebinding attacker's.
        guard session.admitsHost(authority) else {
            return .plain("This page answers only at its loopback address.", status: .misdirectedRequest)
        }
        let tokenInAddress = request.uri.queryParameters.get("token").map { String($0) }
        let admittedByAddress = PageSession.matches(tokenInAddress, session.token)
        guard admittedByAddress || PageSession.matches(request.cookies[PageSession.cookieName]?.value, session.token) else {
            return .plain("Open the address `hotspot-helper web` printed, with its token.", status: .forbidden)
        }
        switch (request.method, request.uri.path) {
        case (.get, "/"):
            var headers: HTTPFields = [:]
            if admittedByAddress {
                headers[.setCookie] = "\(PageSession.cookieName)=\(session.token); Path=/; HttpOnly; SameSite=Strict"
            }
            return .asset(PageAssets.page(csrfToken: session.csrfToken), type: "text/html; charset=utf-8", headers: headers)
        case (.get, "/app.js"):
            return .asset(PageAssets.script, type: "text/javascript; charset=utf-8")
        case (.get, "/style.css"):
            return .asset(PageAssets.style, type: "text/css; charset=utf-8")
        case (.get, "/api/status"):
            return .json(await daemon.send(ControlRequest(command: .status)))
        case (.get, "/api/events"):
            return events()
        case (.post, "/api/control"):
            guard session.isOwnOrigin(request.headers[.origin], authority: authority),
                  PageSession.matches(request.headers[Self.csrfHeader], session.csrfToken) else {
                return .plain("Changes are taken from this page only.", status: .forbidden)
            }
            var request = request
            let body = try await request.collectBody(upTo: Self.maximumBodySize)
            guard let asked = try? JSONDecoder().decode(ControlRequest.self, from: Data(buffer: body)),
                  Self.pageCommands.contains(asked.command) else {
                return .plain("Not a request the page sends.", status: .badRequest)
            }
            return .json(await daemon.send(asked))
        default:
            return .plain("Nothing here.", status: .notFound)
        }
    }

    /// Server-sent events: one `data:` line per daemon event, and a comment now and then.
    private func events() -> Response {
        let lines = relay.subscribe(keepAlive: Self.keepAliveInterval)
        var headers = PageAssets.securityHeaders
        headers[.contentType] = "text/event-stream"
        return Response(status: .ok, headers: headers, body: ResponseBody { writer in
            try await writer.write(ByteBuffer(string: ": connected\n\n"))
            // Ends when the page goes away: the next write fails.
            for await line in lines {
                try await writer.write(line.isEmpty ? ByteBuffer(string: ": alive\n\n")
                                                    : ByteBuffer(bytes: Array("data: ".utf8) + line + Array("\n\n".utf8)))
            }
            try await writer.finish(nil)
        })
    }
}

extension Response {
    static func plain(_ text: String, status: HTTPResponse.Status) -> Response {
        var headers = PageAssets.securityHeaders
        headers[.contentType] = "text/plain; charset=utf-8"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text + "\n")))
    }

    static func asset(_ text: String, type: String, headers extra: HTTPFields = [:]) -> Response {
        var headers = PageAssets.securityHeaders
        headers[.contentType] = type
        headers.append(contentsOf: extra)
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    static func json(_ reply: ControlReply) -> Response {
        var headers = PageAssets.securityHeaders
        headers[.contentType] = "application/json"
        let body = (try? JSONEncoder().encode(reply)) ?? Data()
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }
}
