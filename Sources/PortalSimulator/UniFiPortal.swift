import Hummingbird
import JSON

/// `unifi`: UniFi Network's own guest portal (hotspot), as the controller serves it on port
/// 8880 and as its public portal template and the scripts people write against it show it
/// (Ubiquiti's "UniFi Hotspot Portal" docs; community clients such as ibonobo/hotspotlogin).
/// A captive request is sent (302) to `/guest/s/default/?ap=AP&id=CLIENT_MAC&t=TIME&url=URL&ssid=SSID`;
/// the page, an AngularJS app with no HTML form (here its calls in plain JavaScript), sets the `ec` cookie (the client's encrypted
/// identity, which every API call needs), reads `/guest/s/default/hotspotconfig` (`auth`,
/// `voucher_enabled`, `password_enabled`) and POSTs JSON to `/guest/s/default/login`:
/// `{"by":"none"}` (click-through), `{"by":"voucher","voucher":"..."}` or
/// `{"by":"password","password":"..."}`, with `url`. The answers are the controller's API
/// envelope: `{"meta":{"rc":"ok"},"data":[{"authorized":true}]}`, or 400 with `rc` `error`
/// and `msg`. The session ends when it expires; the guest portal has no logout.
struct UniFiPortal: PortalBehavior {
    static let site = "/guest/s/default/"
    static let cookieName = "ec"

    let state: PortalState
    let settings: ScenarioSettings

    func loginURL(for request: PortalRequest) -> String {
        request.url(Self.site + "?" + FormEncoding.encode([
            ("ap", "74:83:c2:1a:2b:3c"), ("id", CoovaChilliPortal.mac(of: request.client).replacingDashes),
            ("t", "1764331200"), ("url", request.url(request.path)), ("ssid", "UniFi-Guest"),
        ]))
    }

    func respond(to request: PortalRequest) -> Response? {
        switch (request.path, request.method) {
        case (Self.site, _) where request.isGet:
            // The identity the controller encrypts into `ec`: here, a token tied to the client's address.
            let identity = "c-" + request.client
            return .html(page, headers: [.setCookie: "\(Self.cookieName)=\(identity); Path=/; HttpOnly"])
        case (Self.site + "hotspotconfig", _) where request.isGet:
            return envelope(data: [
                ("auth", .string(Array((settings.unifiAuthentication == .none ? "none" : "hotspot").utf8))),
                ("voucher_enabled", .boolean(settings.unifiAuthentication == .voucher)),
                ("password_enabled", .boolean(settings.unifiAuthentication == .password)),
            ])
        case (Self.site + "login", .post):
            guard request.cookies[Self.cookieName]?.value == "c-" + request.client else {
                return error("api.err.InvalidGuest", status: .forbidden)
            }
            guard let body = try? JSONValue.parse(Array(request.body.utf8), maximumDepth: 4),
                  case .string(let by)? = body["by"] else {
                return error("api.err.InvalidPayload")
            }
            let given = { (name: String) -> String? in
                if case .string(let value)? = body[name] { return String(decoding: value, as: UTF8.self) }
                return nil
            }
            switch (String(decoding: by, as: UTF8.self), settings.unifiAuthentication) {
            case ("none", .none): break
            case ("voucher", .voucher):
                guard given("voucher")?.filter(\.isNumber) == settings.unifiVoucher.filter(\.isNumber) else {
                    return error("api.err.InvalidVoucher")
                }
            case ("password", .password):
                guard given("password") == settings.password else { return error("api.err.Incorrect") }
            default:
                return error("api.err.InvalidAuthMethod")
            }
            state.withClient(request.client) { $0.logIn(for: settings.sessionLength, at: request.now) }
            return envelope(data: [("authorized", .boolean(true))])
        default:
            return nil
        }
    }

    private func envelope(data: [(name: String, value: JSONValue)], status: HTTPResponse.Status = .ok, rc: String = "ok",
                          message: String? = nil) -> Response {
        var meta: [(name: String, value: JSONValue)] = [("rc", .string(Array(rc.utf8)))]
        if let message { meta.append(("msg", .string(Array(message.utf8)))) }
        let document = JSONValue(members: [("meta", JSONValue(members: meta)), ("data", .array(data.isEmpty ? [] : [JSONValue(members: data)]))])
        return Response(status: status, headers: [.contentType: "application/json; charset=utf-8", .cacheControl: "no-store"],
                        body: .init(byteBuffer: ByteBuffer(bytes: document.serialized())))
    }

    private func error(_ message: String, status: HTTPResponse.Status = .badRequest) -> Response {
        envelope(data: [], status: status, rc: "error", message: message)
    }

    /// The portal app's page: what it does is its script's, with no form a browser would submit.
    /// The app's AngularJS, written without it (which the simulator does not serve) so that a
    /// real browser logs in as it does at a controller: the same calls, the fields shown as
    /// `hotspotconfig` says, Connect enabled once it has answered.
    private var page: String {
        Pages.page(title: "\(settings.venueName) guest access", body: """
            <div id="portal">
            <input type="text" id="voucher" placeholder="Voucher code" hidden>
            <input type="password" id="password" placeholder="Password" hidden>
            <button type="button" id="connect" disabled>Connect</button>
            </div>
            <script>
            var query = new URLSearchParams(window.location.search), config = {};
            fetch("hotspotconfig").then(function (r) { return r.json(); }).then(function (r) {
              config = r.data[0];
              document.getElementById("voucher").hidden = !config.voucher_enabled;
              document.getElementById("password").hidden = !config.password_enabled;
              document.getElementById("connect").disabled = false;
            });
            document.getElementById("connect").onclick = function () {
              var by = config.voucher_enabled ? "voucher" : config.password_enabled ? "password" : "none";
              var body = { by: by, url: query.get("url") };
              if (by !== "none") { body[by] = document.getElementById(by).value; }
              fetch("login", { method: "POST", headers: { "Content-Type": "application/json;charset=UTF-8" }, body: JSON.stringify(body) })
                .then(function (r) { if (r.ok) { window.location = query.get("url"); } });
            };
            </script>
            """)
    }
}
