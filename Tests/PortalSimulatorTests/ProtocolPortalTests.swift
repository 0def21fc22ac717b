import Foundation
import PortalSimulator
import Testing
import TestSupport

/// `redirect-chain`, `wispr` and `capport`.
@Suite(.serialized) struct ProtocolPortalTests {
    @Test func redirectChainCrossesHostsAndEndsWithA303() async throws {
        try await withPortal(.redirectChain) { portal async throws in
            let device = Device(portal)
            let probe = try await device.get("/generate_204")
            #expect(probe.status == 302)
            let start = try #require(probe.header("Location"))
            #expect(start == "http://auth.aroma.example:\(portal.port)/start")
            let relative = try await device.get(start)
            #expect(relative.status == 302 && relative.header("Location") == "/authorize")
            let absolute = try await device.get("http://auth.aroma.example:\(portal.port)/authorize")
            #expect(absolute.status == 302)
            let login = try #require(absolute.header("Location"))
            #expect(login.hasPrefix("http://login.aroma.example:\(portal.port)/login?ticket="))

            let form = try await device.get(login)
            #expect(form.status == 200)
            let ticket = try #require(extract(form.text, between: #"name="ticket" value=""#, and: #"""#))
            #expect(try await device.post("http://login.aroma.example:\(portal.port)/login", [("ticket", "forged")]).status == 403)
            #expect(try await device.get("/generate_204").status == 302)
            let posted = try await device.post("http://login.aroma.example:\(portal.port)/login", [("ticket", ticket)])
            #expect(posted.status == 303 && posted.header("Location") == "/welcome")
            #expect(try await device.post("http://login.aroma.example:\(portal.port)/welcome", []).status == 405)
            #expect(try await device.get("http://login.aroma.example:\(portal.port)/welcome").status == 200)
            #expect(try await device.get("/generate_204").status == 204)
        }
    }

    @Test func redirectChainNeedsTheTicketItsAuthHostIssued() async throws {
        try await withPortal(.redirectChain) { portal async throws in
            let device = Device(portal), other = Device(portal, address: "127.0.0.2")
            let issued = try await device.get("http://auth.aroma.example:\(portal.port)/authorize")
            let login = try #require(issued.header("Location"))
            #expect(try await other.get(login).status == 403)  // not the other device's ticket
            #expect(try await device.get("http://login.aroma.example:\(portal.port)/login").status == 403)
            // The login host's paths are not served on the auth host.
            #expect(try await device.get("http://auth.aroma.example:\(portal.port)/welcome").status == 302)
        }
    }

    @Test func redirectChainUsesLocalhostNamesBehindAnAddress() async throws {
        try await withPortal(.redirectChain) { portal async throws in
            let probe = try await Device(portal).get("http://127.0.0.1:\(portal.port)/generate_204")
            #expect(probe.header("Location") == "http://auth.localhost:\(portal.port)/start")
        }
    }

    @Test func wisprLoginThroughTheRedirectMessage() async throws {
        try await withPortal(.wispr) { portal async throws in
            let device = Device(portal)
            let probe = try await device.get("/generate_204")
            #expect(probe.status == 302)
            let redirect = try #require(extract(probe.text, between: "<!--", and: "-->"))
            for element in [
                "<MessageType>100</MessageType>", "<ResponseCode>0</ResponseCode>", "<AccessProcedure>1.0</AccessProcedure>",
                "<AccessLocation>", "<LocationName>Aroma Cafe</LocationName>",
                "<AbortLoginURL>http://portal.aroma.example:\(portal.port)/wispr/abort</AbortLoginURL>",
            ] {
                #expect(redirect.contains(element), "\(element)")
            }
            #expect(redirect.contains("<WISPAccessGatewayParam") && redirect.contains("<Redirect>"))
            let loginURL = try #require(extract(redirect, between: "<LoginURL>", and: "</LoginURL>"))
            #expect(try await device.get("/login").text.contains("<LoginURL>\(loginURL)</LoginURL>"))

            func login(_ password: String) async throws -> String {
                try await device.post(loginURL, [
                    ("UserName", "guest"), ("Password", password), ("button", "Login"), ("FNAME", "0"),
                    ("OriginatingServer", "http://www.example.com/"),
                ]).text
            }
            let refused = try await login("wrong")
            #expect(refused.contains("<MessageType>120</MessageType>") && refused.contains("<ResponseCode>100</ResponseCode>"))
            #expect(try await device.get("/generate_204").status == 302)

            let reply = try await login("aroma-2026")
            #expect(reply.contains("<AuthenticationReply>") && reply.contains("<MessageType>120</MessageType>"))
            #expect(reply.contains("<ResponseCode>50</ResponseCode>") && reply.contains("<ReplyMessage>"))
            #expect(try await device.get("/generate_204").status == 204)

            let logoffURL = try #require(extract(reply, between: "<LogoffURL>", and: "</LogoffURL>"))
            let logoff = try await device.get(logoffURL).text
            #expect(logoff.contains("<MessageType>130</MessageType>") && logoff.contains("<ResponseCode>150</ResponseCode>"))
            #expect(try await device.get("/generate_204").status == 302)
        }
    }

