import Hummingbird

/// `mikrotik`: MikroTik's HotSpot with its default pages (`login.html`, `alogin.html`,
/// `status.html`, `logout.html`). A captive request is sent (302) to `/login?dst=URL`. With
/// HTTP-CHAP (the default) the page carries `$(chap-id)` and `$(chap-challenge)` as JavaScript
/// strings of octal escapes, and its script posts the `sendin` form with `username` and
/// `password` = hexMD5(chap-id + password + chap-challenge), `dst` and `popup`; with HTTP-PAP
/// (`mikrotikPAP`) the `login` form posts the password itself. A challenge answers one login.
/// `/status` shows the session (a redirect to the login page without one); `/logout` (the
/// portal's shared one) ends it.
struct MikroTikPortal: PortalBehavior {
    let state: PortalState
    let settings: ScenarioSettings

    func loginURL(for request: PortalRequest) -> String {
        request.url("/login?" + FormEncoding.encode([("dst", request.url(request.path))]))
    }

    func respond(to request: PortalRequest) -> Response? {
        switch request.path {
        case "/login" where request.isGet:
            return .html(loginPage(request, error: nil))
        case "/login" where request.isPost:
            let accepted = state.withClient(request.client) { client -> Bool in
                guard request.form["username"] == settings.username, let sent = request.form["password"] else { return false }
                if settings.mikrotikPAP { return sent == settings.password }
                // The challenge goes with the attempt, right or wrong: a response cannot be replayed.
                guard let challenge = client.chilliChallenge else { return false }
                client.chilliChallenge = nil
                return sent.lowercased() == CHAP.hex(CHAP.md5([Self.id(challenge)] + Array(settings.password.utf8) + challenge))
            }
            guard accepted else { return .html(loginPage(request, error: "invalid username or password")) }
            state.withClient(request.client) { $0.logIn(for: settings.sessionLength, at: request.now) }
            let destination = Pages.escape(request.form["dst"] ?? "")
            return .html(Pages.page(title: "mikrotik hotspot > redirect", body: """
                <p id="connected">You are logged in</p>
                <p>If nothing happens, click <a href="\(destination)">here</a>.</p>
                <p><a href="/status">status</a> <a href="/logout">log off</a></p>
                """))
        case "/status" where request.isGet:
            guard state.isLoggedIn(request.client, at: request.now) else { return .redirection(to: loginURL(for: request)) }
            return .html(Pages.page(title: "mikrotik hotspot > status", body: """
                <p id="status">Welcome \(Pages.escape(settings.username))!</p>
                <p>IP address: \(request.client)</p>
                <form action="/logout" name="logout" method="post"><input type="submit" value="log off"></form>
                """))
        default:
            return nil
        }
    }

    /// The CHAP id: one byte, as RouterOS sends it.
    static func id(_ challenge: [UInt8]) -> UInt8 { challenge[0] & 0x3f }

    /// A byte string as RouterOS writes `$(chap-id)` and `$(chap-challenge)` into the page.
    static func octal(_ bytes: [UInt8]) -> String {
        bytes.map { "\\" + String(repeating: "0", count: 3 - String($0, radix: 8).count) + String($0, radix: 8) }.joined()
    }

    private func loginPage(_ request: PortalRequest, error: String?) -> String {
        let destination = Pages.escape(request.form["dst"] ?? request.query["dst"] ?? "")
        let hidden = """
            <input type="hidden" name="dst" value="\(destination)">
            <input type="hidden" name="popup" value="true">
            """
        var chap = ""
        var onSubmit = ""
        if !settings.mikrotikPAP {
            let challenge = state.withClient(request.client) { $0.challenge() }
            chap = """
                <form name="sendin" action="/login" method="post">
                <input type="hidden" name="username">
                <input type="hidden" name="password">
                \(hidden)
                </form>
                <script src="/md5.js"></script>
                <script>
                function doLogin() {
                  document.sendin.username.value = document.login.username.value;
                  document.sendin.password.value = hexMD5('\(Self.octal([Self.id(challenge)]))' + document.login.password.value + '\(Self.octal(challenge))');
                  document.sendin.submit();
                  return false;
                }
                </script>

                """
            onSubmit = " onSubmit=\"return doLogin()\""
        }
        return Pages.page(title: "mikrotik hotspot > login", error: error, body: """
            \(chap)<form name="login" action="/login" method="post"\(onSubmit)>
            \(hidden)
            <input name="username" type="text" value="">
            <input name="password" type="password">
            <input type="submit" value="OK">
            </form>
            """)
    }
}
