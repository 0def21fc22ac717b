import Foundation
import HotspotNetwork
import PortalSimulator
import Testing
import TestSupport
@testable import HotspotRuntime
import HotspotCore

/// The WISPr smart client, the Captive Portal API and the bundled generic helpers, through
/// the runtime against the portal simulator on loopback.
@Suite("WISPr, RFC 8908 and the bundled helpers", .serialized)
struct StandardsTests {
    static let scriptsDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../VenueHelpers").standardized.path

    static func bundled(_ name: String) throws -> String {
        try String(contentsOfFile: "\(scriptsDirectory)/\(name).lua", encoding: .utf8)
    }

    static func network(_ portal: SimulatedPortal, api: String? = nil) -> NetworkDescription {
        NetworkDescription(ssid: "Venue", probes: [Probe(url: "http://127.0.0.1:\(portal.port)/generate_204")],
                           captivePortalAPI: api.map { "http://127.0.0.1:\(portal.port)\($0)" } ?? nil)
    }

    static func configuration(secrets: [String: [String: String]] = [:], allowsPlainHTTP: Bool = true) -> HotspotRuntime.Configuration {
        var configuration = HotspotRuntime.Configuration(policy: .init(commandDeadline: .seconds(8)), secrets: Secrets(secrets))
        configuration.allowsPlainHTTPCaptivePortalAPI = allowsPlainHTTP
        return configuration
    }

    /// A helper that claims every network, runs `authenticate` and `logoff` as given and
    /// reaches only what the network names as its portal.
    static func smart(authenticate: String, logoff: String = "return \"success\"") -> String {
        """
        return {
          name = "Smart",
          hosts = { "@portal" },
          evaluate = function(cmd) return "high" end,
          authenticate = function(cmd)
        \(authenticate)
          end,
          logoff = function(cmd)
        \(logoff)
          end,
        }
        """
    }

    /// Logs in with wispr.login and keeps what it answered in cmd.store.
    static func loggingIn(password: String = "aroma-2026", extra: String = "", then: String = "") -> String {
        smart(authenticate: """
            local login = wispr.login(cmd, { username = "guest", password = "\(password)"\(extra) })
            cmd.store.result = login.result
            cmd.store.reply = login.reply
            cmd.store.code = tostring(login.response_code)
            cmd.store.logoff_url = login.logoff_url
            \(then)
            return "success"
            """, logoff: """
            local logoff = wispr.logoff(cmd)
            cmd.store.logoff = logoff.result
            return "success"
            """)
    }

    static func probe(_ network: NetworkDescription) async throws -> ConnectivityVerdict.State {
        try await onOwnThread {
            ConnectivityProbe.run(ProbeSet(network.probes, timeout: .seconds(3)), binding: NetworkBinding()).state
        }
    }

    func withPortal(_ scenario: Scenario, _ change: (inout ScenarioSettings) -> Void = { _ in },
                    _ body: (SimulatedPortal) async throws -> Void) async throws {
        var settings = ScenarioSettings()
        change(&settings)
        try await SimulatedPortal.running(scenario, settings: settings, body)
    }

    // MARK: the WISPr smart client

    @Test func wisprLoginFollowsTheProxyPollsThePendingLoginAndLogsOff() async throws {
        try await withPortal(.wispr, { $0.wisprProxyStep = true; $0.wisprPendingDelay = 1 }) { portal in
            let fixture = try await RuntimeFixture(scripts: ["smart": Self.loggingIn()], configuration: Self.configuration())
            defer { fixture.engine.shutdown() }
            let network = Self.network(portal)
            #expect(await fixture.runtime.join(network) == .authenticated)
            let store = fixture.runtime.stateDirectory.store(helper: "smart", ssid: "Venue")
            #expect(store["result"] == "success", "\(store)")
            #expect(store["code"] == "50")
            #expect(store["reply"] == "Welcome to Aroma Cafe")
            #expect(store["logoff_url"] == "http://127.0.0.1:\(portal.port)/wispr/logoff")
            #expect(store["@wispr.logoff_url"] == store["logoff_url"])
            #expect(store["@wispr.abort_login_url"] == nil)
            #expect(try await Self.probe(network) == .connected)

            #expect(await fixture.runtime.logoff("Venue") == .inactive)
            let after = fixture.runtime.stateDirectory.store(helper: "smart", ssid: "Venue")
            #expect(after["logoff"] == "success")
            #expect(after["@wispr.logoff_url"] == nil)
            #expect(try await Self.probe(network) == .captive)
        }
    }

