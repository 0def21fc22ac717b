import HotspotCore
@testable import HotspotRuntime
import LuaSandbox
import Testing

/// What each command may do, refused in the worker with the rule named, from scripts that try.
@Suite struct CommandPrivilegesTests {
    static let secrets = Secrets([
        "venue": ["wifi_password": "wpa-secret-1", "password": "portal-secret-2"],
        "venue \"Venue-Guest\"": ["room": "room-secret-3"],
        "venue \"Elsewhere\"": ["voucher": "voucher-secret-4"],
    ])

    static func fixture(_ handler: String, _ body: String) async throws -> RuntimeFixture {
        try await RuntimeFixture(scripts: ["venue": venue("Venue", handlers: [handler: body])],
                                 configuration: .init(policy: .init(commandDeadline: .seconds(5)), secrets: secrets))
    }

    /// Nothing leaves the machine: each is refused before any name is resolved.
    @Test(arguments: [
        ("cmd:http{ url = 'http://portal.example/' }", "cmd:http"),
        ("cmd:probe()", "cmd:probe"),
        ("capport.fetch(cmd)", "capport.fetch"),
        ("cmd:tcp('portal.example', 80)", "cmd:tcp and cmd:udp"),
        ("cmd:udp('portal.example', 53)", "cmd:tcp and cmd:udp"),
    ])
    func filterScanListHasNoNetwork(_ code: String, _ what: String) async throws {
        let fixture = try await Self.fixture("filter_scan_list", "\(code)\nreturn 'success'")
        defer { fixture.engine.shutdown() }
        let helper = try #require(await fixture.runtime.helpers.first)
        let response = await fixture.send(.filterScanList, to: helper, network: nil, networkList: [guest])
        #expect(response.result == .failure)
        #expect(response.error?.contains("\(what) is refused in filter_scan_list: it has no network, as it runs before any is joined "
                                         + "(docs/SCRIPTING.md, \"What each command may do\")") == true, "\(response)")
        #expect(response.error?.contains("venue.lua:") == true, "the script's line: \(response)")
    }

    @Test func filterScanListReadsOnlyTheWiFiPassword() async throws {
        let fixture = try await Self.fixture("filter_scan_list", """
            local network = cmd.network_list[1]
            network:set_password(cmd:secret("wifi_password"))
            local response = cmd:create_response("success")
            response:set_network_list({ network })
            response:deliver()
            """)
        defer { fixture.engine.shutdown() }
        #expect(await fixture.runtime.filterScanList([guest]).map(\.password) == ["wpa-secret-1"])

        let greedy = try await Self.fixture("filter_scan_list", "cmd:secret('password')\nreturn 'success'")
        defer { greedy.engine.shutdown() }
        let helper = try #require(await greedy.runtime.helpers.first)
        let response = await greedy.send(.filterScanList, to: helper, network: nil, networkList: [guest])
        #expect(response.error?.contains("cmd:secret('password') is refused in filter_scan_list: it reads only the Wi-Fi passwords it sets")
            == true, "\(response)")
    }

    /// Evaluate reaches every helper at every join: none of them reads a secret, and the
    /// worker is sent only their names, which `cmd:has_secret` answers from.
    @Test func evaluateReadsNoSecret() async throws {
        let fixture = try await RuntimeFixture(scripts: ["venue": venue("Venue", evaluate: """
            assert(cmd:has_secret("password") and cmd:has_secret("room") and not cmd:has_secret("voucher"))
            return cmd:secret('password') and 'high'
            """)],
                                               configuration: .init(policy: .init(commandDeadline: .seconds(5)), secrets: Self.secrets))
        defer { fixture.engine.shutdown() }
        #expect(await fixture.runtime.join(guest) == .authenticated)
        let evaluated = try #require(fixture.events.commands(.evaluate).first)
        #expect(evaluated.result == .failure)
        #expect(evaluated.error?.contains("cmd:secret is refused in evaluate: a helper reads its secrets from the command it is chosen in "
                                          + "(authenticate) onwards") == true, "\(evaluated)")
        let helper = try #require(await fixture.runtime.helpers.first)
        func secrets(_ command: HotspotCommand) -> LuaValue? {
            fixture.runtime.transport.context(for: helper, network: guest, command: command).tableValue?["secrets"]
        }
        #expect(secrets(.evaluate)?.tableValue?.entries.values.allSatisfy { $0 == "" } == true)
        #expect(secrets(.evaluate)?.tableValue?.entries.count == 3)
        #expect(secrets(.authenticate)?.tableValue?["room"] == "room-secret-3")
    }

    /// From authenticate on: the helper's own secrets and the network's, not another network's.
    @Test func theChosenHelperReadsOnlyTheSecretsOfTheNetworkAtHand() async throws {
        let fixture = try await RuntimeFixture(scripts: ["venue": venue("Venue", confidence: "high", handlers: ["authenticate": """
            log.info(cmd:secret("password") == "portal-secret-2" and "own" or "none")
            log.info(cmd:secret("room") == "room-secret-3" and "network" or "none")
            local found = pcall(cmd.secret, cmd, "voucher")
            log.info(found and "other network's" or "not another network's")
            return "success"
            """])], configuration: .init(policy: .init(commandDeadline: .seconds(5)), secrets: Self.secrets))
        defer { fixture.engine.shutdown() }
        #expect(await fixture.runtime.join(guest) == .authenticated)
        #expect(fixture.events.logs.filter { $0.command == .authenticate }.map(\.message) == ["own", "network", "not another network's"])
    }

    /// As before: HTTP only to the script's `hosts`, named in the answer.
    @Test func httpReachesOnlyTheScriptsHosts() async throws {
        let fixture = try await Self.fixture("authenticate", """
            local response, problem = cmd:http{ url = "http://elsewhere.example/" }
            log.info(problem)
            return "success"
            """)
        defer { fixture.engine.shutdown() }
        let helper = try #require(await fixture.runtime.helpers.first)
        _ = await fixture.send(.authenticate, to: helper, network: guest)
        #expect(fixture.events.logs.map(\.message).contains("not_allowed: elsewhere.example"))
    }
}
