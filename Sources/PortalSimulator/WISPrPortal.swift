import Hummingbird

/// `wispr`: a WISPr 1.0 gateway. Its messages are XML in an HTML comment:
///
///     probe (captive)        302 /login, Redirect (100, 0) with LoginURL and AbortLoginURL
///                            or, with the proxy step, 302 /wispr/proxy, Proxy (110, 200) with NextURL
///     GET  /wispr/proxy      302 /login, the Redirect
///     GET  /login            a form for people, with the Redirect
///     POST /wispr/login      AuthenticationReply (120): 50 with LogoffURL, 100 on bad
///                            credentials, or 201 with LoginResultsURL and Delay when pending;
///                            the refusal code or broken XML when the settings ask for them
///     GET  /wispr/results    AuthenticationPollReply (140): 201 until Delay has passed, then 50
///     GET  /wispr/logoff     LogoffReply (130, 150)
///     GET  /wispr/abort      AbortLoginReply (150, 151): drops a pending login
struct WISPrPortal: PortalBehavior {
    let state: PortalState
    let settings: ScenarioSettings

    func loginURL(for request: PortalRequest) -> String { request.url("/login") }

    func captiveProbe(_ request: PortalRequest) -> Response {
        guard settings.wisprProxyStep else { return redirectMessage(request) }
        let next = request.url("/wispr/proxy")
        let proxy = message("Proxy", [
            ("MessageType", "110"), ("ResponseCode", "200"), ("NextURL", next), ("Delay", "0"),
        ])
        return .redirection(to: next, page: page(title: "Redirecting", message: proxy))
    }

    func respond(to request: PortalRequest) -> Response? {
        switch request.path {
        case "/wispr/proxy" where request.isGet:
            return redirectMessage(request)
        case "/login" where request.isGet:
            return .html(page(title: "\(settings.venueName) Wi-Fi", message: redirect(request), body: """
                <form method="post" action="/wispr/login">
                <p><label>Username <input type="text" name="UserName"></label></p>
                <p><label>Password <input type="password" name="Password"></label></p>
                <input type="hidden" name="FNAME" value="0">
                <input type="hidden" name="OriginatingServer" value="http://www.example.com/">
                <p><button type="submit" name="button" value="Login">Log in</button></p>
                </form>
                """))
        case "/wispr/login" where request.isPost:
            return login(request)
        case "/wispr/results" where request.isGet:
            return pollResults(request)
        case "/wispr/logoff" where request.isGet || request.isPost:
            state.logOut(request.client)
            return reply("LogoffReply", [("MessageType", "130"), ("ResponseCode", "150")])
        case "/wispr/abort" where request.isGet || request.isPost:
            state.withClient(request.client) { $0.pendingLoginCompletes = nil }
            return reply("AbortLoginReply", [("MessageType", "150"), ("ResponseCode", "151")])
        default:
            return nil
        }
    }

    private func login(_ request: PortalRequest) -> Response {
        guard request.form["UserName"] == settings.username, request.form["Password"] == settings.password else {
            return reply("AuthenticationReply", [
                ("MessageType", "120"), ("ResponseCode", "100"), ("ReplyMessage", "Invalid username or password"),
            ])
        }
        if settings.wisprMalformedReply {
            return .html(page(title: settings.venueName, message: """
                <WISPAccessGatewayParam><AuthenticationReply><ResponseCode>50<ReplyMessage>Welcome
                <LogoffURL a="\(request.url("/wispr/logoff"))></AuthenticationReply>
                """))
        }
        if let refusal = settings.wisprRefusal {
            return reply("AuthenticationReply", [
                ("MessageType", "120"), ("ResponseCode", String(refusal)), ("ReplyMessage", "The login service is unavailable (\(refusal))"),
            ])
        }
        guard let delay = settings.wisprPendingDelay else {
            state.withClient(request.client) { $0.logIn(for: settings.sessionLength, at: request.now) }
            return succeeded(request, messageType: "120")
        }
        state.withClient(request.client) { $0.pendingLoginCompletes = request.now + .seconds(delay) }
        return reply("AuthenticationReply", [
            ("MessageType", "120"), ("ResponseCode", "201"), ("LoginResultsURL", request.url("/wispr/results")),
            ("Delay", String(delay)),
        ])
    }

