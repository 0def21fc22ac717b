import PortalRecording

/// One kind of captive portal the simulator can play, described for people: operators
/// pick one by `name` and test their script against `expectedHelper`.
public struct Scenario: Sendable, Hashable, CustomStringConvertible {
    /// The name on the command line (`simulate --scenario NAME`); stable, user-facing.
    public let name: String
    /// One line saying what the portal does.
    public let summary: String
    /// What a correct helper does with this portal.
    public let expectedHelper: String

    let kind: Kind

    public var description: String { name }

    /// Every scenario, in the order `simulate --list` shows them.
    public static let all: [Scenario] = [
        .clickThrough, .credentials, .email, .redirectChain, .sessionExpiry, .flaky, .slow, .rateLimited, .wispr,
        .capport, .opennds, .coovachilli, .pfsense, .opnsense, .mikrotik, .meraki, .merakiSignOn, .unifi, .ciscoWLC, .aruba,
        .hostile,
    ]

    /// The scenario called `name`, if there is one.
    public static func named(_ name: String) -> Scenario? {
        all.first { $0.name == name }
    }

    enum Kind: Sendable, Hashable {
        case clickThrough, credentials, email, redirectChain, sessionExpiry, flaky, slow, rateLimited, wispr, capport
        case opennds, coovachilli, pfsense, opnsense, mikrotik, meraki, merakiSignOn, unifi, ciscoWLC, aruba, hostile
        case recorded
    }

    /// A recorded login replayed (`simulate --har FILE`), named after its file.
    static func recorded(_ login: PortalLogin) -> Scenario {
        let file = login.fileName
        return Scenario(
            name: "har:\(file)", summary: "The portal login recorded in \(file), replayed.",
            expectedHelper: "Sends what the recorded browser sent, with the tokens of the pages the replay serves, and answers success.",
            kind: .recorded)
    }

    public static let clickThrough = Scenario(
        name: "click-through", summary: "A terms checkbox; posting the form with the box checked logs in.",
        expectedHelper: """
            Follows the probe's 302 to /login, posts the form with accept_terms=yes, and answers \
            authenticate with success once the probe answers 204.
            """,
        kind: .clickThrough)

    public static let credentials = Scenario(
        name: "credentials",
        summary: "Username and password, a hidden CSRF field and a session cookie set by the login page.",
        expectedHelper: """
            Loads /login keeping its cookie, posts username, password and the page's csrf_token with that \
            cookie, and answers success. With wrong or no saved credentials (401 and the form again) it \
            answers ui_required rather than retrying blindly.
            """,
        kind: .credentials)

    public static let email = Scenario(
        name: "email", summary: "An email address only; it must look like one.",
        expectedHelper: """
            Posts a well-formed address (a saved one, or ui_required when it has none); a 400 means \
            the address was refused and retrying the same one is pointless.
            """,
        kind: .email)

    public static let redirectChain = Scenario(
        name: "redirect-chain",
        summary: "302s across two hosts (auth., then login.), relative and absolute, and a 303 after the POST.",
        expectedHelper: """
            Follows every redirect, resolving relative Locations against the current URL and switching \
            hosts (all within its hosts patterns), carries the ticket from the chain into the form, \
            follows the 303 with a GET, and answers success.
            """,
        kind: .redirectChain)

    public static let sessionExpiry = Scenario(
        name: "session-expiry", summary: "A click-through login that lasts a few seconds, then the probe is captive again.",
        expectedHelper: """
            Logs in as for click-through; in maintain it probes, and when the probe is captive again it \
            answers authentication_required (or logs in again itself) instead of success.
            """,
        kind: .sessionExpiry)

    public static let flaky = Scenario(
        name: "flaky", summary: "A click-through whose first logins fail with 503.",
        expectedHelper: """
            Treats 503 as transient: retries with a short backoff within its deadline and answers \
            success; answers temporary_failure if the deadline comes first.
            """,
        kind: .flaky)

    public static let slow = Scenario(
        name: "slow", summary: "A click-through where every response is delayed.",
        expectedHelper: """
            Logs in as for click-through with timeouts long enough for the delay but well inside the \
            command's deadline, and does not send a request twice because the first was slow.
            """,
        kind: .slow)

    public static let rateLimited = Scenario(
        name: "rate-limited",
        summary: "Logins closer than a second apart get 429 with Retry-After: 1; the first one always does.",
        expectedHelper: """
            On 429 waits the Retry-After seconds before posting again (once), and answers success; a \
            helper that retries at once is refused for as long as it keeps doing so.
            """,
        kind: .rateLimited)

    public static let wispr = Scenario(
        name: "wispr",
        summary: "WISPr 1.0 smart-client login: XML in the probe's redirect page, optionally a Proxy step and a pending login.",
        expectedHelper: """
            Reads the WISPAccessGatewayParam from the probe's 302 page (following a Proxy NextURL first \
            when there is one), posts UserName and Password to LoginURL, polls LoginResultsURL after Delay \
            on ResponseCode 201, answers success on 50, ui_required on 100, and keeps LogoffURL for logoff.
            """,
        kind: .wispr)

    public static let capport = Scenario(
        name: "capport",
        summary: "The RFC 8908 Captive Portal API at /capport-api, a click-through portal and a session that runs out.",
        expectedHelper: """
            Reads /capport-api (application/captive+json); while captive, logs in at user-portal-url; in \
            maintain, when seconds-remaining is low and can-extend-session is true, logs in again to \
            extend the session before it runs out.
            """,
        kind: .capport)

