import Foundation
import HotspotControl
import HotspotCore
import Locking
@testable import PersonPage
import Testing
import TestSupport

/// The person's page on its own: a real `PersonPage` on loopback in front of a real control
/// server standing in for the daemon (it answers `status`, records the changes it is asked
/// for, and publishes events), asked with curl as a browser and as another local user would.
/// The page in a real browser beside the real daemon is SystemTests' WebPageTests.
@Suite("The person's page")
struct PersonPageTests {
    /// A control server answering as a daemon with one network waiting for a person, the
    /// requests it was sent, and the page in front of it.
    final class StandIn: Sendable {
        let controlSocket: String
        let server: ControlServer
        let page: PersonPage
        let asked = PlainLock<[ControlRequest]>([])

        static let status = DaemonStatus(
            networks: [.init(ssid: "City-Library", interface: "wlan0", state: .presentingUI, helper: "library", questions: nil,
                             connectivity: "captive", portalURL: "http://wifi.library.example/", autoJoinDisabled: false,
                             recentCommands: [])],
            helpers: [.init(id: "library", displayName: "City Library Wi-Fi", switchedOff: false, offFor: [])])

        init() async throws {
            controlSocket = try scratchDirectory("state") + "/" + ControlServer.fileName
            server = try Self.serve(at: controlSocket, recording: asked)
            page = try await PersonPage.start(controlSocket: controlSocket)
        }

        static func serve(at path: String, recording asked: PlainLock<[ControlRequest]>) throws -> ControlServer {
            try ControlServer(path: path) { request in
                asked.withLock { $0.append(request) }
                if request.command == .status { return ControlReply(ok: true, message: "", status: Self.status) }
                return ControlReply(ok: true, message: "did \(request.command.rawValue)", state: .authenticated)
            }
        }

        var base: String { "http://127.0.0.1:\(page.port)" }
        var token: String { page.url.components(separatedBy: "token=")[1] }
        var cookie: [String] { ["-H", "Cookie: \(PageSession.cookieName)=\(token)"] }

        func stop() async {
            await page.stop()
            server.stop()
        }
    }

    /// curl's answer: the status line's code and the body.
    static func curl(_ arguments: [String]) async throws -> (status: String, body: String) {
        let run = try await CLI.run(["-s", "--max-time", "10", "-w", "\n%{http_code}"] + arguments, executable: "/usr/bin/curl")
        let lines = run.output.split(separator: "\n", omittingEmptySubsequences: false)
        return (String(lines.last ?? ""), lines.dropLast().joined(separator: "\n"))
    }

    @Test func itListensOnLoopbackOnly() async throws {
        let socket = try scratchDirectory("state") + "/" + ControlServer.fileName
        await #expect(throws: PersonPage.StartError.self) { try await PersonPage.start(controlSocket: socket, host: "0.0.0.0") }
    }

    /// The token admits a person, from the address once and then as the cookie it sets; the
    /// Host must be the page's loopback address, whatever a name resolves to.
    @Test func onlyTheTokenAtTheLoopbackAddressIsAdmitted() async throws {
        let standIn = try await StandIn()
        #expect(try await Self.curl([standIn.base + "/"]).status == "403")
        #expect(try await Self.curl([standIn.base + "/?token=" + String(repeating: "0", count: 32)]).status == "403")
        #expect(try await Self.curl(["-H", "Host: rebound.example:\(standIn.page.port)", standIn.page.url]).status == "421")
        let headers = try await CLI.run(["-s", "-D", "-", "-o", "/dev/null", standIn.page.url], executable: "/usr/bin/curl").output.lowercased()
        #expect(headers.contains("set-cookie: hh_session=\(standIn.token); path=/; httponly; samesite=strict"), "\(headers)")
        #expect(headers.contains("content-security-policy: default-src 'none'"), "\(headers)")
        let page = try await Self.curl(standIn.cookie + [standIn.base + "/"])
        #expect(page.status == "200")
        #expect(page.body.contains("name=\"csrf-token\""))
        #expect(try await Self.curl(standIn.cookie + [standIn.base + "/app.js"]).status == "200")
        #expect(try await Self.curl(standIn.cookie + [standIn.base + "/nothing"]).status == "404")
        await standIn.stop()
    }

    /// `status` is the daemon's, relayed as JSON.
    @Test func theStatusIsTheDaemons() async throws {
        let standIn = try await StandIn()
        let answer = try await Self.curl(standIn.cookie + [standIn.base + "/api/status"])
        #expect(answer.status == "200")
        let reply = try JSONDecoder().decode(ControlReply.self, from: Data(answer.body.utf8))
        #expect(reply.status == StandIn.status)
        #expect(standIn.asked.withLock { $0 }.map(\.command) == [.status])
        await standIn.stop()
    }

