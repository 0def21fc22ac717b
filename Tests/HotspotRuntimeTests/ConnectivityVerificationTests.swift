import HotspotNetwork
import PortalSimulator
import Testing
@testable import HotspotRuntime
import HotspotCore

/// The runtime checks a helper's `success` with the network's probes, against the
/// simulator's click-through portal on loopback.
@Suite("Connectivity: cmd:probe and the check after success")
struct ConnectivityVerificationTests {
    static let verifying = HotspotRuntime.Configuration(
        policy: .init(commandDeadline: .seconds(10), retryFirstDelay: .seconds(600), verifyAuthentication: true))

    static func network(_ portal: SimulatedPortal) -> NetworkDescription {
        NetworkDescription(ssid: "Cafe", probes: [Probe(url: portal.url + "generate_204"),
                                                  Probe(url: portal.url + "generate_204", expectation: .status(204))])
    }

    @Test func aHelperThatClaimsSuccessBehindThePortalIsReported() async throws {
        let portal = try await SimulatedPortal.start(.clickThrough)
        let fixture = try await RuntimeFixture(scripts: ["liar": venue("Liar", confidence: "high", handlers: [
            "authenticate": "return \"success\"",
        ])], configuration: Self.verifying)
        let state = await fixture.runtime.join(Self.network(portal))
        await portal.stop()
        fixture.engine.shutdown()

        #expect(state == .failure)
        #expect(fixture.events.transitions.suffix(2) == ["evaluating>authenticating", "authenticating>failure"])
        let check = try #require(fixture.events.connectivity.first)
        #expect(check.verdict == .captive)
        #expect(check.helper == "liar")
        #expect(check.portalURL == portal.url + "login")
        #expect(HotspotEvent.connectivity(check).jsonLine(at: .now).hasPrefix(#"{"event":"connectivity","network":"Cafe","verdict":"captive","portal_url":"\#(portal.url)login""#))
        let warning = try #require(fixture.events.logs.first { $0.level == .warn && $0.helper == "liar" })
        #expect(warning.message == "helper liar claimed success but the network is still captive at \(portal.url)login")
        // Retried like a temporary failure; nothing is remembered for the next join.
        #expect(fixture.events.logs.contains { $0.message.hasPrefix("retrying Cafe") })
        #expect(fixture.runtime.stateDirectory.snapshot.chosenHelpers["Cafe"] == nil)
        #expect(!fixture.runtime.stateDirectory.snapshot.autoJoinDisabled.contains("Cafe"))
    }

    @Test func aHelperThatLogsInIsConfirmedAndCmdProbeAnswersTheWholeVerdict() async throws {
        let portal = try await SimulatedPortal.start(.clickThrough)
        let login = portal.url + "login"
        let fixture = try await RuntimeFixture(scripts: ["honest": """
            return {
              name = "Honest",
              hosts = { "127.0.0.1" },
              evaluate = function(cmd) return "high" end,
              authenticate = function(cmd)
                local before = cmd:probe()
                log.info(before.state .. " " .. tostring(before.portal_url) .. " " .. tostring(before.portal_url_source)
                  .. " " .. tostring(before.interface_kind) .. " " .. #before.details)
                local answer = cmd:http{ url = "\(login)", form = { accept_terms = "yes" } }
                if not answer or answer.status ~= 200 then return "failure" end
                local after = cmd:probe()
                log.info(after.state .. " " .. #after.details)
                return "success"
              end,
            }
            """], configuration: Self.verifying)
        let state = await fixture.runtime.join(Self.network(portal))
        await portal.stop()
        fixture.engine.shutdown()

        #expect(state == .authenticated)
        let logged = fixture.events.logs.filter { $0.helper == "honest" }.map(\.message)
        #expect(logged.count == 2)
        #expect(logged.first?.hasPrefix("captive \(login) location ") == true)
        #expect(logged.last == "connected 2")
        let check = try #require(fixture.events.connectivity.first)
        #expect(check.verdict == .connected)
        #expect(check.helper == "honest")
        #expect(fixture.runtime.stateDirectory.snapshot.chosenHelpers["Cafe"] == "honest")
    }
}
