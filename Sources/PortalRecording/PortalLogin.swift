import JSON

/// One portal login read from a recording: the probe the portal hijacked, where it sent the
/// browser, the pages, what was submitted (forms, and calls a page's script made), and the
/// request after which the network was open.
public struct PortalLogin: Sendable {
    /// The file it was read from, for messages and the generated script's comments.
    public let source: String
    /// Every exchange, in the order the requests started.
    public let exchanges: [RecordedExchange]
    /// The connectivity check (or first page) the portal answered instead of the internet.
    public let probe: RecordedExchange
    /// The redirects from the probe to the portal's first page, the probe's own first.
    public let redirects: [RecordedExchange]
    /// The portal's first page, where the redirects end.
    public let landing: RecordedExchange
    /// The HTML pages the portal served, from the landing page on.
    public let pages: [RecordedExchange]
    /// What was sent to log in, in order: forms submitted and a page's script's calls.
    public let steps: [LoginStep]
    /// JSON the portal answered (status and access APIs), up to the login.
    public let apiCalls: [RecordedExchange]
    /// The request after which the network was open.
    public let openedAfter: RecordedExchange
    /// The check that found the network open; nil when the recording does not show one
    /// (the network is then taken as open after the last step).
    public let openCheck: RecordedExchange?
    /// A request to log out, after the login, when the recording has one.
    public let logoff: RecordedExchange?
    /// The hosts the portal's pages, forms and calls were on (not the probe's, unless the
    /// portal answered there too), in the order first contacted.
    public let portalHosts: [String]

    /// The recording's file name, without its folder.
    public var fileName: String { source.split(separator: "/").last.map(String.init) ?? source }

    /// Reads the login in the HAR at `path`.
    public static func read(_ path: String) throws(RecordingError) -> PortalLogin {
        try PortalLogin(exchanges: HARFile.read(path), source: path)
    }

    /// The paths operating systems and browsers check connectivity at.
    static let probePaths: Set<String> = [
        "/generate_204", "/gen_204", "/hotspot-detect.html", "/library/test/success.html", "/connecttest.txt", "/ncsi.txt",
        "/success.txt", "/canonical.html", "/check_network_status.txt", "/nm", "/redirect",
    ]

    static func isProbe(_ exchange: RecordedExchange) -> Bool {
        probePaths.contains(exchange.url.path) || exchange.url.path.hasSuffix("generate_204")
    }

    /// Whether a probe's answer is the internet's: 204, or Apple's and Firefox's success pages.
    static func isOpen(_ exchange: RecordedExchange) -> Bool {
        guard isProbe(exchange), !exchange.isRedirect else { return false }
        if exchange.status == 204 { return true }
        guard exchange.status == 200 else { return false }
        let text = exchange.responseText
        return text.contains("Success") || text.contains("success") || text.hasPrefix("Microsoft") || text.isEmpty && !exchange.isHTML
    }

