/// The knobs of the scenarios. Each scenario reads the ones it needs; a knob left `nil`
/// takes the running scenario's own default.
public struct ScenarioSettings: Sendable, Hashable {
    /// The username `credentials`, `wispr`, `coovachilli`, `pfsense`, `opnsense`, `mikrotik`,
    /// `meraki-signon`, `cisco-wlc` and `aruba` accept.
    public var username = "guest"
    /// The password those accept, and `unifi` with `by` password.
    public var password = "aroma-2026"
    /// The voucher code `pfsense` accepts instead of a username and password.
    public var voucher = "7Fh2-9kQx"
    /// `opnsense`: whether the zone authenticates (`authType` `normal`); without, a logon
    /// needs no credentials (`none`).
    public var opnsenseAuthenticates = true
    /// `mikrotik`: HTTP-PAP (the password sent as it is) instead of HTTP-CHAP.
    public var mikrotikPAP = false
    /// `unifi`: how the guest portal lets a device in (its `hotspotconfig`).
    public var unifiAuthentication = UniFiAuthentication.voucher
    /// `unifi`: the voucher it accepts (UniFi's are ten digits, shown as two groups of five).
    public var unifiVoucher = "48213-90577"
    /// `cisco-wlc`: web passthrough (Accept only, no credentials) instead of web authentication.
    public var wlcPassthrough = false
    /// The venue's name, shown on the pages and in WISPr's LocationName.
    public var venueName = "Aroma Cafe"
    /// How long a login lasts. `nil`: 2 s for `session-expiry`, 30 s for `capport`, until
    /// logoff for the others.
    public var sessionLength: Duration?
    /// How many logins of each client `flaky` refuses with 503 before one succeeds.
    public var failingLogins = 2
    /// The delay before every response. `nil`: 1.5 s for `slow`, none for the others.
    public var latency: Duration?
    /// `rate-limited` refuses a login that comes sooner than this after the client's previous attempt.
    public var minimumLoginInterval: Duration = .seconds(1)
    /// `click-through`: the terms form also has an "I decline" button; a post that sends it is
    /// refused, as a person clicking it would be.
    public var termsDeclineButton = false
    /// `wispr`: the probe answers a Proxy message (110) whose NextURL leads to the Redirect.
    public var wisprProxyStep = false
    /// `wispr`: a login answers 201 (pending) and its LoginResultsURL answers 50 once this many
    /// seconds have passed; `nil` for an immediate answer.
    public var wisprPendingDelay: Int?
    /// `wispr`: every login with good credentials answers this ResponseCode (102 RADIUS error,
    /// 105 network administrator error, 255 gateway error...) with a ReplyMessage instead of 50.
    public var wisprRefusal: Int?
    /// `wispr`: the login's AuthenticationReply is broken XML without a MessageType.
    public var wisprMalformedReply = false
    /// `wispr`: the messages are WISPr 2.0's: a namespaced envelope with VersionLow and VersionHigh.
    public var wisprVersion2 = false
    /// `capport`: whether the API says the session can be extended (`can-extend-session`).
    public var capportCanExtendSession = true
    /// The name a captive probe's redirect points to (with the probe's port), as a venue's
    /// portal lives on its own host; `nil`: the name the probe was sent to.
    public var portalHost: String?

    public init() {}

    /// UniFi's guest portal's ways in: `by` none (click-through), voucher, or password.
    public enum UniFiAuthentication: Sendable, Hashable {
        case none, voucher, password
    }

    func sessionLength(for kind: Scenario.Kind) -> Duration? {
        sessionLength ?? (kind == .sessionExpiry ? .seconds(2) : kind == .capport ? .seconds(30) : nil)
    }

    func latency(for kind: Scenario.Kind) -> Duration {
        latency ?? (kind == .slow ? .milliseconds(1500) : .zero)
    }
}
