import Hummingbird
import NIOCore
import PortalRecording

/// `simulate --har FILE`: a recorded portal login played back. The probe is captive until
/// the client has sent the recorded steps, and open after; every other request gets the
/// recorded answer to the same method and path. The tokens the recording's pages handed out,
/// and its cookies, are replaced by fresh ones for each client, so a submission passes only
/// with the values of the page this replay served, never the recording's; what the person
/// typed may be any value of its kind. A submission that differs is refused (400) with a
/// page, and a line in the request log, saying precisely what differed.
struct RecordedPortal: PortalBehavior {
    let login: PortalLogin
    let state: PortalState
    let log: (@Sendable (String) -> Void)?
    /// The values replaced for each client: the steps' tokens and the cookies the portal set.
    private let replaced: [String]
    /// The cookies the portal set, by name, with their recorded values.
    private let portalCookies: [String: String]
    /// The step after which the network is open (the last one, by `PortalLogin`'s reading).
    private let openingStep: Int

    init(login: PortalLogin, state: PortalState, log: (@Sendable (String) -> Void)?) {
        self.login = login
        self.state = state
        self.log = log
        var cookies: [String: String] = [:]
        for exchange in login.exchanges {
            for line in exchange.setCookies {
                let pair = line.split(separator: ";", maxSplits: 1).first ?? ""
                let parts = pair.split(separator: "=", maxSplits: 1).map { String($0).trimmingSpaces }
                if parts.count == 2, !parts[1].isEmpty { cookies[parts[0]] = parts[1] }
            }
        }
        portalCookies = cookies
        var replaced = login.steps.flatMap(\.fields).filter { $0.role == .token }.map(\.value) + cookies.values
        // Longest first, so a token that contains another is replaced whole.
        replaced = Array(Set(replaced.filter { $0.count >= 4 })).sorted { $0.count > $1.count }
        self.replaced = replaced
        openingStep = login.steps.count - 1
    }

    func loginURL(for request: PortalRequest) -> String {
        guard let location = login.probe.responseHeader("location"), let target = login.probe.url.resolving(location) else {
            return url(login.landing.url, for: request)
        }
        return url(target, for: request)
    }

    func captiveProbe(_ request: PortalRequest) -> Response {
        let status = login.probe.isRedirect ? HTTPResponse.Status(code: login.probe.status) : .found
        return .redirection(to: loginURL(for: request), status: status)
    }

    func respond(to request: PortalRequest) -> Response? {
        // A script's JSON call sends its fields as an object's members.
        let sent = request.isGet ? request.query
            : request.body.hasPrefix("{") ? Dictionary(LoginStep.members(ofJSON: request.body), uniquingKeysWith: { first, _ in first })
            : request.form
        let candidates = login.steps.indices.filter { index in
            let step = login.steps[index]
            // A GET form's submission has all its fields in the query; a page of the same path does not.
            return step.request.method == request.method.rawValue && step.request.url.path == request.path
                && (request.isPost || Set(step.fields.map(\.name)).isSubset(of: sent.keys))
        }
        if !candidates.isEmpty {
            let done = state.withClient(request.client) { $0.replayStepsDone }
            // The step whose fields the request has, else the client's next one, for the differences.
            let index = candidates.first { Set(login.steps[$0].fields.map(\.name)) == Set(sent.keys) && $0 >= done }
                ?? candidates.first { $0 >= done } ?? candidates[0]
            return submit(request, step: index, sent: sent)
        }
        guard let recorded = answer(to: request) else { return nil }
        if recorded.entry == login.logoff?.entry { state.logOut(request.client) }
        return serve(recorded, for: request)
    }

    /// The recorded exchange that answers `request`: the same method and path, the same
    /// query when there is one so, the portal's pages before its other answers.
    private func answer(to request: PortalRequest) -> RecordedExchange? {
        let matching = login.exchanges.filter { exchange in
            exchange.method == request.method.rawValue || request.method == .head && exchange.method == "GET"
        }.filter { $0.url.path == request.path && $0.status != 0 && !Self.isProbePath($0.url.path) }
        let query = restore(request.rawQuery, for: request.client)
        return matching.first { ($0.url.query ?? "") == query } ?? matching.first
    }

