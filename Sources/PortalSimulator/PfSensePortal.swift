import Hummingbird

/// `pfsense`: pfSense's captive portal as its `index.php` answers and as its documentation's
/// portal page (the fields a custom page must send) has it. A captive request is sent (302) to
/// `/index.php?zone=ZONE&redirurl=URL` on the portal's port. The page's one POST form goes to
/// `$PORTAL_ACTION$` with `auth_user`, `auth_pass`, `auth_voucher`, hidden `redirurl` and
/// `zone`, and the submit button `accept`: a voucher logs in when one is sent, else the
/// username and password; a wrong zone, no `accept` or bad credentials get the page again with
/// "Invalid credentials specified.". With its logout window on, the page after a login has the
/// logout form: `logout_id` (the session) and `zone` posted back, which disconnects.
struct PfSensePortal: PortalBehavior {
    static let zone = "guests"
    static let path = "/index.php"

    let state: PortalState
    let settings: ScenarioSettings

    func loginURL(for request: PortalRequest) -> String {
        request.url(Self.path + "?" + FormEncoding.encode([("zone", Self.zone), ("redirurl", request.url(request.path))]))
    }

    func respond(to request: PortalRequest) -> Response? {
        guard request.path == Self.path else { return nil }
        // pfSense reads $_REQUEST: the zone may come in the query or the body.
        let zone = request.form["zone"] ?? request.query["zone"]
        let redirect = request.form["redirurl"] ?? request.query["redirurl"] ?? ""
        if request.isGet {
            return .html(loginPage(request, redirect: redirect, message: nil))
        }
        guard request.isPost else { return nil }
        guard zone == Self.zone else { return .html(loginPage(request, redirect: redirect, message: "Invalid credentials specified.")) }
        if let session = request.form["logout_id"] {
            state.withClient(request.client) { client in
                if client.session == session { client.login = .none }
            }
            return .html(Pages.page(title: "Disconnecting...", body: "<p id=\"logged-out\"><b>You have been disconnected.</b></p>"))
        }
        let voucher = request.form["auth_voucher"] ?? ""
        let accepted = request.form["accept"] != nil
            && (voucher.isEmpty
                ? request.form["auth_user"] == settings.username && request.form["auth_pass"] == settings.password
                : voucher.trimmingWhitespace == settings.voucher)
        guard accepted else { return .html(loginPage(request, redirect: redirect, message: "Invalid credentials specified.")) }
        let session = randomToken()
        state.withClient(request.client) { client in
            client.logIn(for: settings.sessionLength, at: request.now)
            client.session = session
        }
        return .html(Pages.page(title: "Redirecting...", body: """
            <p id="connected">You are connected. <a href="\(Pages.escape(redirect))">Continue</a></p>
            <form method="POST" action="\(Pages.escape(action(request)))">
            <input name="logout_id" type="hidden" value="\(session)">
            <input name="zone" type="hidden" value="\(Self.zone)">
            <input name="logout" type="submit" value="Logout">
            </form>
            """))
    }

    /// `$PORTAL_ACTION$`: where the page posts, the portal's own URL with the zone.
    private func action(_ request: PortalRequest) -> String {
        request.url(Self.path + "?zone=" + Self.zone)
    }

    private func loginPage(_ request: PortalRequest, redirect: String, message: String?) -> String {
        Pages.page(title: "\(settings.venueName) captive portal", error: message, body: """
            <form method="post" action="\(Pages.escape(action(request)))">
            <input name="auth_user" type="text" placeholder="Username">
            <input name="auth_pass" type="password" placeholder="Password">
            <input name="auth_voucher" type="text" placeholder="Voucher">
            <input name="redirurl" type="hidden" value="\(Pages.escape(redirect))">
            <input name="zone" type="hidden" value="\(Self.zone)">
            <input name="accept" type="submit" value="Continue">
            </form>
            """)
    }
}

private extension String {
    var trimmingWhitespace: String {
        String(drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
    }
}
