import Hummingbird

/// `redirect-chain`: the probe leads to an auth host, which leads to a login host, each hop
/// decided by the request's Host header:
///
///     any host      /generate_204  302 http://auth.DOMAIN:PORT/start      (absolute, other host)
///     auth.DOMAIN   /start         302 /authorize                          (relative)
///     auth.DOMAIN   /authorize     302 http://login.DOMAIN:PORT/login?ticket=T  (absolute, other host)
///     login.DOMAIN  GET /login     the form, carrying the ticket
///     login.DOMAIN  POST /login    303 /welcome                            (logged in)
///     login.DOMAIN  GET /welcome   the connected page
///
/// DOMAIN is the Host's name without its first label (`portal.aroma.example` gives
/// `aroma.example`), or `localhost` for an IP address or a one-label name.
struct RedirectChainPortal: PortalBehavior {
    let state: PortalState
    let settings: ScenarioSettings

    /// Which of the portal's hosts a request came to, and the domain they share.
    private struct Hosts {
        enum Role { case auth, login, other }

        let role: Role
        let domain: String
        /// `:PORT`, or empty when the Host header has none.
        let portSuffix: String

        init(authority: String) {
            let (name, port) = Self.split(authority)
            portSuffix = port.map { ":" + $0 } ?? ""
            let labels = name.lowercased().split(separator: ".", omittingEmptySubsequences: false)
            let isAddress = name.contains(":") || labels.allSatisfy { !$0.isEmpty && $0.allSatisfy(\.isNumber) }
            role = isAddress ? .other : labels.first == "auth" ? .auth : labels.first == "login" ? .login : .other
            if isAddress || labels.count < 2 {
                domain = "localhost"
            } else if role != .other || labels.count > 2 {
                domain = labels.dropFirst().joined(separator: ".")
            } else {
                domain = labels.joined(separator: ".")
            }
        }

        func url(_ host: String, _ path: String) -> String {
            "http://\(host).\(domain)\(portSuffix)\(path)"
        }

        /// The name and the port of an authority (`[v6]:port` included).
        private static func split(_ authority: String) -> (String, String?) {
            if authority.hasPrefix("["), let close = authority.firstIndex(of: "]") {
                let rest = authority[authority.index(after: close)...]
                return (String(authority[...close]), rest.hasPrefix(":") ? String(rest.dropFirst()) : nil)
            }
            guard let colon = authority.lastIndex(of: ":") else { return (authority, nil) }
            return (String(authority[..<colon]), String(authority[authority.index(after: colon)...]))
        }
    }

    func loginURL(for request: PortalRequest) -> String {
        Hosts(authority: request.authority).url("auth", "/start")
    }

    func respond(to request: PortalRequest) -> Response? {
        let hosts = Hosts(authority: request.authority)
        switch (hosts.role, request.path) {
        case (.auth, "/start") where request.isGet:
            return .redirection(to: "/authorize")
        case (.auth, "/authorize") where request.isGet:
            let ticket = randomToken()
            state.withClient(request.client) { $0.ticket = ticket }
            return .redirection(to: hosts.url("login", "/login?ticket=\(ticket)"))
        case (.login, "/login") where request.isGet:
            guard let ticket = request.query["ticket"], ticket == issuedTicket(request) else { return noTicket(hosts) }
            return .html(Pages.page(title: "\(settings.venueName) Wi-Fi", body: """
                <form method="post" action="/login">
                <input type="hidden" name="ticket" value="\(ticket)">
                <p><button type="submit" name="connect" value="1">Connect</button></p>
                </form>
                """))
        case (.login, "/login") where request.isPost:
            guard let ticket = request.form["ticket"], ticket == issuedTicket(request) else { return noTicket(hosts) }
            state.withClient(request.client) { client in
                client.ticket = nil
                client.logIn(for: settings.sessionLength, at: request.now)
            }
            return .redirection(to: "/welcome", status: .seeOther)
        case (.login, "/welcome"):
            guard request.isGet else {
                return .html(
                    Pages.page(title: "Method not allowed", body: "<p>A 303 is followed with GET.</p>"),
                    status: .methodNotAllowed, headers: [.allow: "GET"])
            }
            guard state.isLoggedIn(request.client, at: request.now) else { return nil }
            return .html(Pages.connected(venue: settings.venueName, sessionLength: settings.sessionLength))
        default:
            return nil
        }
    }

    private func issuedTicket(_ request: PortalRequest) -> String? {
        state.withClient(request.client) { $0.ticket }
    }

    private func noTicket(_ hosts: Hosts) -> Response {
        let start = hosts.url("auth", "/start")
        return .html(
            Pages.page(
                title: "Session not found",
                body: "<p>This login link is not valid. <a href=\"\(Pages.escape(start))\">Start again</a>.</p>"),
            status: .forbidden)
    }
}