    private static func isProbePath(_ path: String) -> Bool { path.hasSuffix("generate_204") || path == "/hotspot-detect.html" }

    private func submit(_ request: PortalRequest, step index: Int, sent: [String: String]) -> Response {
        let step = login.steps[index]
        let differences = self.differences(request, step: step, sent: sent)
        guard differences.isEmpty else {
            log?("har: refused \(request.method) \(request.path) (step \(index + 1)): " + differences.joined(separator: "; "))
            let items = differences.map { "<li>\(Pages.escape($0))</li>" }.joined(separator: "\n")
            return .html(Pages.page(title: "Refused by the replay", body: """
                <p>This is not what the recorded login sent at step \(index + 1):</p>
                <ul id="differences">
                \(items)
                </ul>
                """), status: .badRequest)
        }
        let reached = state.withClient(request.client) { client in
            client.replayStepsDone = max(client.replayStepsDone, index + 1)
            if index >= openingStep, step.request.status < 400 { client.logIn(for: nil, at: request.now) }
            return client.replayStepsDone
        }
        log?("har: accepted \(request.method) \(request.path) (step \(index + 1) of \(login.steps.count), \(reached) done)")
        return serve(step.request, for: request)
    }

    /// What `request` sent that a browser replaying the recording would not have.
    func differences(_ request: PortalRequest, step: LoginStep, sent: [String: String]) -> [String] {
        var differences: [String] = []
        let recorded = Set(step.fields.map(\.name))
        for field in step.fields {
            guard let value = sent[field.name] else {
                differences.append("\(field.name) is missing (\(Self.describe(field.role)))")
                continue
            }
            switch field.role {
            case .typed(let kind):
                if let problem = Self.problem(with: value, of: kind) { differences.append("\(field.name): \(problem)") }
            case .token:
                if value == field.value {
                    differences.append("\(field.name) is the recording's token, not the one the page served")
                } else if value != fresh(field.value, for: request.client) {
                    differences.append("\(field.name) is not the token the page served")
                }
            case .fromPage, .fromAddress, .ticked, .button, .fixed:
                if value != linked(replace(field.value, for: request.client), for: request) {
                    differences.append("\(field.name) is \"\(value)\", the recorded login sent the page's value (\(Self.describe(field.role)))")
                }
            }
        }
        for name in sent.keys.sorted() where !recorded.contains(name) {
            differences.append("\(name) was sent; the recorded login did not send it")
        }
        let cookieHeader = step.request.requestHeader("cookie") ?? ""
        for pair in cookieHeader.split(separator: ";") {
            let name = String(pair.split(separator: "=", maxSplits: 1).first ?? "").trimmingSpaces
            guard let recordedValue = portalCookies[name] else { continue }
            if request.cookies[name]?.value != fresh(recordedValue, for: request.client) {
                differences.append("the cookie \(name) the portal set was not sent back")
            }
        }
        return differences
    }

    private static func describe(_ role: SubmittedField.Role) -> String {
        switch role {
        case .typed(let kind): "typed by the person: \(kind.rawValue)"
        case .token: "a token of the page"
        case .fromPage: "a field of the page"
        case .fromAddress(let parameter): "the page address's \(parameter)"
        case .ticked: "a box ticked"
        case .button: "the button clicked"
        case .fixed: "a value chosen"
        }
    }

    /// Why `value` is not something a person could have typed as `kind`, nil when it could be.
    static func problem(with value: String, of kind: TypedKind) -> String? {
        if value.trimmingSpaces.isEmpty { return "empty, where the person typed \(kind.rawValue == "email" ? "an" : "a") \(kind.rawValue)" }
        switch kind {
        case .email: return EmailPortal.looksLikeEmail(value) ? nil : "not an email address"
        case .number: return value.allSatisfy(\.isNumber) ? nil : "not a number"
        default: return nil
        }
    }

