import Hummingbird
import JSON

/// `opnsense`: OPNsense's captive portal as its default template and its access API
/// (`AccessController`) serve it. A captive request is sent (302) to `/index.html?redirurl=URL`;
/// the page's login form has no submit button: its script posts `user` and `password` to
/// `/api/captiveportal/access/logon` and reads the JSON answer. `/api/captiveportal/access/status`
/// says `clientState` (`NOT_AUTHORIZED` or `AUTHORIZED`) and `authType` (`normal`, or `none` for
/// a zone without authentication, whose logon takes no credentials);
/// `/api/captiveportal/access/logoff` disconnects. The zone comes from the web server (a header
/// on the real one), or after the path as older versions take it (`/logon/0`).
struct OPNsensePortal: PortalBehavior {
    static let api = "/api/captiveportal/access/"

    let state: PortalState
    let settings: ScenarioSettings

    func loginURL(for request: PortalRequest) -> String {
        request.url("/index.html?" + FormEncoding.encode([("redirurl", request.url(request.path))]))
    }

    func respond(to request: PortalRequest) -> Response? {
        if request.path == "/index.html", request.isGet { return .html(page) }
        guard request.path.hasPrefix(Self.api) else { return nil }
        // "logon", or "logon/0" with the zone after it.
        let action = request.path.dropFirst(Self.api.count).split(separator: "/").first ?? ""
        switch action {
        case "status" where request.isGet || request.isPost:
            return json(session(of: request))
        case "logon" where request.isPost:
            let accepted = settings.opnsenseAuthenticates
                ? request.form["user"] == settings.username && request.form["password"] == settings.password
                : true
            if accepted { state.withClient(request.client) { $0.logIn(for: settings.sessionLength, at: request.now) } }
            return json(session(of: request))
        case "logoff":
            state.logOut(request.client)
            return json(session(of: request))
        default:
            return nil
        }
    }

    private func session(of request: PortalRequest) -> [(name: String, value: JSONValue)] {
        let loggedIn = state.isLoggedIn(request.client, at: request.now)
        var members: [(name: String, value: JSONValue)] = [
            ("clientState", .string(Array((loggedIn ? "AUTHORIZED" : "NOT_AUTHORIZED").utf8))),
            ("ipAddress", .string(Array(request.client.utf8))),
        ]
        if loggedIn {
            let user = settings.opnsenseAuthenticates ? settings.username : "anonymous@" + request.client
            members.append(("userName", .string(Array(user.utf8))))
        } else {
            members.append(("authType", .string(Array((settings.opnsenseAuthenticates ? "normal" : "none").utf8))))
        }
        return members
    }

    private func json(_ members: [(name: String, value: JSONValue)]) -> Response {
        Response(status: .ok, headers: [.contentType: "application/json; charset=UTF-8"],
                 body: .init(byteBuffer: ByteBuffer(bytes: JSONValue(members: members).serialized())))
    }

    /// The default template's page: the form is the script's, never submitted by the browser.
    /// The template's jQuery calls, written without jQuery (which the simulator does not
    /// serve) so that a real browser logs in as it does at an OPNsense: the same requests,
    /// form-encoded and marked X-Requested-With.
    private var page: String {
        Pages.page(title: "\(settings.venueName) captive portal", body: """
            <form id="login_password_form" onsubmit="return false;">
            <input type="text" id="inputUsername" placeholder="Username">
            <input type="password" id="inputPassword" placeholder="Password">
            <button type="button" id="signin">Sign in</button>
            </form>
            <script>
            function post(path, data, done) {
              var request = new XMLHttpRequest();
              request.open("POST", path);
              request.setRequestHeader("Content-Type", "application/x-www-form-urlencoded; charset=UTF-8");
              request.setRequestHeader("X-Requested-With", "XMLHttpRequest");
              request.onload = function () { if (done) { done(JSON.parse(request.responseText)); } };
              request.send(new URLSearchParams(data).toString());
            }
            document.getElementById("signin").onclick = function () {
              post("/api/captiveportal/access/logon/",
                   { user: document.getElementById("inputUsername").value, password: document.getElementById("inputPassword").value },
                   function (data) { if (data.clientState == "AUTHORIZED") { location.reload(); } });
            };
            post("/api/captiveportal/access/status/", {});
            </script>
            """)
    }
}