    /// A change reaches the daemon only from the page itself (its Origin and CSRF token), and
    /// only one the page sends (no `watch`, no `status` through it).
    @Test func changesComeFromThePageOnly() async throws {
        let standIn = try await StandIn()
        let page = try await Self.curl(standIn.cookie + [standIn.base + "/"]).body
        let csrf = try #require(page.components(separatedBy: "name=\"csrf-token\" content=\"").last.map { String($0.prefix(32)) })
        let logoff = #"{"command":"logoff","network":"City-Library"}"#
        func post(_ body: String, _ headers: [String]) async throws -> (status: String, body: String) {
            try await Self.curl(standIn.cookie + ["-X", "POST", "-H", "Content-Type: application/json", "--data", body]
                                + headers + [standIn.base + "/api/control"])
        }
        #expect(try await post(logoff, ["-H", "Origin: http://evil.example", "-H", "X-CSRF-Token: \(csrf)"]).status == "403")
        #expect(try await post(logoff, ["-H", "Origin: \(standIn.base)"]).status == "403")
        #expect(try await post(logoff, ["-H", "Origin: \(standIn.base)", "-H", "X-CSRF-Token: wrong"]).status == "403")
        #expect(standIn.asked.withLock { $0 }.isEmpty, "nothing refused reached the daemon")

        let own = ["-H", "Origin: \(standIn.base)", "-H", "X-CSRF-Token: \(csrf)"]
        let taken = try await post(logoff, own)
        #expect(taken.status == "200")
        #expect(try JSONDecoder().decode(ControlReply.self, from: Data(taken.body.utf8)).message == "did logoff")
        #expect(standIn.asked.withLock { $0 } == [ControlRequest(command: .logoff, network: "City-Library")])
        for command in ["watch", "status"] {
            let refused = try await post(#"{"command":"\#(command)"}"#, own)
            #expect(refused.status == "400" && refused.body == "Not a request the page sends.\n", "\(command): \(refused)")
        }
        #expect(try await post("not json", own).status == "400")
        #expect(standIn.asked.withLock { $0 }.count == 1)
        await standIn.stop()
    }

    /// The daemon's events reach an open page as server-sent events, with the daemon's coming
    /// and going: a daemon that stops and starts again is followed again.
    @Test func eventsAndTheDaemonsComingAndGoingReachThePage() async throws {
        let standIn = try await StandIn()
        let events = try RunningCLI(["-sN"] + standIn.cookie + [standIn.base + "/api/events"], executable: "/usr/bin/curl")
        try await eventually("the page's stream is open") { events.standardOutput.hasPrefix(": connected\n\n") }
        let event = #"{"event":"state","network":"City-Library","from":"evaluating","to":"presenting_ui"}"#
        // The relay follows the daemon from the page's start, but nothing says when its watch
        // is taken: publish until the event arrives.
        try await eventually("the daemon's event reaches the page") {
            standIn.server.publish(Array(event.utf8))
            return events.standardOutput.contains("data: " + event)
        }
        standIn.server.stop()
        try await eventually("the page hears the daemon went away") {
            events.standardOutput.contains(#"data: {"event":"daemon","connected":false}"#)
        }
        let again = try StandIn.serve(at: standIn.controlSocket, recording: standIn.asked)
        try await eventually("the page follows the daemon again") {
            events.standardOutput.contains(#"data: {"event":"daemon","connected":true}"#)
        }
        again.stop()
        await standIn.page.stop()
        #expect(try await events.waitForExit() != nil, "the stream ends with the page")
    }

    @Test func theSessionAdmitsItsOwnHostAndOriginOnly() {
        let session = PageSession()
        session.port = 8123
        #expect(session.admitsHost("127.0.0.1:8123") && session.admitsHost("LOCALHOST:8123") && session.admitsHost("[::1]:8123"))
        #expect(!session.admitsHost("127.0.0.1:8124") && !session.admitsHost("rebound.example:8123") && !session.admitsHost(nil))
        #expect(session.isOwnOrigin("http://127.0.0.1:8123", authority: "127.0.0.1:8123"))
        #expect(!session.isOwnOrigin("http://localhost:8123", authority: "127.0.0.1:8123"))
        #expect(!session.isOwnOrigin("http://evil.example", authority: "evil.example"))
        #expect(session.token.count == 32 && session.csrfToken.count == 32 && session.token != session.csrfToken)
        #expect(PageSession.matches(session.token, session.token))
        #expect(!PageSession.matches(String(session.token.dropLast()) + "x", session.token))
        #expect(!PageSession.matches(nil, session.token) && !PageSession.matches("", session.token))
    }
}