    public init(exchanges: [RecordedExchange], source: String) throws(RecordingError) {
        func fail(_ problem: String) -> RecordingError { RecordingError(location: source, problem: problem) }
        guard !exchanges.isEmpty else { throw fail("the recording has no requests") }
        self.source = source
        self.exchanges = exchanges
        // The hijacked check: a probe redirected or answered with a page, else the first
        // request redirected to another host (a person who opened a web page instead).
        let hijacked = exchanges.first { Self.isProbe($0) && !Self.isOpen($0) && $0.status != 0 }
            ?? exchanges.first { exchange in
                exchange.isRedirect && exchange.responseHeader("location").flatMap(exchange.url.resolving)?.host != exchange.url.host
            }
        guard let probe = hijacked else {
            throw fail("""
                not a portal login: no connectivity check (\(Self.probePaths.sorted().prefix(3).joined(separator: ", ")), …) was \
                intercepted and no request was redirected to another host, among \(exchanges.count) requests \
                (record from before the portal appears: open http://neverssl.com/ or a probe URL first)
                """)
        }
        self.probe = probe
        // Follow the redirects to the portal's first page.
        var chain = [probe]
        var current = probe
        var position = exchanges.firstIndex { $0.entry == probe.entry }!
        while current.isRedirect, chain.count < 20 {
            guard let location = current.responseHeader("location"), let target = current.url.resolving(location) else {
                throw fail("\(current.label) answered \(current.status) without a Location the import can follow")
            }
            guard let next = exchanges[(position + 1)...].firstIndex(where: { $0.url == target || $0.url.withoutQuery == target.withoutQuery && $0.method == "GET" })
            else {
                throw fail("\(current.label) redirects to \(target.withoutQuery), which the recording never requested")
            }
            position = next
            current = exchanges[next]
            chain.append(current)
        }
        guard !current.isRedirect else { throw fail("the redirects from \(probe.label) go on for more than 20 steps") }
        landing = current
        redirects = Array(chain.dropLast())
        let afterLanding = Array(exchanges[position...])

        // The network is open at the first probe answered as the internet would, after the landing page.
        let open = afterLanding.first(where: Self.isOpen)
        openCheck = open
        let beforeOpen = afterLanding.prefix { $0.entry != open?.entry }
        var pages: [RecordedExchange] = []
        // Each page's forms, read once: every later request is matched against every page.
        var pagesWithForms: [(page: RecordedExchange, forms: [PageForm])] = []
        var steps: [LoginStep] = []
        var apiCalls: [RecordedExchange] = []
        // Where a redirect led is not something the person sent, even when its query has a form's fields.
        let redirectTargets = Set(exchanges.compactMap { exchange in
            exchange.isRedirect ? exchange.responseHeader("location").flatMap(exchange.url.resolving) : nil
        })
        for exchange in beforeOpen where !Self.isProbe(exchange) {
            if exchange.method == "POST" || !redirectTargets.contains(exchange.url), let step = LoginStep(exchange, after: pagesWithForms) {
                // A step answered 429 or 503 that the person sent again is one step, retried.
                if let previous = steps.last, previous.request.status >= 400, previous.matches(step) { steps.removeLast() }
                steps.append(step)
            }
            if exchange.isHTML, exchange.status == 200 || exchange.status >= 400, exchange.method == "GET" || exchange.method == "POST" {
                pages.append(exchange)
                pagesWithForms.append((exchange, PageForm.forms(in: exchange.responseText)))
            } else if exchange.isJSON {
                apiCalls.append(exchange)
            }
        }
        self.pages = pages
        self.apiCalls = apiCalls
        self.steps = steps
        let landingEntry = current.entry
        guard let opener = steps.last?.request ?? beforeOpen.last(where: { !Self.isProbe($0) && $0.entry != landingEntry }) else {
            throw fail("""
                the recording shows the portal's page (\(current.label)) but nothing sent to log in \
                (no form submitted and no call made before \(open.map { "the network was open at \($0.label)" } ?? "it ends"))
                """)
        }
        openedAfter = opener
        let openEntry = (open ?? opener).entry
        let afterOpen = exchanges.drop { $0.entry != openEntry }
        let logoff = afterOpen.first { exchange in
            let path = exchange.url.path.lowercased()
            return path.contains("logout") || path.contains("logoff") || exchange.requestBody?.contains("logout") == true
        }
        self.logoff = logoff
        var hosts: [String] = []
        for exchange in chain.dropFirst() + pages + steps.map(\.request) + apiCalls + (logoff.map { [$0] } ?? [])
        where !hosts.contains(exchange.url.host) {
            hosts.append(exchange.url.host)
        }
        portalHosts = hosts
    }
}

/// One thing sent to log in: a form of a page the portal served, submitted, or a request a
/// page's script made (an access API's logon).
public struct LoginStep: Sendable {
    public let request: RecordedExchange
    /// The page whose form was submitted; nil for a script's call.
    public let page: RecordedExchange?
    public let form: PageForm?
    /// What was sent, in the order sent.
    public let fields: [SubmittedField]
    /// For a script's call to an address the page's own address carried in its query (Meraki's
    /// `base_grant_url`): that parameter's name.
    public let target: String?
    /// Whether the fields were sent as a JSON object (a script's call, as UniFi's portal makes it).
    public let isJSON: Bool