    /// The recorded answer, its tokens and cookies this client's, its links to the recorded
    /// hosts sent to this replay.
    private func serve(_ exchange: RecordedExchange, for request: PortalRequest) -> Response {
        guard exchange.status != 0 else {
            return .html(Pages.page(title: "No answer", body: "<p>The recording has no answer to this request.</p>"), status: .badGateway)
        }
        var headers: HTTPFields = [.cacheControl: "no-store"]
        headers[.contentType] = exchange.responseContentType.isEmpty ? "application/octet-stream" : exchange.responseContentType
        if let location = exchange.responseHeader("location"), let target = exchange.url.resolving(location) {
            headers[.location] = url(target, for: request)
        }
        headers[values: .setCookie] = exchange.setCookies.map { replace($0, for: request.client) }
        let isText = exchange.isHTML || exchange.isJSON || exchange.responseContentType.hasPrefix("text/")
        let body = isText ? Array(linked(replace(exchange.responseText, for: request.client), for: request).utf8) : exchange.responseBody
        return Response(status: .init(code: exchange.status), headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }

    /// `target` on this replay: its host kept when it is a name (the simulator's DNS answers
    /// every name), the request's when it is an address, on the request's port, over HTTP;
    /// the recorded portal's URLs in its query (Meraki's `base_grant_url`) on this replay too.
    func url(_ target: RecordedURL, for request: PortalRequest) -> String {
        let port = request.authority.lastIndex(of: ":").map { String(request.authority[$0...]) } ?? ""
        let requestHost = port.isEmpty ? request.authority : String(request.authority.dropLast(port.count))
        let host = target.hostIsAddress ? requestHost : target.host
        let query = target.query.map { "?" + linked($0, for: request) } ?? ""
        return replace("http://\(host)\(port)\(target.path)\(query)", for: request.client)
    }

    /// `text` with the recorded portal's absolute URLs pointed at this replay, as they are and
    /// percent-encoded (in a query).
    private func linked(_ text: String, for request: PortalRequest) -> String {
        var text = text
        for host in login.portalHosts {
            for scheme in ["http://", "https://"] {
                for authority in Set(login.exchanges.filter { $0.url.host == host }.map(\.url.authority)).sorted(by: { $0.count > $1.count }) {
                    guard let target = RecordedURL(scheme + authority + "/") else { continue }
                    let replacement = String(url(target, for: request).dropLast())
                    text = text.replacing(scheme + authority, with: replacement)
                    let encode = { (url: String) in String(FormEncoding.encode([("", url)]).dropFirst()) }
                    text = text.replacing(encode(scheme + authority), with: encode(replacement))
                }
            }
        }
        return text
    }

    /// The client's fresh value for a recorded one, made at first use: random hex as long.
    private func fresh(_ recorded: String, for client: String) -> String {
        state.withClient(client) { record in
            if let value = record.replayValues[recorded] { return value }
            var value = ""
            while value.count < max(recorded.count, 16) { value += randomToken() }
            value = String(value.prefix(max(recorded.count, 16)))
            record.replayValues[recorded] = value
            return value
        }
    }

    /// `text` with every recorded value replaced by the client's fresh one: as it is,
    /// percent-encoded (in a URL's query) and escaped (in an HTML attribute).
    private func replace(_ text: String, for client: String) -> String {
        replaced.reduce(text) { text, value in
            var text = text
            if text.contains(value) { text = text.replacing(value, with: fresh(value, for: client)) }
            for encoded in [String(FormEncoding.encode([("", value)]).dropFirst()), Pages.escape(value)]
            where encoded != value && text.contains(encoded) {
                text = text.replacing(encoded, with: fresh(value, for: client))
            }
            return text
        }
    }

    /// `text` with this client's fresh values turned back into the recorded ones.
    private func restore(_ text: String, for client: String) -> String {
        let values = state.withClient(client) { $0.replayValues }
        return values.reduce(text) { text, pair in text.replacing(pair.value, with: pair.key) }
    }
}
