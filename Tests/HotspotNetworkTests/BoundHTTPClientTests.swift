import Foundation
import HotspotCore
import HotspotNetwork
import Testing
import TestSupport

@Suite("Bound HTTP against local servers", .serialized)
struct BoundHTTPClientTests {
    static let loopbackHosts = ["127.0.0.1", "localhost", "portal.test", "*.portal.test"].map { try! HostPattern.parse($0).get() }

    func client(_ hosts: [HostPattern] = loopbackHosts, cookies: CookieJar? = nil,
                binding: NetworkBinding = NetworkBinding()) -> BoundHTTPClient {
        BoundHTTPClient(binding: binding, allowedHosts: hosts, cookies: cookies)
    }

    func failure(_ body: () throws(HTTPFailure) -> HTTPResponse) -> HTTPFailure? {
        do {
            _ = try body()
            return nil
        } catch {
            return error
        }
    }

    @Test func getAndPostBodies() async throws {
        let server = try await TestHTTPServer.start()
        defer { server.stop() }
        let base = "http://127.0.0.1:\(server.port)"
        let hello = try client().perform(HTTPRequest(url: base + "/hello"))
        #expect(hello.status == 200)
        #expect(String(decoding: hello.body, as: UTF8.self) == "hello")
        #expect(hello.url == base + "/hello")
        #expect(hello.header("content-length") == "5")

        let posted = try client().perform(HTTPRequest(method: "POST", url: base + "/echo",
                                                      headers: [("Content-Type", "text/plain")], body: Array("a=1".utf8)))
        #expect(String(decoding: posted.body, as: UTF8.self) == "POST|text/plain|a=1")
        let custom = try client().perform(HTTPRequest(url: base + "/echo", headers: [("X-Test", "yes")]))
        #expect(String(decoding: custom.body, as: UTF8.self) == "GET|yes")
        // A body does not turn another method into a POST.
        let getWithBody = try client().perform(HTTPRequest(method: "GET", url: base + "/echo", body: Array("x".utf8)))
        #expect(String(decoding: getWithBody.body, as: UTF8.self) == "GET|")
        let emptyPost = try client().perform(HTTPRequest(method: "POST", url: base + "/echo"))
        #expect(String(decoding: emptyPost.body, as: UTF8.self).hasPrefix("POST|"))
        // Loading libcurl set GnuTLS's switch only while loading; processes this one starts
        // do not inherit it.
        #expect(getenv("GNUTLS_NO_IMPLICIT_INIT") == nil)
    }

    @Test func everyRedirectKind() async throws {
        let server = try await TestHTTPServer.start()
        defer { server.stop() }
        let base = "http://127.0.0.1:\(server.port)"
        for code in [301, 302, 303, 307, 308] {
            let response = try client().perform(HTTPRequest(url: base + "/redirect/\(code)?to=/hello"))
            #expect(response.status == 200)
            #expect(response.url == base + "/hello")
            #expect(response.redirects.map(\.status) == [code])
            #expect(response.redirects.map(\.url) == [base + "/hello"])
        }
        // A relative Location resolves against the URL it came from.
        let relative = try client().perform(HTTPRequest(url: base + "/redirect/302?to=../hello"))
        #expect(relative.url == base + "/hello")
        // 303 turns a POST into a GET; 307 and 308 keep the method and the body.
        let seeOther = try client().perform(HTTPRequest(method: "POST", url: base + "/redirect/303?to=/echo", body: Array("x".utf8)))
        #expect(String(decoding: seeOther.body, as: UTF8.self) == "GET|")
        for code in [307, 308] {
            let kept = try client().perform(HTTPRequest(method: "POST", url: base + "/redirect/\(code)?to=/echo",
                                                        headers: [("Content-Type", "text/plain")], body: Array("kept".utf8)))
            #expect(String(decoding: kept.body, as: UTF8.self) == "POST|text/plain|kept")
        }
        // Not following gives the redirect itself.
        let unfollowed = try client().perform(HTTPRequest(url: base + "/redirect/302?to=/hello", followRedirects: false))
        #expect(unfollowed.status == 302)
        #expect(unfollowed.header("location") == "/hello")
    }