    /// The step `exchange` is, when it sends fields: a form of one of `pages` (the latest
    /// first) whose action and method it matches, else a script's call: a POST of fields, or
    /// a GET whose query the script built that the portal answered with a page or a redirect.
    init?(_ exchange: RecordedExchange, after pages: [(page: RecordedExchange, forms: [PageForm])]) {
        let sent: [(String, String)]
        let isForm = exchange.requestContentType?.lowercased().hasPrefix("application/x-www-form-urlencoded") ?? false
        isJSON = !isForm && exchange.requestBody?.hasPrefix("{") == true
        if exchange.method == "POST" {
            guard let body = exchange.requestBody else { return nil }
            sent = isJSON ? Self.members(ofJSON: body) : FormFields.decode(body)
            if sent.isEmpty, !isJSON { return nil }
        } else if exchange.method == "GET", let query = exchange.url.query, !query.isEmpty {
            sent = FormFields.decode(query)
        } else {
            return nil
        }
        let names = Set(sent.map(\.0))
        for (page, forms) in pages.reversed() {
            // Of the page's forms sent there, the one with most of the fields sent.
            let candidates = forms.filter { form in
                guard form.method == exchange.method.lowercased(), let action = page.url.resolving(form.action) else { return false }
                return action.path == exchange.url.path && action.host == exchange.url.host
            }
            let overlap = { (form: PageForm) in names.intersection(form.fields.map(\.name)).count }
            guard let form = candidates.max(by: { overlap($0) < overlap($1) }),
                // A GET form's query names its fields; a link with a query is not a submission.
                exchange.method == "POST" || overlap(form) > 0
            else { continue }
            self.request = exchange
            self.page = page
            self.form = form
            let address = FormFields.decode(page.url.query ?? "")
            self.fields = sent.map { name, value in
                // A hidden field the page's script set before it submitted (Cisco's WLC sets
                // redirect_url from the page's address and buttonClicked to 4).
                guard let field = form.field(name), field.kind == "hidden", field.value != value, !value.isEmpty else {
                    return SubmittedField(name: name, value: value, form: form)
                }
                return SubmittedField(name: name, value: value, form: form, fromAddress: address.first { $0.1 == value }?.0, setByScript: true)
            }
            self.target = nil
            return
        }
        // Not a form of a page: a script's call, when it sends something to the portal (an
        // asset's or a JSON status's query is not a login).
        guard exchange.method == "POST" || exchange.isRedirect || exchange.isHTML else { return nil }
        self.request = exchange
        self.page = nil
        self.form = nil
        // What the script passed on from the page's address is read there again.
        let address = pages.last.map { FormFields.decode($0.page.url.query ?? "") } ?? []
        self.fields = sent.map { name, value in
            SubmittedField(name: name, value: value, form: nil, fromAddress: address.first { !value.isEmpty && $0.1 == value }?.0)
        }
        self.target = address.first { RecordedURL($0.1)?.withoutQuery == exchange.url.withoutQuery }?.0
    }

    /// The string members of a JSON object, in order (what a script sends of a form's
    /// fields; a member of another type is not something a person typed or a page served).
    public static func members(ofJSON text: String) -> [(String, String)] {
        guard case .object(let members)? = try? JSONValue.parse(Array(text.utf8), maximumDepth: 4) else { return [] }
        return members.compactMap { member in
            guard case .string(let value) = member.value else { return nil }
            return (String(decoding: member.name, as: UTF8.self), String(decoding: value, as: UTF8.self))
        }
    }

    /// Whether `other` sends the same form or call again.
    func matches(_ other: LoginStep) -> Bool {
        request.method == other.request.method && request.url.withoutQuery == other.request.url.withoutQuery
            && Set(fields.map(\.name)) == Set(other.fields.map(\.name))
    }

    /// The fields the person typed.
    public var typed: [SubmittedField] { fields.filter { if case .typed = $0.role { true } else { false } } }
}

/// A field as it was submitted, and where its value came from.
public struct SubmittedField: Sendable, Equatable {
    public enum Role: Sendable, Equatable {
        /// As the page had it: a hidden field or a value the page filled in.
        case fromPage
        /// Handed out by the page and different every time: a CSRF token, a session's ticket.
        case token
        /// A checkbox or radio button the person ticked.
        case ticked
        /// The button clicked.
        case button
        /// What the person typed.
        case typed(TypedKind)
        /// A value chosen from a list, or one the page's script added.
        case fixed
        /// Passed on by the page's script from the page's address: its query's parameter of this name.
        case fromAddress(String)
    }

    public let name: String
    public let value: String
    public let role: Role

