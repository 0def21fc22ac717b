import Hummingbird

/// `meraki` and `meraki-signon`: Cisco Meraki's splash pages as its external captive portal
/// (EXCAP, "Captive Portal API") documentation has them (developer.cisco.com/meraki/captive-portal-api,
/// its click-through and sign-on pages, and Meraki's own samples: meraki/js-splash, dexterlabora/excap).
///
/// Click-through: a captive request is sent (302) to the splash page with `base_grant_url`,
/// `user_continue_url`, `node_id`, `node_mac`, `gateway_id`, `client_ip` and `client_mac` in
/// the query. The page's button only runs a script; what lets the device in is a GET of
/// `base_grant_url?continue_url=URL` (with an optional `duration` in seconds), which answers
/// 302 to `continue_url`.
///
/// Sign-on: the splash page gets `login_url`, `continue_url`, `ap_mac`, `ap_name`, `ap_tags`,
/// `client_mac` and `client_ip`; its form POSTs `username`, `password` and `success_url` to
/// `login_url` (Meraki's, with its `mauth` token). Good credentials answer 302 to
/// `success_url?logout_url=...`, bad ones the splash again; a GET of `logout_url` ends the
/// session and sends the device on to `continue_url`.
struct MerakiPortal: PortalBehavior {
    static let splash = "/splash/"
    static let grant = "/splash/grant"
    static let signOn = "/splash/signon/"
    static let login = "/splash/login"
    static let success = "/splash/success"
    static let logout = "/splash/logout"

    let state: PortalState
    let settings: ScenarioSettings
    let signsOn: Bool

    func loginURL(for request: PortalRequest) -> String {
        let clientMAC = CoovaChilliPortal.mac(of: request.client).replacingDashes
        guard signsOn else {
            return request.url(Self.splash + "?" + FormEncoding.encode([
                ("base_grant_url", request.url(Self.grant)), ("user_continue_url", request.url(request.path)),
                ("node_id", "149624921787028"), ("node_mac", "88:15:44:50:0a:94"), ("gateway_id", "149624921787028"),
                ("client_ip", request.client), ("client_mac", clientMAC),
            ]))
        }
        let continueURL = request.url(request.path)
        return request.url(Self.signOn + "?" + FormEncoding.encode([
            ("login_url", request.url(Self.login + "?" + FormEncoding.encode([("mauth", "MMk3Xqv0bL"), ("continue_url", continueURL)]))),
            ("continue_url", continueURL), ("ap_mac", "88:15:44:50:0a:94"), ("ap_name", "Lobby-MR36"), ("ap_tags", "lobby guest"),
            ("client_mac", clientMAC), ("client_ip", request.client),
        ]))
    }

    func respond(to request: PortalRequest) -> Response? {
        if signsOn { return respondSigningOn(to: request) }
        guard request.isGet else { return nil }
        switch request.path {
        case Self.splash:
            return .html(Pages.page(title: "\(settings.venueName) guest Wi-Fi", body: """
                <p>Welcome to \(Pages.escape(settings.venueName)). By continuing you accept the acceptable use policy.</p>
                <button type="button" id="continue">Continue to the Internet</button>
                <script>
                document.getElementById("continue").onclick = function () {
                  var query = new URLSearchParams(window.location.search);
                  window.location = query.get("base_grant_url") + "?continue_url=" + encodeURIComponent(query.get("user_continue_url"));
                };
                </script>
                """))
        case Self.grant:
            guard let destination = request.query["continue_url"], !destination.isEmpty else {
                return .html(Pages.page(title: "Bad request", body: "<p>continue_url is required.</p>"), status: .badRequest)
            }
            let length = request.query["duration"].flatMap(Int.init).map { Duration.seconds($0) } ?? settings.sessionLength
            state.withClient(request.client) { $0.logIn(for: length, at: request.now) }
            return .redirection(to: destination)
        default:
            return nil
        }
    }

    private func respondSigningOn(to request: PortalRequest) -> Response? {
        switch (request.path, request.isGet) {
        case (Self.signOn, true):
            return .html(signOnPage(request, loginURL: request.query["login_url"] ?? "", error: nil))
        case (Self.login, false) where request.isPost:
            guard request.query["mauth"] != nil, let success = request.form["success_url"], !success.isEmpty else {
                return .html(Pages.page(title: "Bad request", body: "<p>success_url is required.</p>"), status: .badRequest)
            }
            guard request.form["username"] == settings.username, request.form["password"] == settings.password else {
                return .html(signOnPage(request, loginURL: request.url(Self.login + "?" + request.rawQuery), error: "Login failed: wrong username or password."))
            }
            let session = randomToken()
            state.withClient(request.client) { client in
                client.logIn(for: settings.sessionLength, at: request.now)
                client.session = session
            }
            let logout = request.url(Self.logout + "?" + FormEncoding.encode([("key", session), ("continue_url", request.query["continue_url"] ?? "")]))
            return .redirection(to: success + (success.contains("?") ? "&" : "?") + FormEncoding.encode([("logout_url", logout)]))
        case (Self.success, true):
            let logout = request.query["logout_url"] ?? ""
            return .html(Pages.page(title: "\(settings.venueName) guest Wi-Fi", body: """
                <p id="connected">You are signed on.</p>
                <p><a href="\(Pages.escape(logout))">Sign out</a></p>
                """))
        case (Self.logout, true):
            state.withClient(request.client) { client in
                if client.session != nil, client.session == request.query["key"] { client.login = .none }
            }
            guard let destination = request.query["continue_url"], !destination.isEmpty else {
                return .html(Pages.page(title: "Signed out", body: "<p id=\"logged-out\">You are signed out.</p>"))
            }
            return .redirection(to: destination)
        default:
            return nil
        }
    }

    /// The operator's sign-on page, as the EXCAP samples build it: a form to `login_url` with
    /// the splash server's own `success_url`.
    private func signOnPage(_ request: PortalRequest, loginURL: String, error: String?) -> String {
        Pages.page(title: "\(settings.venueName) guest Wi-Fi", error: error, body: """
            <form method="post" action="\(Pages.escape(loginURL))">
            <input type="hidden" name="success_url" value="\(Pages.escape(request.url(Self.success)))">
            <p><label>Username <input type="text" name="username"></label></p>
            <p><label>Password <input type="password" name="password"></label></p>
            <p><input type="submit" value="Sign on"></p>
            </form>
            """)
    }
}

extension String {
    /// A MAC address as Meraki writes it: lower case, colons.
    var replacingDashes: String { lowercased().split(separator: "-").joined(separator: ":") }
}
