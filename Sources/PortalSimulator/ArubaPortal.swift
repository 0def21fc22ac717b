import Hummingbird

/// `aruba`: an ArubaOS controller's (or Aruba Instant's) internal captive portal, as Aruba's
/// documentation of the captive-portal profile and of customised login pages has it ("What do
/// I need to change in the HTML code of a customized captive portal page", ArubaOS user
/// guides) and as the clients people wrote for campus networks send it. A captive request is
/// sent (302) to `/cgi-bin/login?cmd=login&mac=MAC&ip=IP&essid=SSID&apname=AP&apgroup=GROUP&url=URL`
/// (on `securelogin.arubanetworks.com`, resolved to the controller). The login page's form
/// POSTs `user`, `password`, the hidden `cmd=authenticate` and `url`, and the button `Login`
/// to `/cgi-bin/login?cmd=login`. Good credentials get the welcome page, bad ones the page
/// with "Authentication failed"; `GET /cgi-bin/login?cmd=logout` answers "Logout Successful"
/// (or "User not logged in").
struct ArubaPortal: PortalBehavior {
    static let path = "/cgi-bin/login"

    let state: PortalState
    let settings: ScenarioSettings

    func loginURL(for request: PortalRequest) -> String {
        request.url(Self.path + "?" + FormEncoding.encode([
            ("cmd", "login"), ("mac", CoovaChilliPortal.mac(of: request.client).replacingDashes),
            ("ip", request.client), ("essid", "Aruba-Guest"), ("apname", "ap-315-lobby"), ("apgroup", "guest"),
            ("url", request.url(request.path)),
        ]))
    }

    func respond(to request: PortalRequest) -> Response? {
        guard request.path == Self.path else { return nil }
        if request.isGet, request.query["cmd"] == "logout" {
            guard state.isLoggedIn(request.client, at: request.now) else {
                return .html(Pages.page(title: "Logout", body: "<p>User not logged in</p>"))
            }
            state.logOut(request.client)
            return .html(Pages.page(title: "Logout", body: "<p id=\"logged-out\">Logout Successful</p>"))
        }
        if request.isGet { return .html(page(url: request.query["url"] ?? "", error: nil)) }
        guard request.isPost else { return nil }
        guard request.form["cmd"] == "authenticate",
              request.form["user"] == settings.username, request.form["password"] == settings.password else {
            return .html(page(url: request.form["url"] ?? "", error: "Authentication failed"))
        }
        state.withClient(request.client) { $0.logIn(for: settings.sessionLength, at: request.now) }
        let onward = request.form["url"] ?? ""
        return .html(Pages.page(title: "Welcome", body: """
            <p id="connected">Authentication successful. Welcome to \(Pages.escape(settings.venueName)).</p>
            <p><a href="\(Pages.escape(onward))">Continue</a> · <a href="\(Self.path)?cmd=logout">Logout</a></p>
            """))
    }

    private func page(url: String, error: String?) -> String {
        Pages.page(title: "\(settings.venueName) captive portal", error: error, body: """
            <form name="form1" method="post" action="\(Self.path)?cmd=login">
            <p>Username <input type="text" name="user" id="user" accesskey="u"></p>
            <p>Password <input type="password" name="password" id="password" accesskey="p"></p>
            <input type="hidden" name="cmd" value="authenticate">
            <input type="hidden" name="url" value="\(Pages.escape(url))">
            <input type="submit" name="Login" value="Log In">
            </form>
            """)
    }
}
