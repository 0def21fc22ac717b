import Foundation
import PortalSimulator
import Testing
import TestSupport

@Suite(.serialized) struct FormPortalTests {
    @Test func everyScenarioHasAUniqueNameAndADescription() {
        #expect(Set(Scenario.all.map(\.name)).count == Scenario.all.count)
        #expect(Scenario.all.map(\.name) == [
            "click-through", "credentials", "email", "redirect-chain", "session-expiry", "flaky", "slow", "rate-limited",
            "wispr", "capport", "opennds", "coovachilli", "pfsense", "opnsense", "mikrotik", "meraki", "meraki-signon", "unifi",
            "cisco-wlc", "aruba", "hostile",
        ])
        for scenario in Scenario.all {
            #expect(!scenario.summary.isEmpty && !scenario.summary.contains("\n"))
            #expect(!scenario.expectedHelper.isEmpty)
            #expect(Scenario.named(scenario.name) == scenario)
        }
        #expect(Scenario.named("nope") == nil)
    }

    @Test func probesAreCaptiveUntilTheTermsAreAcceptedAndAgainAfterLogout() async throws {
        try await withPortal(.clickThrough) { portal async throws in
            let device = Device(portal)
            let probe = try await device.get("/generate_204")
            #expect(probe.status == 302)
            // Built from the Host header, port included.
            #expect(probe.header("Location") == "http://portal.aroma.example:\(portal.port)/login")
            #expect(try await device.get("/hotspot-detect.html").status == 302)
            #expect(try await device.get("/anything/else").status == 302)

            let form = try await device.get("/login")
            #expect(form.status == 200 && form.text.contains(#"name="accept_terms""#))
            #expect(try await device.post("/login", [("connect", "1")]).status == 400)
            #expect(try await device.get("/generate_204").status == 302)

            #expect(try await device.post("/login", [("accept_terms", "yes")]).status == 200)
            #expect(try await device.get("/generate_204").status == 204)
            #expect(try await device.get("/gen/generate_204").status == 204)
            let apple = try await device.get("/hotspot-detect.html")
            #expect(apple.status == 200)
            #expect(apple.text == "<HTML><HEAD><TITLE>Success</TITLE></HEAD><BODY>Success</BODY></HTML>")
            #expect(try await device.get("/anything/else").status == 404)

            #expect(try await device.get("/logout").status == 200)
            #expect(try await device.get("/generate_204").status == 302)
        }
    }

    @Test func sessionsBelongToTheClientsAddress() async throws {
        try await withPortal(.clickThrough) { portal async throws in
            let first = Device(portal), second = Device(portal, address: "127.0.0.2")
            #expect(try await first.post("/login", [("accept_terms", "yes")]).status == 200)
            #expect(try await first.get("/generate_204").status == 204)
            #expect(try await second.get("/generate_204").status == 302)
            #expect(try await second.post("/logout", []).status == 200)
            #expect(try await first.get("/generate_204").status == 204)
        }
    }

    @Test func credentialsNeedTheCookieTheCSRFFieldAndTheRightPassword() async throws {
        try await withPortal(.credentials) { portal async throws in
            let device = Device(portal, keepsCookies: true)
            let page = try await device.get("/login")
            #expect(page.header("Set-Cookie")?.hasPrefix("portal_session=") == true)
            let csrf = try #require(extract(page.text, between: #"name="csrf_token" value=""#, and: #"""#))

            let wrong = try await device.post("/login", [("csrf_token", csrf), ("username", "guest"), ("password", "nope")])
            #expect(wrong.status == 401)
            #expect(wrong.text.contains("Wrong username or password") && wrong.text.contains(#"name="password""#))
            let forged = try await device.post("/login", [("csrf_token", "forged"), ("username", "guest"), ("password", "aroma-2026")])
            #expect(forged.status == 403)
            let cookieless = Device(portal)
            let noCookie = try await cookieless.post("/login", [("csrf_token", csrf), ("username", "guest"), ("password", "aroma-2026")])
            #expect(noCookie.status == 403)
            #expect(try await device.get("/generate_204").status == 302)

            let right = try await device.post("/login", [("csrf_token", csrf), ("username", "guest"), ("password", "aroma-2026")])
            #expect(right.status == 200)
            #expect(try await device.get("/generate_204").status == 204)
        }
    }

    @Test func credentialsAreConfigurable() async throws {
        var settings = ScenarioSettings()
        (settings.username, settings.password) = ("alice", "s3cret")
        try await withPortal(.credentials, settings: settings) { portal async throws in
            let device = Device(portal, keepsCookies: true)
            let csrf = try #require(extract(try await device.get("/login").text, between: #"name="csrf_token" value=""#, and: #"""#))
            #expect(try await device.post("/login", [("csrf_token", csrf), ("username", "alice"), ("password", "s3cret")]).status == 200)
        }
    }

    @Test func emailMustLookLikeAnAddress() async throws {
        try await withPortal(.email) { portal async throws in
            let device = Device(portal)
            #expect(try await device.get("/login").text.contains(#"type="email" name="email""#))
            for bad in ["", "guest", "guest@", "@aroma.example", "guest@aroma", "a b@aroma.example", "a@b@aroma.example"] {
                #expect(try await device.post("/login", [("email", bad)]).status == 400, "\(bad)")
            }
            #expect(try await device.get("/generate_204").status == 302)
            #expect(try await device.post("/login", [("email", "guest@aroma.example")]).status == 200)
            #expect(try await device.get("/generate_204").status == 204)
        }
    }

    @Test func sessionExpiryMakesTheProbeCaptiveAgain() async throws {
        var settings = ScenarioSettings()
        settings.sessionLength = .milliseconds(1500)
        let clock = TestClock()
        try await withPortal(.sessionExpiry, settings: settings, clock: clock) { portal async throws in
            let device = Device(portal)
            #expect(try await device.post("/login", [("accept_terms", "yes")]).status == 200)
            clock.advance(by: .milliseconds(1499))
            #expect(try await device.get("/generate_204").status == 204)
            clock.advance(by: .milliseconds(1))
            #expect(try await device.get("/generate_204").status == 302)
            #expect(try await device.post("/login", [("accept_terms", "yes")]).status == 200)
            #expect(try await device.get("/generate_204").status == 204)
        }
    }

    @Test func sessionExpiryLastsTwoSecondsByDefault() async throws {
        try await withPortal(.sessionExpiry) { portal async throws in
            let page = try await Device(portal).post("/login", [("accept_terms", "yes")])
            #expect(page.text.contains("Your session lasts 2 seconds."))
        }
    }

    @Test func flakyRefusesEachClientsFirstLoginsWith503() async throws {
        try await withPortal(.flaky) { portal async throws in
            let device = Device(portal), other = Device(portal, address: "127.0.0.2")
            #expect(try await device.post("/login", [("accept_terms", "yes")]).status == 503)
            #expect(try await device.post("/login", [("accept_terms", "yes")]).status == 503)
            #expect(try await device.get("/generate_204").status == 302)
            #expect(try await device.post("/login", [("accept_terms", "yes")]).status == 200)
            #expect(try await device.get("/generate_204").status == 204)
            #expect(try await other.post("/login", [("accept_terms", "yes")]).status == 503)
        }
        var settings = ScenarioSettings()
        settings.failingLogins = 0
        try await withPortal(.flaky, settings: settings) { portal async throws in
            #expect(try await Device(portal).post("/login", [("accept_terms", "yes")]).status == 200)
        }
    }

    @Test func slowDelaysEveryResponse() async throws {
        var settings = ScenarioSettings()
        settings.latency = .milliseconds(300)
        try await withPortal(.slow, settings: settings) { portal async throws in
            let device = Device(portal)
            let clock = ContinuousClock()
            let probe = clock.now
            #expect(try await device.get("/generate_204").status == 302)
            #expect(probe.duration(to: clock.now) >= .milliseconds(300))
            let login = clock.now
            #expect(try await device.post("/login", [("accept_terms", "yes")]).status == 200)
            #expect(login.duration(to: clock.now) >= .milliseconds(300))
        }
        try await withPortal(.slow) { portal async throws in
            let start = ContinuousClock.now
            _ = try await Device(portal).get("/generate_204")
            #expect(start.duration(to: .now) >= .milliseconds(1500))
        }
    }

    @Test func rateLimitedRefusesTheFirstAttemptAndHastyRetries() async throws {
        let clock = TestClock()
        try await withPortal(.rateLimited, clock: clock) { portal async throws in
            let device = Device(portal)
            let first = try await device.post("/login", [("accept_terms", "yes")])
            #expect(first.status == 429)
            #expect(first.header("Retry-After") == "1")
            clock.advance(by: .milliseconds(999))
            #expect(try await device.post("/login", [("accept_terms", "yes")]).status == 429)
            clock.advance(by: .seconds(1))
            #expect(try await device.post("/login", [("accept_terms", "yes")]).status == 200)
            #expect(try await device.get("/generate_204").status == 204)
        }
    }
}
