import Hummingbird

/// `meraki`: Cisco Meraki's click-through splash as its external captive portal (EXCAP)
/// interface documents it. A captive request is sent (302) to the splash page with
/// `base_grant_url`, `user_continue_url`, `node_id`, `node_mac`, `gateway_id`, `client_ip` and
/// `client_mac` in the query. The page's button only runs a script; what lets the device in is
/// a GET of `base_grant_url?continue_url=URL` (with an optional `duration` in seconds), which
/// answers 302 to `continue_url`.
struct MerakiPortal: PortalBehavior {
    static let splash = "/splash/"
    static let grant = "/splash/grant"

    let state: PortalState
    let settings: ScenarioSettings

    func loginURL(for request: PortalRequest) -> String {
        request.url(Self.splash + "?" + FormEncoding.encode([
            ("base_grant_url", request.url(Self.grant)), ("user_continue_url", request.url(request.path)),
            ("node_id", "149624921787028"), ("node_mac", "88:15:44:50:0a:94"), ("gateway_id", "149624921787028"),
            ("client_ip", request.client), ("client_mac", CoovaChilliPortal.mac(of: request.client).replacingDashes),
        ]))
    }

    func respond(to request: PortalRequest) -> Response? {
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
}

private extension String {
    /// A MAC address as Meraki writes it: lower case, colons.
    var replacingDashes: String { lowercased().split(separator: "-").joined(separator: ":") }
}
