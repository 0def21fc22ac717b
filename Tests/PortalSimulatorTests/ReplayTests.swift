import Foundation
import Locking
import PortalRecording
import PortalSimulator
import Testing
import TestSupport

/// `simulate --har`: a recorded login played back, with the page's tokens and cookies fresh
/// for each client and every difference of a submission named.
@Suite("A recorded login replayed")
struct ReplayTests {
    static let recordedToken = "5e1f0c9a8b7d6e5f4a3b"
    static let recordedCookie = "77aa88bb99cc00dd11ee"

    /// A HAR as Chromium writes one, of a login to a form with a CSRF token and a session cookie.
    static func recording() throws -> PortalLogin {
        func entry(_ second: Int, _ method: String, _ url: String, _ status: Int, headers: [(String, String)] = [],
                   requestHeaders: [(String, String)] = [], body: String = "", post: String? = nil) -> String {
            let list = { (pairs: [(String, String)]) in pairs.map { #"{"name": "\#($0.0)", "value": "\#($0.1)"}"# }.joined(separator: ", ") }
            let postData = post.map { #", "postData": {"mimeType": "application/x-www-form-urlencoded", "text": "\#($0)"}"# } ?? ""
            let text = String(data: try! JSONSerialization.data(withJSONObject: [body]), encoding: .utf8)!.dropFirst().dropLast()
            return """
                {"startedDateTime": "2026-11-28T09:00:0\(second).000+01:00", "time": 3,
                 "request": {"method": "\(method)", "url": "\(url)", "httpVersion": "HTTP/1.1", "headers": [\(list(requestHeaders))],
                             "queryString": [], "cookies": [], "headersSize": -1, "bodySize": 0\(postData)},
                 "response": {"status": \(status), "statusText": "", "httpVersion": "HTTP/1.1", "headers": [\(list(headers))], "cookies": [],
                              "content": {"size": 0, "mimeType": "text/html", "text": \(text)}, "redirectURL": "", "headersSize": -1, "bodySize": -1},
                 "cache": {}, "timings": {"send": 0, "wait": 1, "receive": 0}}
                """
        }
        let form = """
            <form method="post" action="/login"><input type="hidden" name="csrf_token" value="\(recordedToken)">
            <input type="email" name="email"><input type="checkbox" name="terms" value="yes"><button type="submit">Go</button></form>
            """
        let entries = [
            entry(1, "GET", "http://connectivitycheck.gstatic.com/generate_204", 302, headers: [("Location", "http://portal.aroma.example/login")]),
            entry(2, "GET", "http://portal.aroma.example/login", 200, headers: [("Set-Cookie", "sid=\(recordedCookie); Path=/")], body: form),
            entry(3, "POST", "http://portal.aroma.example/login", 200, requestHeaders: [("Cookie", "sid=\(recordedCookie)")],
                  body: "<p>Welcome</p>", post: "csrf_token=\(recordedToken)&email=jane%40example.org&terms=yes"),
            entry(4, "GET", "http://connectivitycheck.gstatic.com/generate_204", 204),
        ]
        let har = #"{"log": {"version": "1.2", "creator": {"name": "WebInspector", "version": "537.36"}, "entries": ["# + entries.joined(separator: ",\n") + "]}}"
        return try PortalLogin(exchanges: HARFile.parse(Array(har.utf8), name: "login.har"), source: "login.har")
    }

    @Test func acceptsASubmissionWithTheServedTokenAndCookieAndAnyAddress() async throws {
        let portal = try await SimulatedPortal.start(replaying: try Self.recording())
        let device = Device(portal, keepsCookies: true)
        let probe = try await device.get("/generate_204")
        #expect(probe.status == 302 && probe.header("location") == "http://portal.aroma.example:\(portal.port)/login")
        let page = try await device.get("/login")
        let token = try #require(page.text.firstMatch(of: /name="csrf_token" value="([0-9a-f]+)"/)?.1)
        #expect(token.count == Self.recordedToken.count && token != Self.recordedToken, "the token is fresh")
        #expect(page.header("set-cookie")?.contains(Self.recordedCookie) == false)
        let answer = try await device.post("/login", [("csrf_token", String(token)), ("email", "someone@else.example"), ("terms", "yes")])
        #expect(answer.status == 200 && answer.text.contains("Welcome"), "\(answer.text)")
        #expect(try await device.get("/generate_204").status == 204)
        await portal.stop()
    }

    @Test func refusesWhatABrowserWouldNotHaveSentAndSaysWhatDiffered() async throws {
        let log = PlainLock<[String]>([])
        let portal = try await SimulatedPortal.start(replaying: try Self.recording(), requestLog: { line in log.withLock { $0.append(line) } })
        let device = Device(portal)  // no cookie jar: the portal's cookie is not sent back
        _ = try await device.get("/login")
        let refused = try await device.post("/login", [("csrf_token", Self.recordedToken), ("email", "not-an-address"), ("extra", "1")])
        #expect(refused.status == 400)
        for difference in [
            "csrf_token is the recording&#39;s token, not the one the page served", "email: not an email address",
            "terms is missing (a box ticked)", "extra was sent; the recorded login did not send it", "the cookie sid the portal set was not sent back",
        ] {
            #expect(refused.text.contains(difference), "\(difference) in \(refused.text)")
        }
        #expect(log.withLock { $0 }.contains { $0.hasPrefix("har: refused POST /login (step 1): csrf_token is the recording's token") })
        #expect(try await device.get("/generate_204").status == 302, "still captive")
        await portal.stop()
    }
}