    @Test(arguments: [
        ("wrong password", "login_failed", "100", "Invalid username or password"),
        ("radius", "radius_error", "102", "The login service is unavailable (102)"),
        ("admin", "network_admin_error", "105", "The login service is unavailable (105)"),
        ("gateway", "gateway_error", "255", "The login service is unavailable (255)"),
        ("malformed", "protocol_error", "nil", "wispr.parse: the WISPAccessGatewayParam is not well-formed XML"),
        ("wispr 2.0", "success", "50", "Welcome to Aroma Cafe"),
    ])
    func wisprOutcomes(_ case: String, _ result: String, _ code: String, _ reply: String) async throws {
        try await withPortal(.wispr, { settings in
            switch `case` {
            case "radius": settings.wisprRefusal = 102
            case "admin": settings.wisprRefusal = 105
            case "gateway": settings.wisprRefusal = 255
            case "malformed": settings.wisprMalformedReply = true
            case "wispr 2.0": settings.wisprVersion2 = true
            default: break
            }
        }) { portal in
            let script = Self.loggingIn(password: `case` == "wrong password" ? "wrong" : "aroma-2026")
            let fixture = try await RuntimeFixture(scripts: ["smart": script], configuration: Self.configuration())
            defer { fixture.engine.shutdown() }
            await fixture.runtime.join(Self.network(portal))
            let store = fixture.runtime.stateDirectory.store(helper: "smart", ssid: "Venue")
            #expect(store["result"] == result, "\(store)")
            #expect(store["code"] == code)
            #expect(store["reply"]?.hasPrefix(reply) == true, "\(store)")
            #expect((store["@wispr.logoff_url"] != nil) == (result == "success"))
        }
    }

    @Test func aPendingLoginGivenUpOnIsAborted() async throws {
        try await withPortal(.wispr, { $0.wisprPendingDelay = 30 }) { portal in
            let script = Self.loggingIn(extra: ", wait = 1", then: """
                cmd.store.pending_abort_url = cmd.store["@wispr.abort_login_url"]
                cmd.store.abort = wispr.abort(cmd).result
                cmd.store.again = wispr.abort(cmd).result
                """)
            let fixture = try await RuntimeFixture(scripts: ["smart": script], configuration: Self.configuration())
            defer { fixture.engine.shutdown() }
            await fixture.runtime.join(Self.network(portal))
            let store = fixture.runtime.stateDirectory.store(helper: "smart", ssid: "Venue")
            #expect(store["result"] == "pending", "\(store)")
            #expect(store["code"] == "201")
            #expect(store["pending_abort_url"] == "http://127.0.0.1:\(portal.port)/wispr/abort")
            #expect(store["abort"] == "aborted")
            #expect(store["again"] == "no_login_pending")
            #expect(store["@wispr.abort_login_url"] == nil)
        }
    }