    private func pollResults(_ request: PortalRequest) -> Response {
        enum Outcome { case loggedIn, pending(seconds: Int), none }
        let outcome = state.withClient(request.client) { client -> Outcome in
            if let completes = client.pendingLoginCompletes {
                guard completes <= request.now else {
                    return .pending(seconds: Int(((completes - request.now) / .seconds(1)).rounded(.up)))
                }
                client.pendingLoginCompletes = nil
                client.logIn(for: settings.sessionLength, at: request.now)
            }
            return client.isLoggedIn(at: request.now) ? .loggedIn : .none
        }
        switch outcome {
        case .loggedIn:
            return succeeded(request, messageType: "140")
        case .pending(let seconds):
            return reply("AuthenticationPollReply", [
                ("MessageType", "140"), ("ResponseCode", "201"), ("LoginResultsURL", request.url("/wispr/results")),
                ("Delay", String(seconds)),
            ])
        case .none:
            return reply("AuthenticationPollReply", [
                ("MessageType", "140"), ("ResponseCode", "100"), ("ReplyMessage", "No login in progress"),
            ])
        }
    }

    private func succeeded(_ request: PortalRequest, messageType: String) -> Response {
        reply(messageType == "120" ? "AuthenticationReply" : "AuthenticationPollReply", [
            ("MessageType", messageType), ("ResponseCode", "50"), ("ReplyMessage", "Welcome to \(settings.venueName)"),
            ("LogoffURL", request.url("/wispr/logoff")),
        ])
    }

    private func redirect(_ request: PortalRequest) -> String {
        let versions = settings.wisprVersion2 ? [("VersionLow", "1.0"), ("VersionHigh", "2.0")] : []
        return message("Redirect", versions + [
            ("AccessProcedure", "1.0"), ("AccessLocation", "aroma-cafe-01"), ("LocationName", settings.venueName),
            ("LoginURL", request.url("/wispr/login")), ("AbortLoginURL", request.url("/wispr/abort")),
            ("MessageType", "100"), ("ResponseCode", "0"),
        ])
    }

    private func redirectMessage(_ request: PortalRequest) -> Response {
        .redirection(to: loginURL(for: request), page: page(title: "Redirecting", message: redirect(request)))
    }

    private func reply(_ element: String, _ fields: [(String, String)]) -> Response {
        .html(page(title: settings.venueName, message: message(element, fields)))
    }

    /// One WISPr message: `element` holding `fields` in order, in the gateway parameter envelope.
    private func message(_ element: String, _ fields: [(String, String)]) -> String {
        let lines = fields.map { "<\($0)>\(Pages.escape($1))</\($0)>" }.joined(separator: "\n")
        let schema = settings.wisprVersion2
            ? #"xmlns="http://www.wballiance.net/wispr_2_0.xsd""#
            : #"xsi:noNamespaceSchemaLocation="http://www.acmewisp.com/WISPAccessGatewayParam.xsd""#
        return """
            <WISPAccessGatewayParam xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" \(schema)>
            <\(element)>
            \(lines)
            </\(element)>
            </WISPAccessGatewayParam>
            """
    }

    /// An HTML page carrying `message` in a comment, as gateways hide it from browsers.
    private func page(title: String, message: String, body: String = "") -> String {
        """
        <!DOCTYPE html>
        <html>
        <head><meta charset="utf-8"><title>\(Pages.escape(title))</title></head>
        <body>
        <!--
        \(message)
        -->
        \(body)
        </body>
        </html>

        """
    }
}
