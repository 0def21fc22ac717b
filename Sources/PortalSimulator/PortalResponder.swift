import HotspotCore
import Hummingbird
import NIOCore

/// What a scenario adds to the parts every portal shares (probes, `/logout`, latency).
protocol PortalBehavior: Sendable {
    /// Where a captive client is sent: by its probe, and by any path the scenario does not serve.
    func loginURL(for request: PortalRequest) -> String
    /// The answer to a captive client's probe.
    func captiveProbe(_ request: PortalRequest) -> Response
    /// The answer to one of the scenario's own paths, nil for any other request.
    func respond(to request: PortalRequest) -> Response?
}

extension PortalBehavior {
    func captiveProbe(_ request: PortalRequest) -> Response {
        .redirection(to: loginURL(for: request))
    }
}

/// One request as the scenarios see it: parsed, with its client and its arrival time.
struct PortalRequest: Sendable {
    let method: HTTPRequest.Method
    let path: String
    let query: [String: String]
    /// The query as sent, for a portal that reads its fields in order.
    let rawQuery: String
    /// The urlencoded body's fields.
    let form: [String: String]
    /// The body as sent, for a portal whose pages' scripts post JSON.
    let body: String
    let cookies: Cookies
    /// The Host header, port included. Absolute URLs are built from it, because scripts reach
    /// the simulator by names that the DNS responder resolves.
    var authority: String
    /// The client's IP address, which keys its session.
    let client: String
    /// When it came, on the portal's clock.
    let now: Duration

    var isGet: Bool { method == .get || method == .head }
    var isPost: Bool { method == .post }

    /// The same request as if it had come to `host`, on the same port.
    func movedTo(host: String) -> PortalRequest {
        var moved = self
        var port = authority.lastIndex(of: ":").map { authority[$0...] } ?? ""
        if !port.dropFirst().allSatisfy(\.isNumber) { port = "" }
        moved.authority = host + port
        return moved
    }

    /// An absolute URL of `path` (which may carry a query) on the host the request came to.
    func url(_ path: String) -> String {
        "http://\(authority)\(path)"
    }
}

/// The request context: both ends of the connection.
struct PortalRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    /// The client's IP address.
    let client: String
    /// The address and port the connection came to, for a request without a Host header.
    let localAuthority: String

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        client = source.channel.remoteAddress?.ipAddress ?? "unknown"
        let local = source.channel.localAddress
        let address = local?.ipAddress ?? "localhost"
        localAuthority = (address.contains(":") ? "[\(address)]" : address) + ":\(local?.port ?? 80)"
    }
}

/// Serves one scenario: the shared paths first, then the scenario's own.
struct PortalResponder: HTTPResponder {
    static let maximumBodySize = 64 * 1024

    let scenarioName: String
    let behavior: any PortalBehavior
    let state: PortalState
    let latency: Duration
    let portalHost: String?
    let clock: any HotspotClock
    let requestLog: (@Sendable (String) -> Void)?

    func respond(to request: Request, context: PortalRequestContext) async throws -> Response {
        if latency > .zero { try await Task.sleep(for: latency) }
        var request = request
        let response: Response
        if let body = try? await request.collectBody(upTo: Self.maximumBodySize) {
            let uri = request.uri
            response = route(PortalRequest(
                method: request.method, path: uri.path, query: FormEncoding.decode(uri.query ?? ""), rawQuery: uri.query ?? "",
                form: FormEncoding.decode(String(buffer: body)), body: String(buffer: body), cookies: request.cookies,
                authority: request.head.authority ?? context.localAuthority, client: context.client,
                now: clock.now))
        } else {
            response = .html(Pages.page(title: "Too large", body: "<p>The request body is too large.</p>"), status: .contentTooLarge)
        }
        requestLog?("\(scenarioName): \(context.client) \(request.method) \(request.uri) -> \(response.status.code)")
        return request.method == .head ? response.createHeadResponse() : response
    }

    private func route(_ request: PortalRequest) -> Response {
        let isAppleProbe = request.path == "/hotspot-detect.html"
        if isAppleProbe || request.path.hasSuffix("generate_204") {
            guard state.isLoggedIn(request.client, at: request.now) else {
                return behavior.captiveProbe(portalHost.map(request.movedTo(host:)) ?? request)
            }
            return isAppleProbe ? .html(Pages.appleSuccess) : Response(status: .noContent)
        }
        if request.path == "/logout", request.isGet || request.isPost {
            state.logOut(request.client)
            return .html(Pages.page(title: "Logged out", body: "<p id=\"logged-out\">You are logged out.</p>"))
        }
        if let response = behavior.respond(to: request) { return response }
        if state.isLoggedIn(request.client, at: request.now) {
            return .html(Pages.page(title: "Not found", body: "<p>Nothing here.</p>"), status: .notFound)
        }
        return .redirection(to: behavior.loginURL(for: request))
    }
}