    @Test func theRuntimesStoreKeysAndHostsAreOutOfTheScriptsReach() async throws {
        try await withPortal(.wispr) { portal in
            let forger = try await RuntimeFixture(
                scripts: ["smart": Self.smart(authenticate: #"cmd.store["@wispr.logoff_url"] = "http://evil.example/" return "success""#)],
                configuration: Self.configuration())
            defer { forger.engine.shutdown() }
            #expect(await forger.runtime.join(Self.network(portal)) == .failure)
            #expect(forger.events.commands(.authenticate).first?.error?.contains("cmd.store keys starting with '@' are the runtime's") == true)

            let login = "http://127.0.0.1:\(portal.port)/login"
            let stranger = try await RuntimeFixture(scripts: ["smart": Self.smart(authenticate: """
                local _, problem = cmd:http{ url = "\(login)" }
                cmd.store.before = problem
                cmd:probe()
                cmd.store.after = tostring(cmd:http{ url = "\(login)" }.status)
                return "success"
                """)], configuration: Self.configuration())
            defer { stranger.engine.shutdown() }
            #expect(await stranger.runtime.join(Self.network(portal)) == .authenticated)
            let store = stranger.runtime.stateDirectory.store(helper: "smart", ssid: "Venue")
            #expect(store["before"] == "not_allowed: 127.0.0.1")  // not the portal until the probe says so
            #expect(store["after"] == "200")
        }
    }

    // MARK: the Captive Portal API for scripts

    @Test func capportFetchGivesTheAPIsAnswerOrWhyNot() async throws {
        try await withPortal(.capport) { portal in
            let script = Self.smart(authenticate: """
                local api, problem = capport.fetch(cmd)
                cmd.store.answer = api and json.encode(api) or ("nil, " .. tostring(problem))
                return "success"
                """)
            let port = portal.port
            func answer(api: String?, allowsPlainHTTP: Bool = true) async throws -> String? {
                let fixture = try await RuntimeFixture(scripts: ["smart": script], configuration: Self.configuration(allowsPlainHTTP: allowsPlainHTTP))
                defer { fixture.engine.shutdown() }
                var network = Self.network(portal)
                network.captivePortalAPI = api
                await fixture.runtime.join(network)
                return fixture.runtime.stateDirectory.store(helper: "smart", ssid: "Venue")["answer"]
            }
            let uri = "http://127.0.0.1:\(port)/capport-api"
            let captive = try await answer(api: uri)
            let plain = try await answer(api: uri, allowsPlainHTTP: false)
            let unrestricted = try await answer(api: "urn:ietf:params:capport:unrestricted")
            let none = try await answer(api: nil)
            let wrongType = try await answer(api: "http://127.0.0.1:\(port)/venue")
            #expect(captive == #"{"api_url":"\#(uri)","can_extend_session":false,"captive":true,"user_portal_url":"http://127.0.0.1:\#(port)/portal","venue_info_url":"http://127.0.0.1:\#(port)/venue"}"#)
            #expect(plain?.hasPrefix("nil, not_allowed: \(uri): the Captive Portal API must be HTTPS") == true, "\(plain ?? "")")
            #expect(unrestricted == #"{"api_url":"urn:ietf:params:capport:unrestricted","captive":false,"unrestricted":true}"#)
            #expect(none == "nil, nil")
            #expect(wrongType?.hasPrefix("nil, protocol: the Captive Portal API answered text/html") == true, "\(wrongType ?? "")")
        }
    }

    /// A captive verdict names the portal by its best source: the Captive Portal API's
    /// user-portal-url, then a WISPr LoginURL in the page, then the probe's Location.
    @Test(arguments: [(Scenario.wispr, "wispr"), (.capport, "capport"), (.clickThrough, "location")])
    func cmdProbeNamesThePortalByItsBestSource(scenario: Scenario, source: String) async throws {
        try await withPortal(scenario) { portal in
            let script = Self.smart(authenticate: """
                local verdict = cmd:probe()
                cmd.store.state, cmd.store.source, cmd.store.url = verdict.state, verdict.portal_url_source, verdict.portal_url
                return "success"
                """)
            let fixture = try await RuntimeFixture(scripts: ["smart": script], configuration: Self.configuration())
            defer { fixture.engine.shutdown() }
            await fixture.runtime.join(Self.network(portal, api: scenario == .capport ? "/capport-api" : nil))
            let store = fixture.runtime.stateDirectory.store(helper: "smart", ssid: "Venue")
            #expect(store["state"] == "captive")
            #expect(store["source"] == source)
            if scenario == .capport { #expect(store["url"] == "http://127.0.0.1:\(portal.port)/portal") }
            if scenario == .wispr { #expect(store["url"]?.contains("/wispr/login") == true, "\(store)") }
        }
    }

    // MARK: seconds-remaining and can-extend-session

    @Test func maintainComesBeforeAnExtendableSessionRunsOut() async throws {
        try await withPortal(.capport, { $0.sessionLength = .seconds(2) }) { portal in
            let fixture = try await RuntimeFixture(scripts: ["capport": try Self.bundled("capport")], configuration: Self.configuration())
            defer { fixture.engine.shutdown() }
            let network = Self.network(portal, api: "/capport-api")
            #expect(await fixture.runtime.join(network) == .authenticated)
            // The runtime's maintain interval is 300 s: only the API's seconds-remaining brings these.
            try await eventually("two successful maintain commands") { fixture.events.commands(.maintain).filter { $0.result == .success }.count >= 2 }
            #expect(fixture.events.commands(.maintain).filter { $0.result == .success }.count >= 2)
            #expect(fixture.events.commands(.authenticate).count == 1)  // extended, never logged in again
            #expect(fixture.events.logs.contains { $0.message.contains("maintain in") == true && $0.message.contains("to extend it") })
            #expect(try await Self.probe(network) == .connected)
            await fixture.runtime.leave("Venue")
        }
    }

    @Test func aSessionThatCannotBeExtendedIsAuthenticatedAgainOnceItRunsOut() async throws {
        try await withPortal(.capport, { $0.sessionLength = .seconds(1); $0.capportCanExtendSession = false }) { portal in
            let fixture = try await RuntimeFixture(scripts: ["capport": try Self.bundled("capport")], configuration: Self.configuration())
            defer { fixture.engine.shutdown() }
            #expect(await fixture.runtime.join(Self.network(portal, api: "/capport-api")) == .authenticated)
            try await eventually("a second successful login") { fixture.events.commands(.authenticate).filter { $0.result == .success }.count >= 2 }
            #expect(fixture.events.commands(.maintain).first?.result == .authenticationRequired)
            #expect(fixture.events.commands(.authenticate).filter { $0.result == .success }.count >= 2)
            #expect(fixture.events.logs.contains { $0.message.contains("to log in again once it has run out") })
            await fixture.runtime.leave("Venue")
        }
    }

    @Test func maintainDelays() {
        let interval = Duration.seconds(300), margin = Duration.seconds(60)
        func delay(_ status: CaptivePortalStatus) -> Duration {
            BoundNetworkChecks.maintainDelay(after: status, interval: interval, margin: margin)
        }
        #expect(delay(CaptivePortalStatus(captive: false, canExtendSession: true, secondsRemaining: 200)) == .seconds(150))
        #expect(delay(CaptivePortalStatus(captive: false, canExtendSession: true, secondsRemaining: 1000)) == interval)
        #expect(delay(CaptivePortalStatus(captive: false, canExtendSession: true, secondsRemaining: 0.5)) == .seconds(1))
        #expect(delay(CaptivePortalStatus(captive: false, canExtendSession: false, secondsRemaining: 30)) == .seconds(31))
        #expect(delay(CaptivePortalStatus(captive: false, canExtendSession: true)) == interval)
        #expect(delay(CaptivePortalStatus(captive: true, canExtendSession: true, secondsRemaining: 10)) == interval)
    }

    // MARK: the bundled generic helpers

    @Test func bundledWISPrHelperLogsInWithItsSecretsAndLogsOff() async throws {
        try await withPortal(.wispr, { $0.wisprPendingDelay = 1 }) { portal in
            let fixture = try await RuntimeFixture(
                scripts: ["wispr": try Self.bundled("wispr")],
                configuration: Self.configuration(secrets: ["wispr": ["username": "guest", "password": "aroma-2026"]]))
            defer { fixture.engine.shutdown() }
            let network = Self.network(portal)
            #expect(await fixture.runtime.join(network) == .authenticated)
            #expect(fixture.events.commands(.evaluate).first?.confidence == .low)
            #expect(try await Self.probe(network) == .connected)
            #expect(await fixture.runtime.logoff("Venue") == .inactive)
            #expect(try await Self.probe(network) == .captive)
        }
    }

    @Test func bundledWISPrHelperAsksAPersonWhenTheGatewayRefusesItsCredentials() async throws {
        try await withPortal(.wispr) { portal in
            let fixture = try await RuntimeFixture(
                scripts: ["wispr": try Self.bundled("wispr")],
                configuration: Self.configuration(secrets: ["wispr": ["username": "guest", "password": "stale"]]))
            defer { fixture.engine.shutdown() }
            #expect(await fixture.runtime.join(Self.network(portal)) == .presentingUI)
            #expect(await fixture.runtime.presentUI("Venue", answers: ["username": "guest", "password": "aroma-2026"]) == .authenticated)
        }
    }

    @Test func bundledWISPrHelperClaimsNothingWithoutCredentials() async throws {
        try await withPortal(.wispr) { portal in
            let fixture = try await RuntimeFixture(scripts: ["wispr": try Self.bundled("wispr")], configuration: Self.configuration())
            defer { fixture.engine.shutdown() }
            await fixture.runtime.join(Self.network(portal))
            #expect(fixture.events.commands(.evaluate).first?.confidence == Confidence.none)
            #expect(fixture.events.commands(.authenticate).isEmpty)
        }
    }

    @Test func bundledClickThroughHelperAcceptsTheTerms() async throws {
        try await withPortal(.clickThrough) { portal in
            let fixture = try await RuntimeFixture(scripts: ["click-through": try Self.bundled("click-through")],
                                                   configuration: Self.configuration())
            defer { fixture.engine.shutdown() }
            let network = Self.network(portal)
            #expect(await fixture.runtime.join(network) == .authenticated)
            #expect(fixture.events.commands(.evaluate).first?.confidence == .low)
            #expect(await fixture.runtime.chosenHelper(of: "Venue") == "click-through")
            #expect(try await Self.probe(network) == .connected)
        }
    }

    /// openNDS's splash, as the simulator rebuilds it: the helper sends the GET form's fields in
    /// the page's order, then the "Thank you" page's second form. Sorted, as url.query sorts
    /// them (what the helper sent before), the first form gets 511.
    @Test func bundledClickThroughHelperGoesThroughOpenNDSsTwoForms() async throws {
        try await withPortal(.opennds) { portal in
            let sorted = try await RuntimeFixture(scripts: ["sorted": """
                return {
                  name = "Sorted", hosts = { "127.0.0.1" },
                  evaluate = function(cmd) return "high" end,
                  authenticate = function(cmd)
                    local page = cmd:http{ url = cmd:probe().portal_url }
                    local form = html.forms(page.body, page.url)[1]
                    local fields = {}
                    for _, field in ipairs(form.fields) do
                      if field.name then fields[field.name] = field.value end
                    end
                    log.info("sorted: " .. cmd:http{ url = form.action .. "?" .. url.query(fields) }.status)
                    log.info("in order: " .. cmd:submit(form).status)
                    return "temporary_failure"
                  end,
                }
                """], configuration: Self.configuration())
            await sorted.runtime.join(Self.network(portal))
            sorted.engine.shutdown()
            #expect(sorted.events.logs.filter { $0.helper == "sorted" }.map(\.message) == ["sorted: 511", "in order: 200"])

            let fixture = try await RuntimeFixture(scripts: ["click-through": try Self.bundled("click-through")],
                                                   configuration: Self.configuration())
            defer { fixture.engine.shutdown() }
            let network = Self.network(portal)
            #expect(await fixture.runtime.join(network) == .authenticated, "\(fixture.events.all)")
            #expect(fixture.events.commands(.authenticate).count == 1)
            #expect(try await Self.probe(network) == .connected)
        }
    }

    /// A generic helper's cmd:submit reaches where a form of a page it read is sent; a form it
    /// made up, naming another host, widens nothing.
    @Test func aGenericHelperSubmitsOnlyFormsOfPagesItRead() async throws {
        try await withPortal(.clickThrough) { portal in
            let fixture = try await RuntimeFixture(scripts: ["generic": """
                return {
                  name = "Generic", hosts = { "@portal" },
                  evaluate = function(cmd) return "high" end,
                  authenticate = function(cmd)
                    local page = cmd:http{ url = cmd:probe().portal_url }
                    local made_up = { action = "http://198.18.0.99/steal", method = "get", fields = {} }
                    local _, problem = cmd:submit(made_up)
                    log.info("made up: " .. tostring(problem):sub(1, 11))
                    local form = html.forms(page.body, page.url)[1]
                    local answer = cmd:submit(form, { values = { accept_terms = true } })
                    log.info("read: " .. answer.status)
                    return "success"
                  end,
                }
                """], configuration: Self.configuration())
            defer { fixture.engine.shutdown() }
            #expect(await fixture.runtime.join(Self.network(portal)) == .authenticated)
            #expect(fixture.events.logs.filter { $0.helper == "generic" }.map(\.message) == ["made up: not_allowed", "read: 200"])
        }
    }

    /// On a terms form with an accepting and a declining button, the helper submits as a
    /// browser clicking the accepting one: the portal refuses a form that sends both.
    @Test func bundledClickThroughHelperClicksOnlyTheAcceptingButton() async throws {
        try await withPortal(.clickThrough, { $0.termsDeclineButton = true }) { portal in
            let fixture = try await RuntimeFixture(scripts: ["click-through": try Self.bundled("click-through")],
                                                   configuration: Self.configuration())
            defer { fixture.engine.shutdown() }
            #expect(await fixture.runtime.join(Self.network(portal)) == .authenticated, "\(fixture.events.all)")
        }
    }

    @Test func bundledClickThroughHelperLeavesWISPrPortalsAlone() async throws {
        try await withPortal(.wispr) { portal in
            let fixture = try await RuntimeFixture(scripts: ["click-through": try Self.bundled("click-through")],
                                                   configuration: Self.configuration())
            defer { fixture.engine.shutdown() }
            await fixture.runtime.join(Self.network(portal))
            #expect(fixture.events.commands(.evaluate).first?.confidence == Confidence.none)
        }
    }

    /// A portal that asks for what only a person knows: the helper asks them for the page's
    /// fields (before, it claimed none of these portals), and logs in with their answers; or
    /// with the network's secrets, without asking.
    @Test func bundledClickThroughHelperAsksThePersonWhatThePageAsks() async throws {
        try await withPortal(.email) { portal in
            let fixture = try await RuntimeFixture(scripts: ["click-through": try Self.bundled("click-through")],
                                                   configuration: Self.configuration())
            defer { fixture.engine.shutdown() }
            let network = Self.network(portal)
            #expect(await fixture.runtime.join(network) == .presentingUI)
            let questions = try #require(await fixture.runtime.questions(of: "Venue"))
            #expect(questions.fields.map(\.name) == ["email"])
            #expect(questions.fields.map(\.kind) == [.email])
            #expect(await fixture.runtime.presentUI("Venue", answers: ["email": "reader@example.org"]) == .authenticated)
            #expect(try await Self.probe(network) == .connected)
        }
        try await withPortal(.credentials) { portal in
            let fixture = try await RuntimeFixture(
                scripts: ["click-through": try Self.bundled("click-through")],
                configuration: Self.configuration(secrets: ["click-through": ["username": "guest", "password": "aroma-2026"]]))
            defer { fixture.engine.shutdown() }
            let network = Self.network(portal)
            #expect(await fixture.runtime.join(network) == .authenticated, "\(fixture.events.all)")
            #expect(try await Self.probe(network) == .connected)
        }
    }

    /// CoovaChilli's UAM, as the simulator rebuilds it: its login page has no form (its
    /// JavaScript makes one), so click-through.lua claims nothing and coovachilli.lua logs in
    /// over the JSON interface with the CHAP response of the network's secrets; maintain reads
    /// /json/status and logoff calls /json/logoff, on the gateway it kept from the login.
    @Test func bundledCoovaChilliHelperLogsInOverTheJSONInterfaceAndLogsOff() async throws {
        try await withPortal(.coovachilli) { portal in
            var configuration = Self.configuration(secrets: ["coovachilli": ["username": "guest", "password": "aroma-2026"]])
            configuration.policy.maintainInterval = .seconds(1)
            let scripts = ["coovachilli": try Self.bundled("coovachilli"), "click-through": try Self.bundled("click-through")]
            let fixture = try await RuntimeFixture(scripts: scripts, configuration: configuration)
            defer { fixture.engine.shutdown() }
            let network = Self.network(portal)
            #expect(await fixture.runtime.join(network) == .authenticated, "\(fixture.events.all)")
            #expect(await fixture.runtime.chosenHelper(of: "Venue") == "coovachilli")
            #expect(try await Self.probe(network) == .connected)
            try await eventually("a successful maintain") { fixture.events.commands(.maintain).contains { $0.result == .success } }
            #expect(await fixture.runtime.logoff("Venue") == .inactive)
            #expect(fixture.events.commands(.logoff).first?.result == .success, "\(fixture.events.all)")
            #expect(try await Self.probe(network) == .captive)
        }
    }

    /// Without secrets the CoovaChilli helper asks the person; a wrong password is refused by
    /// the gateway (the CHAP response does not match) and the right one lets the device in.
    @Test func bundledCoovaChilliHelperAsksThePersonForTheCredentials() async throws {
        try await withPortal(.coovachilli) { portal in
            let fixture = try await RuntimeFixture(scripts: ["coovachilli": try Self.bundled("coovachilli")], configuration: Self.configuration())
            defer { fixture.engine.shutdown() }
            let network = Self.network(portal)
            #expect(await fixture.runtime.join(network) == .presentingUI, "\(fixture.events.all)")
            #expect(try #require(await fixture.runtime.questions(of: "Venue")).fields.map(\.name) == ["username", "password"])
            #expect(await fixture.runtime.presentUI("Venue", answers: ["username": "guest", "password": "wrong"]) != .authenticated)
            #expect(try await Self.probe(network) == .captive)
            await fixture.runtime.leave("Venue")
            #expect(await fixture.runtime.join(network) == .presentingUI)
            #expect(await fixture.runtime.presentUI("Venue", answers: ["username": "guest", "password": "aroma-2026"]) == .authenticated,
                    "\(fixture.events.all)")
            #expect(try await Self.probe(network) == .connected)
        }
    }

    /// pfSense's portal, as the simulator rebuilds it: pfsense.lua (not click-through.lua, which
    /// would ask for a voucher too) posts the username and password of the network's secrets
    /// with the hidden zone and the accept button, and on logoff posts the logout form.
    @Test func bundledPfSenseHelperLogsInWithTheSecretsAndLogsOff() async throws {
        try await withPortal(.pfsense) { portal in
            try await Self.familyHelperLogsInAndOff("pfsense", portal, secrets: ["username": "guest", "password": "aroma-2026"])
        }
    }

    /// The bundled `helper`, beside click-through.lua (which leaves the network to it), logs in
    /// with `secrets`, the probe confirms it, a maintain succeeds when `maintains`, and its
    /// logoff logs the device out.
    static func familyHelperLogsInAndOff(_ helper: String, _ portal: SimulatedPortal, secrets: [String: String],
                                         maintains: Bool = false) async throws {
        let scripts = [helper: try Self.bundled(helper), "click-through": try Self.bundled("click-through")]
        var configuration = Self.configuration(secrets: [helper: secrets])
        if maintains { configuration.policy.maintainInterval = .seconds(1) }
        let fixture = try await RuntimeFixture(scripts: scripts, configuration: configuration)
        defer { fixture.engine.shutdown() }
        let network = Self.network(portal)
        #expect(await fixture.runtime.join(network) == .authenticated, "\(fixture.events.all)")
        #expect(await fixture.runtime.chosenHelper(of: "Venue") == helper)
        #expect(fixture.events.commands(.evaluate).allSatisfy { $0.helper == helper || $0.confidence == Confidence.none })
        #expect(try await Self.probe(network) == .connected)
        if maintains {
            try await eventually("a successful maintain") { fixture.events.commands(.maintain).contains { $0.result == .success } }
        }
        #expect(await fixture.runtime.logoff("Venue") == .inactive)
        #expect(fixture.events.commands(.logoff).first?.result == .success)
        #expect(try await Self.probe(network) == .captive)
    }

    /// With no secrets pfsense.lua asks the person for a voucher or a username and password;
    /// a voucher alone lets the device in.
    @Test func bundledPfSenseHelperTakesTheVoucherThePersonGives() async throws {
        try await withPortal(.pfsense) { portal in
            let fixture = try await RuntimeFixture(scripts: ["pfsense": try Self.bundled("pfsense")], configuration: Self.configuration())
            defer { fixture.engine.shutdown() }
            let network = Self.network(portal)
            #expect(await fixture.runtime.join(network) == .presentingUI, "\(fixture.events.all)")
            #expect(try #require(await fixture.runtime.questions(of: "Venue")).fields.map(\.name) == ["voucher", "username", "password"])
            #expect(await fixture.runtime.presentUI("Venue", answers: ["voucher": "7Fh2-9kQx"]) == .authenticated, "\(fixture.events.all)")
            #expect(try await Self.probe(network) == .connected)
        }
    }

    /// OPNsense's portal, as the simulator rebuilds it: its form is sent only by its script, so
    /// opnsense.lua (not click-through.lua) logs in over the access API with the secrets,
    /// maintains with its status and logs off with its logoff; a zone without authentication
    /// takes a logon with no credentials.
    @Test func bundledOPNsenseHelperLogsInOverTheAccessAPIAndLogsOff() async throws {
        try await withPortal(.opnsense) { portal in
            try await Self.familyHelperLogsInAndOff("opnsense", portal, secrets: ["username": "guest", "password": "aroma-2026"], maintains: true)
        }
        try await withPortal(.opnsense, { $0.opnsenseAuthenticates = false }) { portal in
            let fixture = try await RuntimeFixture(scripts: ["opnsense": try Self.bundled("opnsense")], configuration: Self.configuration())
            defer { fixture.engine.shutdown() }
            #expect(await fixture.runtime.join(Self.network(portal)) == .authenticated, "\(fixture.events.all)")
            #expect(try await Self.probe(Self.network(portal)) == .connected)
        }
    }

    /// MikroTik's HotSpot, as the simulator rebuilds it: with HTTP-CHAP mikrotik.lua (not
    /// click-through.lua, which would send the password itself) hashes the password with the
    /// page's chap-id and chap-challenge and posts the sendin form; maintain reads /status,
    /// logoff opens /logout. With HTTP-PAP it sends the person's password as it is.
    @Test func bundledMikroTikHelperLogsInWithCHAPOrPAPAndLogsOff() async throws {
        try await withPortal(.mikrotik) { portal in
            try await Self.familyHelperLogsInAndOff("mikrotik", portal, secrets: ["username": "guest", "password": "aroma-2026"], maintains: true)
        }
        try await withPortal(.mikrotik, { $0.mikrotikPAP = true }) { portal in
            let fixture = try await RuntimeFixture(scripts: ["mikrotik": try Self.bundled("mikrotik")], configuration: Self.configuration())
            defer { fixture.engine.shutdown() }
            let network = Self.network(portal)
            #expect(await fixture.runtime.join(network) == .presentingUI, "\(fixture.events.all)")
            #expect(await fixture.runtime.presentUI("Venue", answers: ["username": "guest", "password": "aroma-2026"]) == .authenticated,
                    "\(fixture.events.all)")
            #expect(try await Self.probe(network) == .connected)
        }
    }

    /// Meraki's click-through splash, as the simulator rebuilds it: its button only runs a
    /// script, so click-through.lua claims nothing, and meraki.lua opens the grant URL the
    /// script would.
    @Test func bundledMerakiHelperOpensTheGrantURL() async throws {
        try await withPortal(.meraki) { portal in
            let scripts = ["meraki": try Self.bundled("meraki"), "click-through": try Self.bundled("click-through")]
            let fixture = try await RuntimeFixture(scripts: scripts, configuration: Self.configuration())
            defer { fixture.engine.shutdown() }
            let network = Self.network(portal)
            #expect(await fixture.runtime.join(network) == .authenticated, "\(fixture.events.all)")
            #expect(await fixture.runtime.chosenHelper(of: "Venue") == "meraki")
            #expect(try await Self.probe(network) == .connected)
        }
    }

    /// Meraki's sign-on splash, as the simulator rebuilds it: meraki.lua (not click-through.lua,
    /// which would not keep the logout URL) posts the secrets to login_url with success_url,
    /// keeps the logout_url Meraki sends it on with, and logoff opens it; a refused saved
    /// password asks the person, whose answer logs in.
    @Test func bundledMerakiHelperSignsOnAndOff() async throws {
        try await withPortal(.merakiSignOn) { portal in
            try await Self.familyHelperLogsInAndOff("meraki", portal, secrets: ["username": "guest", "password": "aroma-2026"])
        }
        try await withPortal(.merakiSignOn) { portal in
            let fixture = try await RuntimeFixture(
                scripts: ["meraki": try Self.bundled("meraki")],
                configuration: Self.configuration(secrets: ["meraki": ["username": "guest", "password": "stale"]]))
            defer { fixture.engine.shutdown() }
            let network = Self.network(portal)
            #expect(await fixture.runtime.join(network) == .presentingUI, "\(fixture.events.all)")
            #expect(await fixture.runtime.presentUI("Venue", answers: ["username": "guest", "password": "aroma-2026"]) == .authenticated,
                    "\(fixture.events.all)")
            #expect(try await Self.probe(network) == .connected)
        }
    }

    /// UniFi's guest portal, as the simulator rebuilds it: its page has no form, so
    /// click-through.lua claims nothing, and unifi.lua posts the JSON login its app would, by
    /// voucher (from the secrets), by password (the person's answer) or by none (click-through).
    @Test(arguments: [ScenarioSettings.UniFiAuthentication.voucher, .password, .none])
    func bundledUniFiHelperLogsInOverTheGuestPortalsAPI(_ authentication: ScenarioSettings.UniFiAuthentication) async throws {
        try await withPortal(.unifi, { $0.unifiAuthentication = authentication }) { portal in
            let scripts = ["unifi": try Self.bundled("unifi"), "click-through": try Self.bundled("click-through")]
            let fixture = try await RuntimeFixture(
                scripts: scripts, configuration: Self.configuration(secrets: ["unifi": ["voucher": "48213-90577"]]))
            defer { fixture.engine.shutdown() }
            let network = Self.network(portal)
            if authentication == .password {
                #expect(await fixture.runtime.join(network) == .presentingUI, "\(fixture.events.all)")
                #expect(try #require(await fixture.runtime.questions(of: "Venue")).fields.map(\.name) == ["password"])
                #expect(await fixture.runtime.presentUI("Venue", answers: ["password": "wrong"]) != .authenticated)
                #expect(try await Self.probe(network) == .captive)
                await fixture.runtime.leave("Venue")
                #expect(await fixture.runtime.join(network) == .presentingUI)
                #expect(await fixture.runtime.presentUI("Venue", answers: ["password": "aroma-2026"]) == .authenticated,
                        "\(fixture.events.all)")
            } else {
                #expect(await fixture.runtime.join(network) == .authenticated, "\(fixture.events.all)")
            }
            #expect(await fixture.runtime.chosenHelper(of: "Venue") == "unifi")
            #expect(fixture.events.commands(.evaluate).allSatisfy { $0.helper == "unifi" || $0.confidence == Confidence.none })
            #expect(try await Self.probe(network) == .connected)
        }
    }

