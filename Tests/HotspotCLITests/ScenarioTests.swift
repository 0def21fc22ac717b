import Foundation
import PortalSimulator
import Testing
import TestSupport

/// One venue script run through `hotspot-helper dev --once --json` against a portal
/// simulator scenario: what to run, and what proves the helper did the right thing.
struct ScenarioCase: Sendable, CustomTestStringConvertible {
    let scenario: String
    /// The script's path; its base name is the helper's id.
    let script: String
    let ssid: String
    /// The helper's section of the secrets file; also the credentials the simulator accepts.
    var secrets: [String: String] = [:]
    var answers: [String: String] = [:]
    /// `command result` of every command, in order.
    var lifecycle = ["evaluate success", "authenticate success", "maintain success", "logoff success"]
    /// The scenario's own facts, checked on the run.
    var proves: @Sendable (DevRun) throws -> Void = { _ in }

    var helper: String { URL(fileURLWithPath: script).deletingPathExtension().lastPathComponent }
    var testDescription: String { "\(scenario) with \(helper).lua" }

    /// The `dev` command line, with a 0600 secrets file written for it when there are secrets.
    func arguments() throws -> [String] {
        var arguments = ["dev", script, "--scenario", scenario, "--ssid", ssid, "--once", "--json"]
        if !secrets.isEmpty { arguments += ["--secrets", try ScenarioTests.secretsFile(helper: helper, secrets)] }
        for (name, value) in answers.sorted(by: { $0.key < $1.key }) { arguments += ["--answer", "\(name)=\(value)"] }
        return arguments
    }
}

/// A finished `dev --json` run, read event by event.
struct DevRun {
    let run: CLI.Run
    let events: [EventLine]

    init(_ run: CLI.Run) {
        self.run = run
        events = run.events
    }

    /// `command result` of each command, in order.
    var commands: [String] {
        events.filter { $0.event == "command" }.map { "\($0.command ?? "") \($0.result ?? "")" }
    }

    func command(_ name: String) -> EventLine? {
        events.first { $0.event == "command" && $0.command == name }
    }

    /// The messages the script logged, as `level: message`.
    var logs: [String] { logLines { $0.helper != nil } }

    /// The runtime's own log lines (they name no helper), as `level: message`.
    var runtimeLogs: [String] { logLines { $0.helper == nil } }

    private func logLines(where matches: (EventLine) -> Bool) -> [String] {
        events.filter { $0.event == "log" && matches($0) }.map { "\($0.level ?? ""): \($0.message ?? "")" }
    }

    var done: EventLine? { events.last { $0.event == "done" } }

    /// Everything the run printed, to show when an expectation fails.
    var transcript: Comment { "\(run.output)\(run.errors)" }
}

