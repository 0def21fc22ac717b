import Hummingbird
import JSON

/// `coovachilli`: CoovaChilli's UAM as its default configuration serves it (learned from
/// coova-chilli's `www/` pages, `ChilliLibrary.js` and its JSON interface). A captive
/// request is sent (302) to the gateway's own login page, `http://uamip:uamport/www/login.chi`,
/// with `res=notyet`, `uamip`, `uamport`, `challenge`, `mac`, `ip`, `userurl` and the rest in
/// the query. That page has no form in its HTML: `ChilliLibrary.js` builds one and logs in over
/// the JSON interface: `/json/status` hands out the challenge (`clientState` 0), and
/// `/json/logon?username=&response=` takes the CHAP response, MD5(ident 0x00 + password +
/// challenge bytes), in hex. A challenge answers one logon. `/json/logoff` ends the session.
/// Replies are JSON, or JSONP when the request names a `callback`, as ChilliLibrary.js asks.
struct CoovaChilliPortal: PortalBehavior {
    static let loginPage = "/www/login.chi"

    let state: PortalState
    let settings: ScenarioSettings

    func loginURL(for request: PortalRequest) -> String {
        let (host, port) = Self.hostAndPort(request.authority)
        let challenge = state.withClient(request.client) { CHAP.hex($0.challenge()) }
        let query: [(String, String)] = [
            ("res", "notyet"), ("uamip", host), ("uamport", port), ("challenge", challenge),
            ("called", "02-00-C6-12-00-01"), ("mac", Self.mac(of: request.client)), ("ip", request.client),
            ("nasid", "nas01"), ("sessionid", "5a1b2c3d00000001"), ("userurl", request.url(request.path)),
        ]
        return request.url(Self.loginPage + "?" + FormEncoding.encode(query))
    }

    func respond(to request: PortalRequest) -> Response? {
        guard request.isGet else { return nil }
        switch request.path {
        case Self.loginPage:
            return .html(Pages.page(title: "\(settings.venueName) HotSpot", body: """
                <script src="/www/ChilliLibrary.js"></script>
                <div id="logonForm"><noscript>This login page needs JavaScript.</noscript></div>
                <script src="/www/chilliform.chi"></script>
                """))
        case "/json/status":
            return json(status(of: request), request)
        case "/json/logon":
            let accepted = state.withClient(request.client) { client -> Bool in
                // The challenge goes with the attempt, right or wrong: a response cannot be replayed.
                guard let challenge = client.chilliChallenge, let response = request.query["response"] else { return false }
                client.chilliChallenge = nil
                let expected = CHAP.md5([0] + Array(settings.password.utf8) + challenge)
                guard request.query["username"] == settings.username, response.lowercased() == CHAP.hex(expected) else { return false }
                client.logIn(for: settings.sessionLength, at: request.now)
                return true
            }
            var reply = status(of: request)
            if !accepted { reply.append(("message", .string(Array("Login failed".utf8)))) }
            return json(reply, request)
        case "/json/logoff":
            state.logOut(request.client)
            return json(status(of: request), request)
        case "/logoff":
            state.logOut(request.client)
            return .html(Pages.page(title: "Logged out", body: "<p id=\"logged-out\">You are logged out.</p>"))
        default:
            return nil
        }
    }

    /// What `/json/status` says of the client: with a fresh challenge while it is not logged in.
    private func status(of request: PortalRequest) -> [(name: String, value: JSONValue)] {
        let (loggedIn, challenge) = state.withClient(request.client) { client in
            (client.isLoggedIn(at: request.now), client.isLoggedIn(at: request.now) ? nil : client.challenge())
        }
        var members: [(name: String, value: JSONValue)] = [
            ("version", .string(Array("1.0".utf8))), ("clientState", .integer(loggedIn ? 1 : 0)),
        ]
        if let challenge { members.append(("challenge", .string(Array(CHAP.hex(challenge).utf8)))) }
        members.append(("location", JSONValue(members: [("name", .string(Array(settings.venueName.utf8)))])))
        members.append(("redir", JSONValue(members: [
            ("logoutURL", .string(Array(request.url("/logoff").utf8))),
            ("ipAddress", .string(Array(request.client.utf8))), ("macAddress", .string(Array(Self.mac(of: request.client).utf8))),
        ])))
        if loggedIn {
            members.append(("session", JSONValue(members: [("userName", .string(Array(settings.username.utf8)))])))
        }
        return members
    }

    private func json(_ members: [(name: String, value: JSONValue)], _ request: PortalRequest) -> Response {
        let body = JSONValue(members: members).serialized(layout: .spaced)
        guard let callback = request.query["callback"], callback.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "." || $0 == "_" }) else {
            return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: body)))
        }
        return Response(status: .ok, headers: [.contentType: "text/javascript"],
                        body: .init(byteBuffer: ByteBuffer(bytes: Array("\(callback)(".utf8) + body + Array(")".utf8))))
    }

    static func hostAndPort(_ authority: String) -> (String, String) {
        guard let colon = authority.lastIndex(of: ":"), !authority[colon...].contains("]") else { return (authority, "80") }
        return (String(authority[..<colon]), String(authority[authority.index(after: colon)...]))
    }

    /// A MAC address for the client, in CoovaChilli's notation: the simulator only sees its IP address.
    static func mac(of client: String) -> String {
        let octets = client.split(separator: ".").compactMap { UInt8($0) }
        return (["02", "00"] + (octets.count == 4 ? octets : [0, 0, 0, 0]).map(CHAP.hex)).joined(separator: "-").uppercased()
    }
}

extension Client {
    /// `coovachilli` and `mikrotik`: the challenge the client's next login answers, made on first need.
    mutating func challenge() -> [UInt8] {
        if let chilliChallenge { return chilliChallenge }
        var generator = SystemRandomNumberGenerator()
        let fresh = (0..<16).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        chilliChallenge = fresh
        return fresh
    }
}
