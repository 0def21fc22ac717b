import Hummingbird

/// `cisco-wlc`: a Cisco Wireless LAN Controller's internal web authentication, as the WLC's
/// default `login.html` and Cisco's web-auth bundle samples (the `login.html` a customised
/// page must keep: "Wireless LAN Controller Web Authentication Configuration Example") have it.
/// A captive request is sent (302) to `/login.html?redirect=HOST/PATH`, the original URL
/// written after `redirect=` as it is. The page's form POSTs to `/login.html` with the hidden
/// `buttonClicked` (0 in the page), `err_flag`, `err_msg`, `info_flag`, `info_msg`,
/// `redirect_url` and `network_name`, and `username` and `password`; its button is
/// `type=button` and its `submitAction()` sets `buttonClicked` to 4 and `redirect_url` from
/// the query before it submits. Only `buttonClicked=4` logs in: another value gets the page
/// again, bad credentials the page with `err_flag=1`. With web passthrough (`wlcPassthrough`)
/// the page has no credentials, only Accept (the same `submitAction()`) and Don't Accept.
/// The logout page POSTs `userStatus=1` to `/logout.html`.
struct CiscoWLCPortal: PortalBehavior {
    let state: PortalState
    let settings: ScenarioSettings

    func loginURL(for request: PortalRequest) -> String {
        request.url("/login.html?redirect=" + request.authority + request.path)
    }

    func respond(to request: PortalRequest) -> Response? {
        switch request.path {
        case "/login.html" where request.isGet:
            return .html(page(error: false))
        case "/login.html" where request.isPost:
            guard request.form["buttonClicked"] == "4" else { return .html(page(error: false)) }
            if !settings.wlcPassthrough {
                guard request.form["username"] == settings.username, request.form["password"] == settings.password else {
                    return .html(page(error: true))
                }
            }
            state.withClient(request.client) { $0.logIn(for: settings.sessionLength, at: request.now) }
            let onward = request.form["redirect_url"].map { $0.hasPrefix("http") ? $0 : "http://" + $0 } ?? ""
            return .html(Pages.page(title: "Web Authentication", body: """
                <p id="connected">Login Successful !</p>
                <p>You can now use all regular network services over the wireless network.</p>
                <p><a href="\(Pages.escape(onward))">Continue</a></p>
                <form method="post" action="/logout.html">
                <input type="hidden" name="userStatus" value="1">
                <input type="submit" name="logout" value="Logout">
                </form>
                """))
        case "/logout.html" where request.isPost:
            guard request.form["userStatus"] == "1" else { return nil }
            state.logOut(request.client)
            return .html(Pages.page(title: "Logout", body: "<p id=\"logged-out\">You have successfully logged out.</p>"))
        default:
            return nil
        }
    }

    private func page(error: Bool) -> String {
        let credentials = settings.wlcPassthrough ? "" : """
            <p>User Name <input type="text" name="username" size="25" maxlength="63"></p>
            <p>Password <input type="password" name="password" size="25" maxlength="63"></p>

            """
        let buttons = settings.wlcPassthrough
            ? "<input type=\"button\" name=\"Submit\" value=\"Accept\" onclick=\"submitAction();\">\n"
                + "<input type=\"button\" name=\"Reject\" value=\"Don't Accept\" onclick=\"reject();\">"
            : "<input type=\"button\" name=\"Submit\" value=\"Submit\" onclick=\"submitAction();\">"
        return Pages.page(title: "Web Authentication", error: error ? "Authentication failed. Please try again." : nil, body: """
            <form method="post" action="/login.html">
            <input type="hidden" name="buttonClicked" size="16" maxlength="15" value="0">
            <input type="hidden" name="err_flag" size="16" maxlength="15" value="\(error ? 1 : 0)">
            <input type="hidden" name="err_msg" size="32" maxlength="31" value="">
            <input type="hidden" name="info_flag" size="16" maxlength="15" value="0">
            <input type="hidden" name="info_msg" size="32" maxlength="31" value="">
            <input type="hidden" name="redirect_url" size="255" maxlength="255" value="">
            <input type="hidden" name="network_name" size="16" maxlength="15" value="Guest Network">
            <p>Welcome to the \(Pages.escape(settings.venueName)) wireless network.</p>
            \(credentials)\(buttons)
            </form>
            <script>
            function submitAction() {
              var link = document.location.href;
              var index = link.indexOf("redirect=");
              if (index >= 0) document.forms[0].redirect_url.value = link.substring(index + 9).substring(0, 255);
              document.forms[0].buttonClicked.value = 4;
              document.forms[0].submit();
            }
            function reject() { alert("You will not be able to access the network."); }
            </script>
            """)
    }
}
