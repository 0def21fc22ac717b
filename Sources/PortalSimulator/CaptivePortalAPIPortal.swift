import Hummingbird
import JSON

/// `capport`: the RFC 8908 API at `/capport-api`, a click-through portal at `/portal` (its
/// user-portal-url), venue information at `/venue`. A login lasts the session length and a
/// login while logged in starts it afresh.
struct CaptivePortalAPIPortal: PortalBehavior {
    let state: PortalState
    let venue: String
    let sessionLength: Duration?
    let canExtendSession: Bool

    func loginURL(for request: PortalRequest) -> String { request.url("/portal") }

    func respond(to request: PortalRequest) -> Response? {
        switch request.path {
        case "/capport-api" where request.isGet:
            return api(request)
        case "/portal" where request.isGet:
            return .html(Pages.termsForm(venue: venue, action: "/portal"))
        case "/portal" where request.isPost:
            guard Pages.acceptsTerms(request.form) else {
                return .html(
                    Pages.termsForm(venue: venue, action: "/portal", error: "Please accept the terms of use."),
                    status: .badRequest)
            }
            state.withClient(request.client) { $0.logIn(for: sessionLength, at: request.now) }
            return .html(Pages.connected(venue: venue, sessionLength: sessionLength))
        case "/venue" where request.isGet:
            return .html(Pages.page(title: venue, body: "<p>Open 7:00 to 19:00. Ask at the counter for help.</p>"))
        default:
            return nil
        }
    }

    /// The API's JSON: seconds-remaining and can-extend-session only while not captive, since
    /// they describe the session (RFC 8908, section 5).
    private func api(_ request: PortalRequest) -> Response {
        let (loggedIn, remaining) = state.withClient(request.client) {
            ($0.isLoggedIn(at: request.now), $0.remaining(at: request.now))
        }
        var members: [(name: String, value: JSONValue)] = [
            ("captive", .boolean(!loggedIn)),
            // The URLs carry the client's Host header, which may hold anything: the writer escapes it.
            ("user-portal-url", .string(Array(request.url("/portal").utf8))),
            ("venue-info-url", .string(Array(request.url("/venue").utf8))),
        ]
        if let remaining {
            members.append(("seconds-remaining", .integer(remaining.components.seconds)))
        }
        if loggedIn {
            members.append(("can-extend-session", .boolean(canExtendSession)))
        }
        return Response(
            status: .ok, headers: [.contentType: "application/captive+json", .cacheControl: "private"],
            body: .init(byteBuffer: ByteBuffer(bytes: JSONValue(members: members).serialized(layout: .spaced))))
    }
}