    init(name: String, value: String, form: PageForm?, fromAddress parameter: String? = nil, setByScript: Bool = false) {
        self.name = name
        self.value = value
        if let parameter {
            role = .fromAddress(parameter)
            return
        }
        if setByScript {
            // What the script copied there from what the person typed (MikroTik's sendin form) is
            // still typed, never a value to keep.
            let kind = TypedKind(name: name, type: "text")
            role = kind != .text ? .typed(kind) : Self.looksLikeToken(value) ? .token : .fixed
            return
        }
        guard let field = form?.field(name) else {
            // Sent by a script: a credential when it is named like one, else as sent.
            let kind = TypedKind(name: name, type: "text")
            role = kind != .text || value.contains("@") ? .typed(kind) : SubmittedField.looksLikeToken(value) ? .token : .fixed
            return
        }
        switch field.kind {
        case "hidden":
            role = Self.looksLikeToken(value) || Self.tokenNames.contains(where: name.lowercased().contains) ? .token : .fromPage
        case "checkbox", "radio": role = .ticked
        case "submit", "image", "button": role = .button
        case "select": role = .fixed
        default:
            role = value.isEmpty || value == field.value ? .fromPage : .typed(TypedKind(name: name, type: field.kind))
        }
    }

    static let tokenNames = ["csrf", "token", "nonce", "session", "sid", "ticket", "challenge", "sig", "hash", "auth", "key", "mac"]

    /// At least 12 characters of letters and digits both, with no spaces and no slashes (a
    /// URL, a path): what servers hand out as tokens, not what people type.
    static func looksLikeToken(_ value: String) -> Bool {
        value.count >= 12 && !value.contains(" ") && !value.contains("/") && value.contains(where: \.isNumber) && value.contains(where: \.isLetter)
    }
}

/// What kind of thing a person typed, from the field's type and name, as the runtime's
/// `splash` library names the questions.
public enum TypedKind: String, Sendable, CaseIterable {
    case email, password, voucher, room, username, name, phone, number, text

    init(name: String, type: String) {
        let name = name.lowercased()
        switch type {
        case "email": self = .email
        case "password": self = name.contains("voucher") || name.contains("code") ? .voucher : .password
        case "tel": self = .phone
        default:
            let table: [(String, TypedKind)] = [
                ("mail", .email), ("pass", .password), ("pwd", .password), ("voucher", .voucher), ("code", .voucher),
                ("room", .room), ("user", .username), ("login", .username), ("phone", .phone), ("tel", .phone), ("name", .name),
            ]
            self = table.first { name.contains($0.0) }?.1 ?? (type == "number" ? .number : .text)
        }
    }

    /// The question's label.
    public var label: String {
        switch self {
        case .email: "Email address"
        case .password: "Password"
        case .voucher: "Voucher code"
        case .room: "Room number"
        case .username: "User name"
        case .name: "Name"
        case .phone: "Phone number"
        case .number: "Number"
        case .text: "Text"
        }
    }

    /// The question's kind in a script's `ui` (SCRIPTING.md, "Asking the person").
    public var questionKind: String {
        switch self {
        case .email: "email"
        case .password, .voucher: "password"
        case .number, .room: "text"
        default: "text"
        }
    }

    /// Whether it is kept in the secrets file (`cmd:secret`) rather than asked of the person
    /// at every login: what a venue hands out, not who the person is.
    public var isCredential: Bool { self == .password || self == .voucher || self == .username }
}

/// `application/x-www-form-urlencoded`, as forms post it and queries carry it: what the
/// import reads and the simulator decodes.
public enum FormFields {
    /// The pairs of `text`, in order.
    public static func decode(_ text: some StringProtocol) -> [(String, String)] {
        text.split(separator: "&").map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return (unescape(parts[0]), parts.count > 1 ? unescape(parts[1]) : "")
        }
    }

    /// `+` as a space and `%XX` as a byte; a `%` that starts no escape stays as it is.
    public static func unescape(_ text: some StringProtocol) -> String {
        var bytes: [UInt8] = []
        var input = Array(text.utf8)[...]
        while let byte = input.popFirst() {
            if byte == UInt8(ascii: "+") {
                bytes.append(UInt8(ascii: " "))
            } else if byte == UInt8(ascii: "%"), input.count >= 2,
                let high = hexValue(input[input.startIndex]), let low = hexValue(input[input.startIndex + 1])
            {
                bytes.append(high << 4 | low)
                input = input.dropFirst(2)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func hexValue(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