    /// A Cisco WLC's web authentication, as the simulator rebuilds it: cisco-wlc.lua (not
    /// click-through.lua, which would send the page's buttonClicked=0) posts buttonClicked=4
    /// with the secrets and logs off with userStatus=1; with web passthrough it accepts with no
    /// credentials.
    @Test func bundledCiscoWLCHelperSetsButtonClickedAndLogsOff() async throws {
        try await withPortal(.ciscoWLC) { portal in
            try await Self.familyHelperLogsInAndOff("cisco-wlc", portal, secrets: ["username": "guest", "password": "aroma-2026"])
        }
        try await withPortal(.ciscoWLC, { $0.wlcPassthrough = true }) { portal in
            let fixture = try await RuntimeFixture(scripts: ["cisco-wlc": try Self.bundled("cisco-wlc")], configuration: Self.configuration())
            defer { fixture.engine.shutdown() }
            #expect(await fixture.runtime.join(Self.network(portal)) == .authenticated, "\(fixture.events.all)")
            #expect(try await Self.probe(Self.network(portal)) == .connected)
        }
    }

    /// Aruba's captive portal, as the simulator rebuilds it: aruba.lua (not click-through.lua,
    /// which has no logoff) posts user, password and cmd=authenticate with the person's
    /// answers, and logs off with cmd=logout.
    @Test func bundledArubaHelperLogsInWithThePersonsAnswersAndLogsOff() async throws {
        try await withPortal(.aruba) { portal in
            let scripts = ["aruba": try Self.bundled("aruba"), "click-through": try Self.bundled("click-through")]
            let fixture = try await RuntimeFixture(scripts: scripts, configuration: Self.configuration())
            defer { fixture.engine.shutdown() }
            let network = Self.network(portal)
            #expect(await fixture.runtime.join(network) == .presentingUI, "\(fixture.events.all)")
            #expect(await fixture.runtime.chosenHelper(of: "Venue") == "aruba")
            #expect(fixture.events.commands(.evaluate).allSatisfy { $0.helper == "aruba" || $0.confidence == Confidence.none })
            #expect(await fixture.runtime.presentUI("Venue", answers: ["username": "guest", "password": "aroma-2026"]) == .authenticated,
                    "\(fixture.events.all)")
            #expect(try await Self.probe(network) == .connected)
            #expect(await fixture.runtime.logoff("Venue") == .inactive)
            #expect(fixture.events.commands(.logoff).first?.result == .success)
            #expect(try await Self.probe(network) == .captive)
        }
    }

    @Test func bundledCaptivePortalAPIHelperClaimsOnlyWhatItsAPISaysIsCaptive() async throws {
        try await withPortal(.capport) { portal in
            let scripts = ["capport": try Self.bundled("capport"), "click-through": try Self.bundled("click-through")]
            let fixture = try await RuntimeFixture(scripts: scripts, configuration: Self.configuration())
            defer { fixture.engine.shutdown() }
            let network = Self.network(portal, api: "/capport-api")
            #expect(await fixture.runtime.join(network) == .authenticated)
            #expect(await fixture.runtime.chosenHelper(of: "Venue") == "capport")  // click-through defers to it
            #expect(fixture.events.commands(.evaluate).first { $0.helper == "click-through" }?.confidence == Confidence.none)
            #expect(try await Self.probe(network) == .connected)
            await fixture.runtime.leave("Venue")

            let withoutAPI = try await RuntimeFixture(scripts: ["capport": try Self.bundled("capport")], configuration: Self.configuration())
            defer { withoutAPI.engine.shutdown() }
            await withoutAPI.runtime.join(NetworkDescription(ssid: "Other", probes: network.probes))
            #expect(withoutAPI.events.commands(.evaluate).first?.confidence == Confidence.none)
        }
    }

    /// A plain-HTTP API is used when its URI came from the link (DHCP option 114), as gateways
    /// ship it, with a warning; one from anywhere else (`--capport-url`) is refused unless
    /// allowed for testing. Before, the bundled helper refused openNDS's.
    @Test func aPlainHTTPCaptivePortalAPIFromTheLinkIsUsedWithAWarning() async throws {
        try await withPortal(.capport) { portal in
            var fromLink = Self.network(portal, api: "/capport-api")
            fromLink.captivePortalAPIIsFromLink = true
            let fixture = try await RuntimeFixture(scripts: ["capport": try Self.bundled("capport")],
                                                   configuration: Self.configuration(allowsPlainHTTP: false))
            defer { fixture.engine.shutdown() }
            #expect(await fixture.runtime.join(fromLink) == .authenticated)
            #expect(await fixture.runtime.chosenHelper(of: "Venue") == "capport")
            #expect(fixture.events.logs.contains { $0.level == .warn && $0.message.contains("is plain HTTP; it is used because it came from the link's own") })
            await fixture.runtime.leave("Venue")

            let configured = try await RuntimeFixture(scripts: ["capport": try Self.bundled("capport")],
                                                      configuration: Self.configuration(allowsPlainHTTP: false))
            defer { configured.engine.shutdown() }
            await configured.runtime.join(Self.network(portal, api: "/capport-api"))
            #expect(configured.events.commands(.evaluate).first?.confidence == Confidence.none)
            #expect(!configured.events.logs.contains { $0.message.contains("is plain HTTP") })
        }
    }
}