/// Every portal simulator scenario, through the built executable: `dev` starts the scenario
/// with its DNS hijack and runs a venue script's whole lifecycle against it. The bundled
/// scripts cover their venues' scenarios; Scenarios/ holds a venue script for each of the
/// others. Each script's `maintain` probes the portal, so `maintain success` means the
/// simulator itself sees the device logged in.
///
/// Serialized: the runs take about 15 s together (slow's 1.5 s answers most of it), and
/// twelve `dev` processes starting at once, each with its workers, would crowd two cores
/// and the other suites' timing-sensitive tests.
@Suite("Simulator scenarios through dev", .serialized)
struct ScenarioTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Scenarios").path

    static let cases: [ScenarioCase] = [
        ScenarioCase(scenario: "click-through", script: CLI.bundledScripts + "/aroma.lua", ssid: "Aroma-Guest"),
        ScenarioCase(
            scenario: "credentials", script: CLI.bundledScripts + "/campus.lua", ssid: "Campus-WiFi",
            secrets: ["username": "student-4417", "password": "l1brary card", "wifi_password": "campus-wpa-2026"],
            proves: { run in
                #expect(!run.run.output.contains("l1brary card") && !run.run.errors.contains("l1brary card"), run.transcript)
            }),
        ScenarioCase(
            scenario: "email", script: CLI.bundledScripts + "/library.lua", ssid: "City-Library",
            answers: ["email": "reader@example.org"],
            lifecycle: ["evaluate success", "authenticate ui_required", "present_ui success", "maintain success", "logoff success"]),
        ScenarioCase(
            scenario: "redirect-chain", script: fixtures + "/redirect-chain.lua", ssid: "Station-WiFi",
            proves: { run in
                // Absolute to another host, relative on it, absolute to a third with the ticket; 303 after the POST.
                let hops = run.logs
                try #require(hops.count == 4, run.transcript)
                #expect(hops[0].hasPrefix("info: the probe was sent to http://auth.station.example:"))
                #expect(hops[0].hasSuffix("/start"))
                #expect(hops[1].hasPrefix("info: login page: 302 to http://auth.station.example:"))
                #expect(hops[1].hasSuffix("/authorize"))
                #expect(hops[2].hasPrefix("info: login page: 302 to http://login.station.example:"))
                #expect(hops[2].contains("/login?ticket="))
                #expect(hops[3].hasPrefix("info: login: 303 to http://login.station.example:"))
                #expect(hops[3].hasSuffix("/welcome"))
            }),
        ScenarioCase(scenario: "session-expiry", script: CLI.bundledScripts + "/hotel.lua", ssid: "Grand-Hotel"),
        ScenarioCase(
            scenario: "flaky", script: fixtures + "/flaky.lua", ssid: "Beach-Kiosk",
            proves: { run in
                #expect(run.logs.filter { $0.contains("info: attempt") } == [
                    "info: attempt 1: 503, trying again in 0.25 s", "info: attempt 2: 503, trying again in 0.50 s",
                    "info: attempt 3: logged in",
                ], run.transcript)
            }),
        ScenarioCase(
            scenario: "slow", script: CLI.bundledScripts + "/aroma.lua", ssid: "Aroma-Guest",
            proves: { run in
                // Probe, login page, POST and probe again, each answered 1.5 s late, and nothing given up on.
                let milliseconds = run.command("authenticate")?.ms ?? 0
                #expect(milliseconds >= 4 * 1500, run.transcript)
                #expect(run.logs.isEmpty, run.transcript)
            }),
        ScenarioCase(
            scenario: "rate-limited", script: fixtures + "/rate-limited.lua", ssid: "Museum-WiFi",
            proves: { run in
                #expect(run.logs == ["info: 429: waiting 1 s as Retry-After asks", "info: logged in"], run.transcript)
                let milliseconds = run.command("authenticate")?.ms ?? 0
                #expect(milliseconds >= 1000, run.transcript)
            }),
        ScenarioCase(
            scenario: "wispr", script: CLI.bundledScripts + "/airport.lua", ssid: "Airport-Free-WiFi",
            secrets: ["username": "traveller", "password": "airport-2026-fly"],
            proves: { run in
                // The LogoffURL from the AuthenticationReply was kept and answered 150.
                #expect(run.logs.isEmpty, run.transcript)
            }),
        ScenarioCase(
            scenario: "capport", script: fixtures + "/capport.lua", ssid: "Park-WiFi",
            proves: { run in
                let logs = run.logs
                try #require(logs.count == 3, run.transcript)
                #expect(logs[0].hasPrefix("info: logged in; ") && logs[0].hasSuffix(" s remaining"))
                // A 30 s session is within the 60 s before its end when maintain extends it.
                #expect(logs[1].hasPrefix("info: ") && logs[1].hasSuffix(" s remaining: extending the session"))
                #expect(logs[2].hasPrefix("info: extended: ") && logs[2].hasSuffix(" s remaining"))
            }),
        ScenarioCase(
            scenario: "opennds", script: CLI.bundledScripts + "/click-through.lua", ssid: "openNDS",
            lifecycle: ["evaluate success", "authenticate success", "maintain success", "logoff command_not_recognized"]),
        ScenarioCase(
            scenario: "coovachilli", script: CLI.bundledScripts + "/coovachilli.lua", ssid: "Chilli-HotSpot",
            secrets: ["username": "guest", "password": "aroma-2026"],
            proves: { run in
                // Logged in and off over the JSON interface, with no warning on the way.
                #expect(run.logs.isEmpty, run.transcript)
            }),
        ScenarioCase(
            scenario: "pfsense", script: CLI.bundledScripts + "/pfsense.lua", ssid: "pfSense-Guests",
            secrets: ["username": "guest", "password": "aroma-2026"],
            proves: { run in
                // Logged in with the secrets and out with the page's logout form, with no warning on the way.
                #expect(run.logs.isEmpty, run.transcript)
            }),
        ScenarioCase(
            scenario: "opnsense", script: CLI.bundledScripts + "/opnsense.lua", ssid: "OPNsense-Guests",
            secrets: ["username": "guest", "password": "aroma-2026"],
            proves: { run in
                // Logged in, maintained and out over the access API, with no warning on the way.
                #expect(run.logs.isEmpty, run.transcript)
            }),
        ScenarioCase(
            scenario: "mikrotik", script: CLI.bundledScripts + "/mikrotik.lua", ssid: "MikroTik-HotSpot",
            secrets: ["username": "guest", "password": "aroma-2026"],
            proves: { run in
                // Logged in with CHAP, maintained on /status and out on /logout, with no warning on the way.
                #expect(run.logs.isEmpty, run.transcript)
            }),
        ScenarioCase(
            scenario: "meraki", script: CLI.bundledScripts + "/meraki.lua", ssid: "Meraki-Guest",
            lifecycle: ["evaluate success", "authenticate success", "maintain success", "logoff command_not_recognized"]),
        ScenarioCase(
            scenario: "meraki-signon", script: CLI.bundledScripts + "/meraki.lua", ssid: "Meraki-Guest",
            secrets: ["username": "guest", "password": "aroma-2026"],
            proves: { run in
                // Signed on with the secrets and off with the logout_url Meraki sent, with no warning on the way.
                #expect(run.logs.isEmpty, run.transcript)
            }),
        ScenarioCase(
            scenario: "unifi", script: CLI.bundledScripts + "/unifi.lua", ssid: "UniFi-Guest",
            secrets: ["voucher": "48213-90577"],
            lifecycle: ["evaluate success", "authenticate success", "maintain success", "logoff command_not_recognized"]),
        ScenarioCase(
            scenario: "cisco-wlc", script: CLI.bundledScripts + "/cisco-wlc.lua", ssid: "WLC-Guest",
            secrets: ["username": "guest", "password": "aroma-2026"],
            proves: { run in
                // Logged in with buttonClicked=4 and out with userStatus=1, with no warning on the way.
                #expect(run.logs.isEmpty, run.transcript)
            }),
        ScenarioCase(
            scenario: "aruba", script: CLI.bundledScripts + "/aruba.lua", ssid: "Aruba-Guest",
            secrets: ["username": "guest", "password": "aroma-2026"],
            proves: { run in
                // Logged in with cmd=authenticate and out with cmd=logout, with no warning on the way.
                #expect(run.logs.isEmpty, run.transcript)
            }),
        ScenarioCase(
            scenario: "hostile", script: fixtures + "/hostile.lua", ssid: "Harbour-Bar",
            proves: { run in
                let logs = run.logs
                for (path, prefix) in [("/huge", "too_large"), ("/gzip-bomb", "too_large"), ("/drip", "timeout"),
                                       ("/loop", "redirect_loop")] {
                    #expect(logs.contains { $0.hasPrefix("warn: \(path): \(prefix): ") }, "\(path): \(run.transcript)")
                }
                #expect(logs.contains { $0.hasPrefix("warn: /bad.json: ") }, run.transcript)
            }),
    ]

    static func secretsFile(helper: String, _ secrets: [String: String]) throws -> String {
        let path = try CLI.temporaryDirectory() + "/secrets.ini"
        let lines = secrets.sorted { $0.key < $1.key }.map { "\($0.key) = \"\($0.value)\"" }
        try "[\(helper)]\n\(lines.joined(separator: "\n"))\n".write(toFile: path, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        return path
    }

    @Test(arguments: cases) func theHelperLogsInAndOut(_ scenario: ScenarioCase) async throws {
        let run = DevRun(try await CLI.run(try scenario.arguments()))
        #expect(run.run.status == 0, run.transcript)
        #expect(run.commands == scenario.lifecycle, run.transcript)
        let done = try #require(run.done, run.transcript)
        #expect(done.state == "authenticated")
        #expect(done.helper == scenario.helper)
        #expect(done.network == scenario.ssid)
        #expect(!run.runtimeLogs.contains { $0.hasPrefix("warn: ") }, run.transcript)
        try scenario.proves(run)
    }

    /// `dev` maintains at once, before a session can expire; `connect --stay` keeps the
    /// network past the session's 2 s, so `maintain` finds the probe captive again.
    @Test func maintainLogsInAgainOnceTheSessionHasExpired() async throws {
        let simulator = try await onOwnThread { try SimulatorProcess(scenario: "session-expiry", dns: true) }
        let port = try #require(URL(string: simulator.url)?.port)
        let resolver = try #require(simulator.dns)
        let run = DevRun(try await CLI.run([
            "connect", "--scripts", CLI.bundledScripts + "/hotel.lua", "--ssid", "Grand-Hotel",
            "--probe-url", "http://guest.grandhotel.example:\(port)/generate_204", "--resolver", resolver,
            "--stay", "4", "--maintain-interval", "2.5", "--json",
        ]))
        let requests = try await onOwnThread { simulator.stop() }
        #expect(run.run.status == 0, run.transcript)
        #expect(run.commands == ["evaluate success", "authenticate success", "maintain success"], run.transcript)
        #expect(run.logs == ["info: the session expired; accepting the terms again"], run.transcript)
        let logins = requests.filter { $0.hasSuffix(" POST /login -> 200") }
        #expect(logins.count == 2, "\(requests)")
        #expect(requests.last?.hasSuffix(" GET /generate_204 -> 204") == true, "\(requests)")
    }

    /// Helpers that do not do what the scenario asks fail it: the scenarios discriminate.
    @Test(arguments: [("flaky", "503"), ("rate-limited", "429")])
    func aHelperThatGivesUpAtOnceFails(scenario: String, status: String) async throws {
        let run = DevRun(try await CLI.run(["dev", CLI.bundledScripts + "/aroma.lua", "--scenario", scenario,
                                            "--ssid", "Aroma-Guest", "--once", "--json"]))
        #expect(run.run.status == 1, run.transcript)
        #expect(run.commands == ["evaluate success", "authenticate temporary_failure"], run.transcript)
        #expect(run.logs.contains("warn: the portal refused the terms: \(status)"), run.transcript)
        #expect(run.done?.state == "failure", run.transcript)
    }

    /// An address the runtime takes for one (the questions ask for an email) that the portal refuses.
    @Test func anAddressThePortalRefusesFailsTheLogin() async throws {
        let run = DevRun(try await CLI.run(["dev", CLI.bundledScripts + "/library.lua", "--scenario", "email",
                                            "--ssid", "City-Library", "--once", "--json", "--answer", "email=reader@example..org"]))
        #expect(run.run.status == 1, run.transcript)
        #expect(run.commands == ["evaluate success", "authenticate ui_required", "present_ui failure"], run.transcript)
        #expect(run.logs.contains("warn: the portal refused the address: 400"), run.transcript)
        #expect(run.done?.state == "failure", run.transcript)
    }

    @Test func noSavedCredentialsFailTheLoginNamingTheScriptsLine() async throws {
        let scenario = ScenarioCase(scenario: "credentials", script: CLI.bundledScripts + "/campus.lua", ssid: "Campus-WiFi",
                                    secrets: ["wifi_password": "campus-wpa-2026"])
        let run = DevRun(try await CLI.run(try scenario.arguments()))
        #expect(run.run.status == 1, run.transcript)
        #expect(run.commands == ["evaluate success", "authenticate failure"], run.transcript)
        let error = run.command("authenticate")?.error ?? ""
        #expect(error.contains("campus.lua:") && error.contains("no secret 'username'"), run.transcript)
        #expect(run.done?.state == "failure", run.transcript)
        #expect(run.done?.helper == "campus")
    }

    @Test func aScriptThatDoesNotLoadExitsTwoSayingWhere() async throws {
        let directory = try CLI.temporaryDirectory(scripts: ["venue.lua": "return {\n  name = \"Venue\",\n  hosts = { \"portal.venue.example\"\n"])
        let run = try await CLI.run(["dev", directory + "/venue.lua", "--scenario", "click-through", "--once", "--json"])
        #expect(run.status == 2)
        #expect(run.errors.contains("\(directory)/venue.lua:4: '}' expected"), "\(run.errors)")
        #expect(!run.events.contains { $0.event == "done" })
    }

    @Test func everyScenarioHasACase() {
        #expect(Self.cases.map(\.scenario) == Scenario.all.map(\.name))
    }
}
