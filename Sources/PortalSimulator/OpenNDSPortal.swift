import Hummingbird

/// `opennds`: openNDS's click-to-continue splash as its default theme serves it (learned from
/// the theme script Debian's opennds ships, and the real gateway in GatewayTests). Every
/// captive request is sent (307) to `/opennds_preauth/?fas=TOKEN`. The splash has two GET
/// forms: `fas` and `continue=clicked` to accept, `fas` and `terms=yes` to read the terms.
/// Accepting answers a "Thank you" page whose GET form sends `fas` and `landing=yes`, which
/// alone authenticates. openNDS reads the query in order: a query whose first field is not
/// `fas` gets 511, as a sorted one does.
struct OpenNDSPortal: PortalBehavior {
    static let path = "/opennds_preauth/"

    let state: PortalState
    let venue: String

    /// The client's `fas`: base64 on the real gateway, so it ends in `=` as this one does,
    /// which a form must send percent-encoded.
    static func token(for client: String) -> String {
        "fas" + client.utf8.map { String($0, radix: 16) }.joined() + "=="
    }

    func loginURL(for request: PortalRequest) -> String {
        request.url(Self.path + "?fas=" + Self.token(for: request.client).replacingEquals)
    }

    func captiveProbe(_ request: PortalRequest) -> Response {
        .redirection(to: loginURL(for: request), status: .temporaryRedirect)
    }

    func respond(to request: PortalRequest) -> Response? {
        guard request.path == Self.path, request.isGet else { return nil }
        let token = Self.token(for: request.client)
        let firstField = request.rawQuery.split(separator: "&").first?.split(separator: "=", maxSplits: 1).first
        guard firstField == "fas", request.query["fas"] == token else {
            return .html(Pages.page(title: "Error 511", body: "<p>Network Authentication Required.</p>"), status: .networkAuthenticationRequired)
        }
        let fas = "<input type=\"hidden\" name=\"fas\" value=\"\(Pages.escape(token))\">"
        if request.query["landing"] == "yes" {
            state.withClient(request.client) { $0.logIn(for: nil, at: request.now) }
            return .html(Pages.page(title: "\(venue) Wi-Fi", body: """
                <p id="connected">You are logged in and have been granted access to the Internet.</p>
                <form><input type="button" value="Continue" onclick="location.href='http://status.client'"></form>
                """))
        }
        if request.query["continue"] == "clicked" {
            return .html(Pages.page(title: "\(venue) Wi-Fi", body: """
                <p>Thank you for using this service.</p>
                <form action="\(Self.path)" method="get">\(fas)
                <input type="hidden" name="landing" value="yes">
                <input type="submit" value="Continue">
                </form>
                """))
        }
        if request.query["terms"] == "yes" {
            return .html(Pages.page(title: "Terms of Service", body: """
                <p>Acceptable use: no unlawful use, no attempt to reach other users' devices.</p>
                <form><input type="button" value="Continue" onclick="history.go(-1);return true;"></form>
                """))
        }
        return .html(Pages.page(title: "\(venue) Wi-Fi", body: """
            <p>For access to the Internet, please accept the Terms of Service.</p>
            <form action="\(Self.path)" method="get">\(fas)
            <input type="hidden" name="continue" value="clicked">
            <input type="submit" value="Accept Terms of Service">
            </form>
            <form action="\(Self.path)" method="get">\(fas)
            <input type="hidden" name="terms" value="yes">
            <input type="submit" value="Read Terms of Service">
            </form>
            """))
    }
}

private extension String {
    /// The token in a URL's query, as the gateway writes it there.
    var replacingEquals: String { split(separator: "=", omittingEmptySubsequences: false).joined(separator: "%3D") }
}