    @Test func redirectLoopsAndTheRedirectLimit() async throws {
        let server = try await TestHTTPServer.start()
        defer { server.stop() }
        let base = "http://127.0.0.1:\(server.port)"
        let loop = failure { () throws(HTTPFailure) in try client().perform(HTTPRequest(url: base + "/loop", maxRedirects: 5)) }
        #expect(loop?.kind == .redirectLoop)
        #expect(loop?.description.hasPrefix("redirect_loop: more than 5 redirects") == true)
        #expect(server.hostsReached.count == 6)
    }

    @Test func everyHopIsCheckedBeforeAnythingIsSent() async throws {
        let server = try await TestHTTPServer.start()
        let dns = TestDNSServer()
        defer { server.stop(); dns.stop() }
        let binding = NetworkBinding(resolvers: ["127.0.0.1:\(dns.port)"])
        let allowed = "http://portal.test:\(server.port)"
        // A cross-host redirect to an allowed name is followed, resolved by the network's resolver.
        let crossHost = try client(binding: binding).perform(
            HTTPRequest(url: allowed + "/redirect/302?to=http://login.portal.test:\(server.port)/hello"))
        #expect(crossHost.status == 200)
        #expect(crossHost.url == "http://login.portal.test:\(server.port)/hello")
        #expect(dns.queries.withLock { $0 } == ["portal.test", "login.portal.test"])
        // A hop to another host fails before that host sees anything, and before it is resolved.
        let before = server.hostsReached.count
        let refused = failure { () throws(HTTPFailure) in
            try client(binding: binding).perform(HTTPRequest(url: allowed + "/redirect/302?to=http://evil.test:\(server.port)/hello"))
        }
        #expect(refused == HTTPFailure(.notAllowed, "evil.test"))
        #expect(server.hostsReached.count == before + 1)
        #expect(!server.hostsReached.contains { $0.hasPrefix("evil.test") })
        #expect(!dns.queries.withLock { $0 }.contains("evil.test"))
        // Schemes other than http and https are refused.
        let file = failure { () throws(HTTPFailure) in try client().perform(HTTPRequest(url: "file:///etc/passwd")) }
        #expect(file?.kind == .notAllowed)
        // A name the resolver does not know.
        let nx = try HostPattern.parse("missing.nx").get()
        let unknown = failure { () throws(HTTPFailure) in
            try client([nx], binding: binding).perform(HTTPRequest(url: "http://missing.nx/"))
        }
        #expect(unknown?.kind == .dns)
        #expect(unknown?.description.contains("NXDOMAIN") == true)
    }

    /// A session asks the resolver for a name once while the answer lives, as a browser
    /// does; requests without a session (probes), other sessions, and answers that may not be
    /// kept ask again.
    @Test func aSessionResolvesANameOnceWhileItsAnswerLives() async throws {
        let server = try await TestHTTPServer.start()
        let dns = TestDNSServer()
        defer { server.stop(); dns.stop() }
        let binding = NetworkBinding(resolvers: ["127.0.0.1:\(dns.port)"])
        func queries() -> [String] { dns.queries.withLock { $0 } }
        #expect(try BoundDNS.lookup("portal.test", binding: binding, deadline: .now + .seconds(5))
                == ResolvedName(addresses: ["127.0.0.1"], timeToLive: .seconds(60)))
        #expect(try BoundDNS.lookup("uncached.portal.test", binding: binding, deadline: .now + .seconds(5)).timeToLive == .zero)
        dns.queries.withLock { $0 = [] }