    @Test func wisprProxyStepLeadsToTheRedirect() async throws {
        var settings = ScenarioSettings()
        settings.wisprProxyStep = true
        try await withPortal(.wispr, settings: settings) { portal async throws in
            let device = Device(portal)
            let probe = try await device.get("/generate_204")
            #expect(probe.status == 302)
            #expect(probe.text.contains("<Proxy>") && probe.text.contains("<MessageType>110</MessageType>"))
            #expect(probe.text.contains("<ResponseCode>200</ResponseCode>"))
            let next = try #require(extract(probe.text, between: "<NextURL>", and: "</NextURL>"))
            #expect(probe.header("Location") == next)
            let redirect = try await device.get(next)
            #expect(redirect.text.contains("<MessageType>100</MessageType>") && redirect.text.contains("<LoginURL>"))
        }
    }

    @Test func wisprPendingLoginIsPolledUntilItSucceeds() async throws {
        var settings = ScenarioSettings()
        settings.wisprPendingDelay = 1
        let clock = TestClock()
        try await withPortal(.wispr, settings: settings, clock: clock) { portal async throws in
            let device = Device(portal)
            let reply = try await device.post("/wispr/login", [("UserName", "guest"), ("Password", "aroma-2026")]).text
            #expect(reply.contains("<ResponseCode>201</ResponseCode>") && reply.contains("<Delay>1</Delay>"))
            let results = try #require(extract(reply, between: "<LoginResultsURL>", and: "</LoginResultsURL>"))
            let early = try await device.get(results).text
            #expect(early.contains("<MessageType>140</MessageType>") && early.contains("<ResponseCode>201</ResponseCode>"))
            #expect(try await device.get("/generate_204").status == 302)
            clock.advance(by: .seconds(1))
            let done = try await device.get(results).text
            #expect(done.contains("<ResponseCode>50</ResponseCode>") && done.contains("<LogoffURL>"))
            #expect(try await device.get("/generate_204").status == 204)
        }
    }

    @Test func capportReportsTheSessionAndLogsInAtTheUserPortal() async throws {
        try await withPortal(.capport) { portal async throws in
            let device = Device(portal)
            let captive = try await device.get("/capport-api")
            #expect(captive.header("Content-Type") == "application/captive+json")
            let before = try #require(try JSONSerialization.jsonObject(with: captive.body) as? [String: Any])
            #expect(before["captive"] as? Bool == true)
            let portalURL = try #require(before["user-portal-url"] as? String)
            #expect(portalURL == "http://portal.aroma.example:\(portal.port)/portal")
            #expect(before["venue-info-url"] as? String == "http://portal.aroma.example:\(portal.port)/venue")
            #expect(before["seconds-remaining"] == nil)
            #expect(try await device.get("/generate_204").header("Location") == portalURL)

            #expect(try await device.post(portalURL, []).status == 400)
            #expect(try await device.post(portalURL, [("accept_terms", "yes")]).status == 200)
            let after = try #require(try JSONSerialization.jsonObject(with: try await device.get("/capport-api").body) as? [String: Any])
            #expect(after["captive"] as? Bool == false)
            #expect((28...30).contains(after["seconds-remaining"] as? Int ?? -1))
            #expect(after["can-extend-session"] as? Bool == true)
            #expect(try await device.get("/generate_204").status == 204)
        }
    }

    @Test func capportSessionRunsOutAndALoginExtendsIt() async throws {
        var settings = ScenarioSettings()
        settings.sessionLength = .seconds(3)
        let clock = TestClock()
        try await withPortal(.capport, settings: settings, clock: clock) { portal async throws in
            let device = Device(portal)
            func api() async throws -> [String: Any] {
                try #require(try JSONSerialization.jsonObject(with: try await device.get("/capport-api").body) as? [String: Any])
            }
            #expect(try await device.post("/portal", [("accept_terms", "yes")]).status == 200)
            clock.advance(by: .milliseconds(1500))
            let waited = try #require(try await api()["seconds-remaining"] as? Int)
            #expect(waited == 1)
            #expect(try await device.post("/portal", [("accept_terms", "yes")]).status == 200)
            let extended = try #require(try await api()["seconds-remaining"] as? Int)
            #expect(extended > waited)
        }
        settings.sessionLength = .milliseconds(500)
        let shortClock = TestClock()
        try await withPortal(.capport, settings: settings, clock: shortClock) { portal async throws in
            let device = Device(portal)
            #expect(try await device.post("/portal", [("accept_terms", "yes")]).status == 200)
            shortClock.advance(by: .milliseconds(500))
            let api = try await device.get("/capport-api")
            #expect(try JSONSerialization.jsonObject(with: api.body) as? [String: Any] != nil)
            #expect(api.text.contains(#""captive": true"#))
            #expect(try await device.get("/generate_204").status == 302)
        }
    }
}
