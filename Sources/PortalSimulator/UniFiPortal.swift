import Hummingbird
import JSON

/// `unifi`: UniFi Network's own guest portal (hotspot), as the controller serves it on port
/// 8880 and as its public portal template and the scripts people write against it show it
/// (Ubiquiti's "UniFi Hotspot Portal" docs; community clients such as ibonobo/hotspotlogin).
/// A captive request is sent (302) to `/guest/s/default/?ap=AP&id=CLIENT_MAC&t=TIME&url=URL&ssid=SSID`;
/// the page, an AngularJS app with no HTML form, sets the `ec` cookie (the client's encrypted
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
    private var page: String {
        Pages.page(title: "\(settings.venueName) guest access", body: """
            <div ng-app="unifiPortal" ng-controller="PortalController">
            <input type="text" ng-model="voucher" placeholder="Voucher code" ng-show="config.voucher_enabled">
            <input type="password" ng-model="password" placeholder="Password" ng-show="config.password_enabled">
            <button type="button" ng-click="connect()">Connect</button>
            </div>
            <script>
            angular.module("unifiPortal", []).controller("PortalController", function ($scope, $http, $location) {
              $http.get("hotspotconfig").then(function (r) { $scope.config = r.data.data[0]; });
              $scope.connect = function () {
                var by = $scope.config.voucher_enabled ? "voucher" : $scope.config.password_enabled ? "password" : "none";
                $http.post("login", { by: by, voucher: $scope.voucher, password: $scope.password, url: $location.search().url })
                  .then(function () { window.location = $location.search().url; });
              };
            });
            </script>
            """)
    }
}
