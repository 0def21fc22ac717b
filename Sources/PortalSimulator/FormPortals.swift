import Hummingbird

/// `click-through`, `session-expiry`, `flaky`, `slow` and `rate-limited`: a terms form at
/// `/login`, and what stands between posting it and being logged in.
struct ClickThroughPortal: PortalBehavior {
    enum Gate {
        case none
        /// Refuses each client's first `count` logins with 503.
        case flaky(count: Int)
        /// Refuses with 429 a login sooner than `interval` after the client's previous
        /// attempt, and the client's first attempt.
        case rateLimited(interval: Duration)
    }

    let state: PortalState
    let venue: String
    let gate: Gate
    let sessionLength: Duration?
    let declineButton: Bool

    func loginURL(for request: PortalRequest) -> String { request.url("/login") }

    func respond(to request: PortalRequest) -> Response? {
        guard request.path == "/login" else { return nil }
        if request.isGet { return .html(Pages.termsForm(venue: venue, action: "/login", declineButton: declineButton)) }
        guard request.isPost else { return nil }
        if let refusal = gateRefusal(request) { return refusal }
        guard Pages.acceptsTerms(request.form) else {
            return .html(
                Pages.termsForm(venue: venue, action: "/login", error: "Please accept the terms of use.", declineButton: declineButton),
                status: .badRequest)
        }
        state.withClient(request.client) { $0.logIn(for: sessionLength, at: request.now) }
        return .html(Pages.connected(venue: venue, sessionLength: sessionLength))
    }

    private func gateRefusal(_ request: PortalRequest) -> Response? {
        switch gate {
        case .none:
            return nil
        case .flaky(let count):
            let refuse = state.withClient(request.client) { client in
                guard client.refusedLogins < count else { return false }
                client.refusedLogins += 1
                return true
            }
            guard refuse else { return nil }
            return .html(
                Pages.page(title: "Service unavailable", body: "<p>The login service is busy. Please try again.</p>"),
                status: .serviceUnavailable)
        case .rateLimited(let interval):
            let tooSoon = state.withClient(request.client) { client in
                defer { client.previousLoginAttempt = request.now }
                guard let previous = client.previousLoginAttempt else { return true }
                return request.now - previous < interval
            }
            guard tooSoon else { return nil }
            let seconds = max(1, Int((interval / .seconds(1)).rounded(.up)))
            return .html(
                Pages.page(title: "Too many requests", body: "<p>Please wait \(seconds) s before trying again.</p>"),
                status: .tooManyRequests, headers: [.retryAfter: String(seconds)])
        }
    }
}

/// `credentials`: a username and password form whose login page sets a session cookie and a
/// CSRF field; a login needs all four.
struct CredentialsPortal: PortalBehavior {
    static let cookieName = "portal_session"

    let state: PortalState
    let settings: ScenarioSettings

    func loginURL(for request: PortalRequest) -> String { request.url("/login") }

    func respond(to request: PortalRequest) -> Response? {
        guard request.path == "/login" else { return nil }
        if request.isGet { return form(for: request) }
        guard request.isPost else { return nil }
        guard let cookie = request.cookies[Self.cookieName]?.value, let token = state.csrfToken(forCookie: cookie),
            request.form["csrf_token"] == token
        else {
            return form(for: request, error: "Your session has expired. Please try again.", status: .forbidden)
        }
        guard request.form["username"] == settings.username, request.form["password"] == settings.password else {
            return form(for: request, error: "Wrong username or password.", status: .unauthorized)
        }
        state.withClient(request.client) { $0.logIn(for: settings.sessionLength, at: request.now) }
        return .html(Pages.connected(venue: settings.venueName, sessionLength: settings.sessionLength))
    }

    /// The form, with the request's session when it has a known one, otherwise with a new one.
    private func form(for request: PortalRequest, error: String? = nil, status: HTTPResponse.Status = .ok) -> Response {
        var headers: HTTPFields = [:]
        let cookie: String, token: String
        if let known = request.cookies[Self.cookieName]?.value, let knownToken = state.csrfToken(forCookie: known) {
            (cookie, token) = (known, knownToken)
        } else {
            (cookie, token) = (randomToken(), randomToken())
            state.setCSRFToken(token, forCookie: cookie)
            headers[.setCookie] = "\(Self.cookieName)=\(cookie); Path=/; HttpOnly"
        }
        let page = Pages.page(title: "\(settings.venueName) Wi-Fi", error: error, body: """
            <form method="post" action="/login">
            <input type="hidden" name="csrf_token" value="\(token)">
            <p><label>Username <input type="text" name="username" autocomplete="username"></label></p>
            <p><label>Password <input type="password" name="password" autocomplete="current-password"></label></p>
            <p><button type="submit">Log in</button></p>
            </form>
            """)
        return .html(page, status: status, headers: headers)
    }
}

/// `email`: an email address is the whole login.
struct EmailPortal: PortalBehavior {
    let state: PortalState
    let settings: ScenarioSettings

    func loginURL(for request: PortalRequest) -> String { request.url("/login") }

    func respond(to request: PortalRequest) -> Response? {
        guard request.path == "/login" else { return nil }
        if request.isGet { return .html(form()) }
        guard request.isPost else { return nil }
        guard let address = request.form["email"], Self.looksLikeEmail(address) else {
            return .html(form(error: "Please enter a valid email address."), status: .badRequest)
        }
        state.withClient(request.client) { $0.logIn(for: settings.sessionLength, at: request.now) }
        return .html(Pages.connected(venue: settings.venueName, sessionLength: settings.sessionLength))
    }

    /// One `@` between a non-empty local part and a dotted domain, printable ASCII, no spaces.
    static func looksLikeEmail(_ text: String) -> Bool {
        let parts = text.split(separator: "@", omittingEmptySubsequences: false)
        guard text.utf8.count <= 254, parts.count == 2, !parts[0].isEmpty,
            text.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F })
        else { return false }
        let labels = parts[1].split(separator: ".", omittingEmptySubsequences: false)
        return labels.count >= 2 && labels.allSatisfy { !$0.isEmpty }
    }

    private func form(error: String? = nil) -> String {
        Pages.page(title: "\(settings.venueName) Wi-Fi", error: error, body: """
            <form method="post" action="/login">
            <p><label>Your email address <input type="email" name="email" autocomplete="email"></label></p>
            <p><button type="submit">Connect</button></p>
            </form>
            """)
    }
}