    public static let opennds = Scenario(
        name: "opennds",
        summary: "openNDS's click-to-continue splash: a GET form whose fields must come in the page's order, then a second form.",
        expectedHelper: """
            Follows the probe's 307 to /opennds_preauth/?fas=..., sends the first form as a browser does \
            (GET, fas then continue=clicked; a query that does not start with fas gets 511), then the \
            "Thank you" page's form (fas, landing=yes), which logs in, and answers success.
            """,
        kind: .opennds)

    public static let coovachilli = Scenario(
        name: "coovachilli",
        summary: "CoovaChilli's UAM: a res=notyet redirect with a challenge, a login page built by JavaScript, and its JSON interface.",
        expectedHelper: """
            Reads uamip and uamport from the probe's 302 to /www/login.chi?res=notyet&...; gets the \
            challenge from /json/status, sends /json/logon with the username and the CHAP response \
            (MD5 of 0x00, the password and the challenge's bytes, in hex), and answers success when \
            clientState is 1; in maintain reads /json/status, on logoff calls /json/logoff.
            """,
        kind: .coovachilli)

    public static let pfsense = Scenario(
        name: "pfsense",
        summary: "pfSense's captive portal: a POST form with auth_user, auth_pass, auth_voucher, redirurl, zone and accept, and a logout form.",
        expectedHelper: """
            Follows the probe's 302 to /index.php?zone=guests&redirurl=..., posts the form back with \
            the hidden zone and redirurl, accept, and either the username and password or a voucher \
            (never guessed: from the secrets or the person), answers success; on logoff posts the \
            logout form (logout_id, zone) the page after the login carried.
            """,
        kind: .pfsense)

    public static let opnsense = Scenario(
        name: "opnsense",
        summary: "OPNsense's captive portal: a page whose script logs in over the JSON API /api/captiveportal/access/logon, status, logoff.",
        expectedHelper: """
            Follows the probe's 302 to /index.html, reads /api/captiveportal/access/status (authType), \
            POSTs user and password (none when authType is none) to /api/captiveportal/access/logon, \
            answers success on clientState AUTHORIZED; maintain reads status, logoff calls logoff.
            """,
        kind: .opnsense)

    public static let mikrotik = Scenario(
        name: "mikrotik",
        summary: "MikroTik HotSpot: HTTP-CHAP whose page hashes the password in JavaScript (or HTTP-PAP), dst and popup, status and logout pages.",
        expectedHelper: """
            Follows the probe's 302 to /login?dst=..., reads $(chap-id) and $(chap-challenge) from the \
            page's script and posts the sendin form with username and hexMD5(chap-id + password + \
            chap-challenge), dst and popup (the password itself with HTTP-PAP), answers success; \
            maintain reads /status, logoff opens /logout.
            """,
        kind: .mikrotik)

    public static let meraki = Scenario(
        name: "meraki",
        summary: "Cisco Meraki's click-through splash: base_grant_url and user_continue_url in the redirect, a button that only runs a script.",
        expectedHelper: """
            Reads base_grant_url and user_continue_url from the probe's 302 to /splash/?..., opens \
            base_grant_url?continue_url=..., which answers 302 to continue_url, and answers success.
            """,
        kind: .meraki)

    public static let merakiSignOn = Scenario(
        name: "meraki-signon",
        summary: "Cisco Meraki's sign-on splash: a username and password form posting to Meraki's login_url with the splash server's success_url.",
        expectedHelper: """
            Reads login_url from the probe's 302 to /splash/signon/?..., posts username, password and \
            success_url there (the secrets, else the person's answers), follows the 302 to \
            success_url?logout_url=..., answers success and keeps logout_url, which logoff opens.
            """,
        kind: .merakiSignOn)

    public static let unifi = Scenario(
        name: "unifi",
        summary: "UniFi's guest portal: an app page with no form, hotspotconfig, and a JSON login by none, voucher or password.",
        expectedHelper: """
            Follows the probe's 302 to /guest/s/default/?id=...&url=... (keeping its ec cookie), reads \
            hotspotconfig, POSTs {"by": "voucher", "voucher": ...} (or by password, or by none) as JSON to \
            /guest/s/default/login and answers success on "authorized": true; a refusal (meta.rc error) \
            asks the person again.
            """,
        kind: .unifi)

    public static let ciscoWLC = Scenario(
        name: "cisco-wlc",
        summary: "Cisco WLC web authentication: login.html whose script sets buttonClicked=4 before it posts username and password.",
        expectedHelper: """
            Follows the probe's 302 to /login.html?redirect=..., posts the page's form to /login.html with \
            buttonClicked=4, redirect_url, username and password (none with web passthrough), answers \
            success; logoff posts userStatus=1 to /logout.html.
            """,
        kind: .ciscoWLC)

    public static let aruba = Scenario(
        name: "aruba",
        summary: "Aruba's captive portal: /cgi-bin/login?cmd=login&mac&ip&essid&apname&url, a form with user, password and cmd=authenticate.",
        expectedHelper: """
            Follows the probe's 302 to /cgi-bin/login?cmd=login&..., posts user, password, cmd=authenticate \
            and url with the Login button, answers success; logoff opens /cgi-bin/login?cmd=logout.
            """,
        kind: .aruba)

    public static let hostile = Scenario(
        name: "hostile",
        summary: "Huge, compressed-bomb, dripping, looping, malformed and pathological responses, and a messy login form.",
        expectedHelper: """
            Survives every path within its limits: caps body sizes (compressed and inflated), times out \
            the drip, stops redirect loops, reports bad XML and JSON as errors, parses the messy /login \
            tolerantly (ignoring forms in comments, scripts and textareas) and logs in; the process never \
            hangs or runs out of memory.
            """,
        kind: .hostile)
}