        let jar = CookieJar()
        let base = "http://portal.test:\(server.port)"
        for path in ["/hello", "/echo", "/redirect/302?to=\(base)/hello"] {
            #expect(try client(cookies: jar, binding: binding).perform(HTTPRequest(url: base + path)).status == 200)
        }
        #expect(queries() == ["portal.test"])
        for _ in 0..<2 { _ = try client(binding: binding).perform(HTTPRequest(url: base + "/hello")) }
        _ = try client(cookies: CookieJar(), binding: binding).perform(HTTPRequest(url: base + "/hello"))
        #expect(queries() == Array(repeating: "portal.test", count: 4))
        let uncached = "http://uncached.portal.test:\(server.port)/hello"
        for _ in 0..<2 { _ = try client(cookies: jar, binding: binding).perform(HTTPRequest(url: uncached)) }
        #expect(queries().suffix(2) == ["uncached.portal.test", "uncached.portal.test"])
    }

    @Test func cookiesFollowDomainPathExpiryAndSecure() async throws {
        let server = try await TestHTTPServer.start()
        let dns = TestDNSServer()
        defer { server.stop(); dns.stop() }
        // A name, because libcurl treats plain HTTP to localhost addresses as secure.
        let base = "http://portal.test:\(server.port)"
        let jar = CookieJar()
        let binding = NetworkBinding(resolvers: ["127.0.0.1:\(dns.port)"])
        func client(cookies: CookieJar?) -> BoundHTTPClient { self.client(cookies: cookies, binding: binding) }
        let set = try client(cookies: jar).perform(HTTPRequest(url: base + "/cookies/set"))
        #expect(set.headers.filter { $0.name == "set-cookie" }.count == 4)
        let shown = try client(cookies: jar).perform(HTTPRequest(url: base + "/cookies/show"))
        // Not the Secure cookie over plain HTTP, not the expired one, not the one for another path.
        #expect(String(decoding: shown.body, as: UTF8.self) == "session=abc")
        let scoped = try client(cookies: jar).perform(HTTPRequest(url: base + "/cookies/scoped/show"))
        #expect(String(decoding: scoped.body, as: UTF8.self).split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }.sorted()
                == ["scoped=1", "session=abc"])
        // Another jar (another helper or a new session) starts empty; no jar keeps nothing.
        #expect(try client(cookies: CookieJar()).perform(HTTPRequest(url: base + "/cookies/show")).body.isEmpty)
        #expect(try client(cookies: nil).perform(HTTPRequest(url: base + "/cookies/show")).body.isEmpty)
    }

    /// A portal setting new cookies at every request cannot grow the jar past a browser's
    /// limits: the newest 50 of a domain, none over 4 KiB.
    @Test func theCookieJarKeepsWithinItsLimits() async throws {
        let server = try await TestHTTPServer.start()
        defer { server.stop() }
        let base = "http://127.0.0.1:\(server.port)"
        let jar = CookieJar()
        for round in 0..<6 {
            // Small values, so that all the jar holds fits the Cookie header libcurl sends (8 KiB).
            _ = try client(cookies: jar).perform(HTTPRequest(url: base + "/cookies/flood/\(round)?size=8"))
        }
        let sent = String(decoding: try client(cookies: jar).perform(HTTPRequest(url: base + "/cookies/show")).body, as: UTF8.self)
        let names = sent.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces).prefix { $0 != "=" } }
        #expect(names.count == CookieJar.maximumCookiesPerDomain, "\(names.count) cookies sent")
        #expect(names.contains("c5_44"), "the newest are kept")
        #expect(!names.contains("c0_0"), "the oldest went first")
        #expect(!names.contains("huge"))
    }

    @Test func cookieLinesOverTheLimitsAreDropped() {
        func line(_ domain: String, _ name: String, size: Int = 10) -> String {
            "\(domain)\tFALSE\t/\tFALSE\t0\t\(name)\t" + String(repeating: "v", count: size)
        }
        let many = (0..<60).map { line("a.example", "a\($0)") } + [line("b.example", "b0"), line("b.example", "big", size: 5000)]
        let kept = CookieJar.linesWithinLimits(many)
        #expect(kept.count == 51)
        #expect(kept.first == line("a.example", "a10"))
        #expect(kept.last == line("b.example", "b0"))
        let total = (0..<400).map { line("d\($0).example", "x") }
        #expect(CookieJar.linesWithinLimits(total) == Array(total.suffix(CookieJar.maximumCookies)))
    }

    @Test func bodiesAreCappedAfterDecompression() async throws {
        let server = try await TestHTTPServer.start()
        defer { server.stop() }
        let base = "http://127.0.0.1:\(server.port)"
        #expect(TestHTTPServer.gzipBody.count < 64 << 10)
        let inflated = try client().perform(HTTPRequest(url: base + "/gzip", maxBody: 8 << 20))
        #expect(inflated.body.count == 4 << 20)
        let bomb = failure { () throws(HTTPFailure) in try client().perform(HTTPRequest(url: base + "/gzip", maxBody: 1 << 20)) }
        #expect(bomb?.kind == .tooLarge)
        #expect(bomb?.description.contains("after decompression") == true)
        let big = failure { () throws(HTTPFailure) in try client().perform(HTTPRequest(url: base + "/big", maxBody: 1 << 20)) }
        #expect(big?.kind == .tooLarge)
    }

    /// A header line that never ends is too large, as the docs say, not "Out of memory".
    @Test func anEndlessHeaderLineIsTooLarge() async throws {
        let (listener, port) = loopbackSocket(SOCK_STREAM)
        defer { close(listener) }
        listen(listener, 1)
        Thread {
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else { return }
            defer { close(connection) }
            var request = [UInt8](repeating: 0, count: 4096)
            _ = read(connection, &request, request.count)
            let line = "HTTP/1.1 200 OK\r\nX-Endless: " + String(repeating: "a", count: 300 << 10)
            _ = line.withCString { send(connection, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
        }.start()
        let endless = failure { () throws(HTTPFailure) in try client().perform(HTTPRequest(url: "http://127.0.0.1:\(port)/")) }
        #expect(endless?.kind == .tooLarge, "\(String(describing: endless))")
        #expect(endless?.description.contains("a header line is longer than 100 KiB") == true)
    }

    @Test func aSlowDripIsCutAtTheDeadline() async throws {
        let server = try await TestHTTPServer.start()
        defer { server.stop() }
        let base = "http://127.0.0.1:\(server.port)"
        let start = ContinuousClock.now
        let (byTimeout, byDeadline, cancelled) = try await onOwnThread { [self] in
            (failure { () throws(HTTPFailure) in
                try client().perform(HTTPRequest(url: base + "/drip", timeout: .milliseconds(300)))
            },
            failure { () throws(HTTPFailure) in
                try client().perform(HTTPRequest(url: base + "/drip", timeout: .seconds(30)), deadline: .now + .milliseconds(300))
            },
            failure { () throws(HTTPFailure) in
                try client().perform(HTTPRequest(url: base + "/drip"), isCancelled: { ContinuousClock.now - start > .seconds(1) })
            })
        }
        #expect(byTimeout?.kind == .timeout)
        #expect(byDeadline?.kind == .timeout)
        #expect(cancelled == HTTPFailure(.timeout, "the command was cancelled"))
        #expect(ContinuousClock.now - start < .seconds(8))
    }

    @Test func connectAndProtocolFailures() async throws {
        let refused = failure { () throws(HTTPFailure) in try client().perform(HTTPRequest(url: "http://127.0.0.1:1/")) }
        #expect(refused?.kind == .connect)
        #expect(refused?.description == "connect: 127.0.0.1: Connection refused")
        let noInterface = failure { () throws(HTTPFailure) in
            try client(binding: NetworkBinding(interface: "no-such-if0")).perform(HTTPRequest(url: "http://127.0.0.1:1/"))
        }
        #expect(noInterface?.kind == .connect)
        // A server that speaks something else than HTTP.
        let garbage = try listenerAnswering("not http at all\r\n\r\n")
        let spoken = failure { () throws(HTTPFailure) in try client().perform(HTTPRequest(url: "http://127.0.0.1:\(garbage)/")) }
        #expect(spoken?.kind == .protocol)
    }

    @Test func tlsWithATestCA() async throws {
        let server = try await TestTLSServer.start()
        defer { server.stop() }
        let url = "https://localhost:\(server.port)/"
        var response: HTTPResponse?
        try await eventually("the TLS server to answer") {
            response = try? await onOwnThread { [self] in
                try client(binding: NetworkBinding(caFile: server.caFile)).perform(HTTPRequest(url: url))
            }
            return response != nil
        }
        #expect(response?.status == 200)
        let untrusted = failure { () throws(HTTPFailure) in try client().perform(HTTPRequest(url: url)) }
        #expect(untrusted?.kind == .tls)
        // Which check failed, in OpenSSL's words through libcurl's error buffer; it once read
        // "SSL peer certificate or SSH remote key was not OK" for every kind of failure.
        #expect(untrusted?.detail.contains("localhost: SSL certificate problem: unable to get local issuer certificate") == true,
                "\(untrusted?.detail ?? "")")
        #expect(untrusted?.detail.contains("docs/OPERATIONS.md") == true)
        let plainToTLS = failure { () throws(HTTPFailure) in
            try client(binding: NetworkBinding(caFile: server.caFile)).perform(HTTPRequest(url: "http://localhost:\(server.port)/"))
        }
        #expect(plainToTLS?.kind == .protocol)
    }

    @Test func aSessionsRequestsReuseItsConnection() throws {
        let server = try KeepAliveListener()
        defer { server.stop() }
        let url = "http://127.0.0.1:\(server.port)/"
        let session = CookieJar()
        for _ in 0..<3 { #expect(try client(cookies: session).perform(HTTPRequest(url: url)).status == 200) }
        #expect(server.connections == 1)
        // Another session's request opens a connection of its own.
        #expect(try client(cookies: CookieJar()).perform(HTTPRequest(url: url)).status == 200)
        #expect(server.connections == 2)
    }

    @Test func aSessionKeepsAFewConnectionsOnly() throws {
        let servers = try (0...CookieJar.maximumIdleConnections).map { _ in try KeepAliveListener() }
        defer { servers.forEach { $0.stop() } }
        let session = CookieJar()
        for server in servers + servers {
            #expect(try client(cookies: session).perform(HTTPRequest(url: "http://127.0.0.1:\(server.port)/")).status == 200)
        }
        // One server more than the connections kept: the second round opened one again at least
        // (which one libcurl closed is its choice: the longest idle, to the millisecond).
        #expect(servers.map(\.connections).reduce(0, +) > servers.count)
    }

    /// A TCP listener that writes `reply` to its first client and closes; returns its port.
    func listenerAnswering(_ reply: String) throws -> Int {
        let (socket, port) = loopbackSocket(SOCK_STREAM)
        listen(socket, 1)
        Thread {
            let client = accept(socket, nil, nil)
            var buffer = [UInt8](repeating: 0, count: 4096)
            _ = read(client, &buffer, buffer.count)
            _ = reply.withCString { write(client, $0, strlen($0)) }
            close(client)
            close(socket)
        }.start()
        return port
    }
}

/// An HTTP/1.1 server on loopback that keeps each connection open for more requests, as
/// servers do by default, and counts the connections it accepted.
final class KeepAliveListener: @unchecked Sendable {
    // Unchecked: `accepted` is only touched under `lock`.
    private let lock = NSLock()
    private var accepted = 0
    private let socket: Int32
    let port: Int

    init() throws {
        (socket, port) = loopbackSocket(SOCK_STREAM)
        listen(socket, 8)
        Thread { [self] in
            while true {
                let client = accept(socket, nil, nil)
                guard client >= 0 else { return }
                lock.withLock { accepted += 1 }
                Thread { Self.answer(client) }.start()
            }
        }.start()
    }

    var connections: Int { lock.withLock { accepted } }

    func stop() { shutdown(socket, Int32(SHUT_RDWR)) }

    /// Answers every request the client sends on `client` (each ends with its blank line).
    private static func answer(_ client: Int32) {
        defer { close(client) }
        var pending: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(client, &buffer, buffer.count)
            guard count > 0 else { return }
            pending += buffer[..<count]
            while let end = pending.indices.dropLast(3).first(where: { pending[$0..<($0 + 4)] == [13, 10, 13, 10] }) {
                pending.removeFirst(end + 4)
                let reply = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
                _ = reply.withCString { write(client, $0, strlen($0)) }
            }
        }
    }
}
