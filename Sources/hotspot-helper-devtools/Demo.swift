import ArgumentParser
import HotspotCommandLine
import FoundationEssentials
import HotspotNetwork
import HotspotRuntime
import PortalSimulator
import HotspotCore

struct Demo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: DevTools.demoAbstract,
        discussion: """
            Starts simulated venues on loopback (a DNS responder sends every name to them, as a \
            captive network's resolver does), loads the scripts as helpers and goes through: \
            the scan list (who claims which network, with display names and passwords), a join \
            of each venue (evaluate across all helpers, authenticate: a terms page, a login form \
            with CSRF field and cookie, WISPr, an RFC 8908 Captive Portal API), a form that needs a \
            person (present_ui, answered by --answer or --answers), a session that expires \
            (maintain logs in again), a session the API says can be extended (maintain comes \
            before it runs out), and logoff. After each step a connectivity probe checks \
            what the helpers claimed.

            Exit status: 0 when every venue ended as expected, 1 when one did not, 2 for usage \
            errors and scripts that fail to load.
            """)

    @Option(name: .long, help: ArgumentHelp("The venue scripts.", valueName: "dir"))
    var scripts = "VenueHelpers"

    @OptionGroup var answerOptions: AnswerOptions

    @Flag(help: "Write the events as JSON lines instead of a timeline.")
    var json = false

    func run() async throws {
        let output = EventOutput(json: json)
        let answers = ["email": "visitor@example.org"].merging(try answerOptions.answers()) { $1 }
        let dns = try await DNSResponder.start(answer: "127.0.0.1")
        var portals: [SimulatedPortal] = []
        for venue in DemoVenue.all {
            portals.append(try await SimulatedPortal.start(venue.scenario, settings: venue.settings))
        }
        let failures = try await runLifecycle(dns: dns, portals: portals, answers: answers, output: output)
        for portal in portals { await portal.stop() }
        await dns.stop()
        if failures > 0 { throw ExitCode(1) }
    }

    /// The whole story; returns how many checks failed.
    func runLifecycle(dns: DNSResponder, portals: [SimulatedPortal], answers: [String: String],
                      output: EventOutput) async throws -> Int {
        let scratch = FileManager.default.temporaryDirectory.appending(path: "hotspot-helper-demo-" + UUID().uuidString).path(percentEncoded: false)
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let networks = zip(DemoVenue.all, portals).map { venue, portal in
            NetworkDescription(ssid: venue.ssid, isSecure: venue.isSecure, resolvers: ["127.0.0.1:\(dns.port)"],
                               probes: [Probe(url: "http://connectivitycheck.demo.example:\(portal.port)/generate_204")],
                               captivePortalAPI: venue.scenario == .capport ? "http://api.\(venue.settings.portalHost ?? ""):\(portal.port)/capport-api" : nil)
        }

        let loaded = try await LoadedHelpers.load(scripts, output: output)
        defer { loaded.engine.shutdown() }
        guard !loaded.helpers.isEmpty else {
            output.fail("no scripts in \(scripts)")
            throw ExitCode(2)
        }
        var configuration = HotspotRuntime.Configuration(policy: .init(commandDeadline: .seconds(10), maintainInterval: .seconds(3600)),
                                                         secrets: DemoVenue.secrets)
        configuration.allowsPlainHTTPCaptivePortalAPI = true  // the simulator's API is plain HTTP
        configuration.policy.verifyAuthentication = true
        let runtime = HotspotRuntime(
            engine: loaded.engine, helpers: loaded.helpers, persistence: try StateDirectory(path: scratch + "/state"),
            configuration: configuration, events: output.write)
        var story = DemoStory(output: output)

        story.section("The scan list: which helper claims which network")
        let claims = await runtime.filterScanList(networks + [NetworkDescription(ssid: "Neighbour-Printer", isSecure: true)])
        for network in networks + [NetworkDescription(ssid: "Neighbour-Printer")] {
            let claim = claims.first { $0.ssid == network.ssid }
            let password = claim?.password.map { _ in ", password supplied" } ?? ""
            story.say("\(network.ssid): " + (claim.map { "\($0.displayName) (\($0.helper))\(password)" } ?? "no helper"))
        }
        story.expect(claims.contains { $0.ssid == "Campus-WiFi" && $0.password != nil }, "campus supplies the WPA password")

        for (venue, network) in zip(DemoVenue.all, networks) {
            story.section("\(venue.ssid): \(venue.story)")
            var state = await runtime.join(network)
            if state == .presentingUI {
                story.say("\(venue.ssid) needs a person; answering its form with \(answers.keys.sorted().joined(separator: ", "))")
                state = await runtime.presentUI(venue.ssid, answers: answers)
            }
            story.expect(state == .authenticated, "\(venue.ssid) is authenticated")
            story.expect(probe(network) == .connected, "\(venue.ssid)'s probe is open")
            if let length = venue.settings.sessionLength, venue.scenario == .capport {
                story.say("waiting past the session's \(length); the API says it can be extended")
                try await Task.sleep(for: length + .milliseconds(500))
                story.expect(probe(network) == .connected, "\(venue.ssid) is still open: maintain extended the session before it ran out")
            } else if let expiry = venue.settings.sessionLength {
                story.say("waiting for the session to expire (\(expiry))")
                try await Task.sleep(for: expiry + .milliseconds(300))
                story.expect(probe(network) == .captive, "\(venue.ssid) is captive again after the expiry")
                story.expect(await runtime.maintain(venue.ssid) == .authenticated, "maintain logs \(venue.ssid) in again")
                story.expect(probe(network) == .connected, "\(venue.ssid)'s probe is open again")
            }
        }

        story.section("Logging off")
        for (venue, network) in zip(DemoVenue.all, networks) {
            var state = await runtime.logoff(venue.ssid)
            // A maintain the Captive Portal API timed may be running: log off once it is done.
            for _ in 0..<50 where state == .maintaining || state == .authenticating {
                try await Task.sleep(for: .milliseconds(100))
                state = await runtime.logoff(venue.ssid)
            }
            story.expect(state == .inactive, "\(venue.ssid) is logged off")
            if venue.scenario == .capport, let length = venue.settings.sessionLength {
                // RFC 8908 has no logoff: once nothing extends it, the session runs out.
                story.say("the Captive Portal API has no logoff; waiting for the session to run out (\(length))")
                try await Task.sleep(for: length + .milliseconds(300))
            }
            story.expect(probe(network) == .captive, "\(venue.ssid) is captive again after logoff")
        }

        story.section("Summary")
        story.finish()
        return story.failures.count
    }

    func probe(_ network: NetworkDescription) -> ConnectivityVerdict.State {
        ConnectivityProbe.run(ProbeSet(network.probes, timeout: .seconds(3)),
                              binding: NetworkBinding(resolvers: network.resolvers)).state
    }
}

/// One simulated venue of the demo, and the bundled script that handles it.
struct DemoVenue {
    let ssid: String
    let isSecure: Bool
    let scenario: Scenario
    let settings: ScenarioSettings
    let story: String

    static let campusUser = "student-2026"
    static let campusPassword = "campus-pass-4417"

    static let airportUser = "traveller"
    static let airportPassword = "airport-2026-fly"

    static let secrets = Secrets([
        "campus": ["wifi_password": "campus-wpa-2026", "username": campusUser, "password": campusPassword],
        "airport": ["username": airportUser, "password": airportPassword],
    ])

    static let all: [DemoVenue] = [
        DemoVenue(ssid: "Aroma-Guest", isSecure: false, scenario: .clickThrough,
                  settings: settings(portalHost: "portal.aroma.example", venue: "Aroma Cafe"),
                  story: "a terms checkbox (aroma.lua)"),
        DemoVenue(ssid: "Campus-WiFi", isSecure: true, scenario: .credentials,
                  settings: settings(portalHost: "login.campus.example", venue: "Campus") {
                      $0.username = campusUser
                      $0.password = campusPassword
                  },
                  story: "username, password, CSRF field and session cookie (campus.lua)"),
        DemoVenue(ssid: "Airport-Free-WiFi", isSecure: false, scenario: .wispr,
                  settings: settings(portalHost: "wifi.airport.example", venue: "Airport") {
                      $0.username = airportUser
                      $0.password = airportPassword
                  },
                  story: "a WISPr 1.0 smart-client login (airport.lua)"),
        DemoVenue(ssid: "City-Library", isSecure: false, scenario: .email,
                  settings: settings(portalHost: "wifi.library.example", venue: "City Library"),
                  story: "an email address only a person can give (library.lua, present_ui)"),
        DemoVenue(ssid: "Grand-Hotel", isSecure: false, scenario: .sessionExpiry,
                  settings: settings(portalHost: "guest.grandhotel.example", venue: "Grand Hotel") {
                      $0.sessionLength = .seconds(2)
                  },
                  story: "a session that expires after 2 s (hotel.lua, maintain)"),
        DemoVenue(ssid: "Museum-Guest", isSecure: false, scenario: .capport,
                  settings: settings(portalHost: "portal.museum.example", venue: "City Museum") {
                      $0.sessionLength = .seconds(6)
                  },
                  story: "an RFC 8908 Captive Portal API and a terms page, no venue script (the bundled capport.lua)"),
    ]

    static func settings(portalHost: String, venue: String, _ change: (inout ScenarioSettings) -> Void = { _ in }) -> ScenarioSettings {
        var settings = ScenarioSettings()
        settings.portalHost = portalHost
        settings.venueName = venue
        change(&settings)
        return settings
    }
}

/// The demo's narration between the runtime's events, and its checks.
struct DemoStory {
    let output: EventOutput
    private(set) var failures: [String] = []
    private var passed = 0

    init(output: EventOutput) { self.output = output }

    func section(_ title: String) {
        guard !output.json else { return }
        output.line("\n== \(title)")
    }

    func say(_ text: String) {
        guard !output.json else { return }
        output.line("   \(text)")
    }

    mutating func expect(_ condition: Bool, _ claim: String) {
        if condition {
            passed += 1
            say("✓ \(claim)")
        } else {
            failures.append(claim)
            say("✗ NOT: \(claim)")
        }
    }

    func finish() {
        if output.json {
            let line = #"{"event":"demo","checks":\#(passed + failures.count),"failed":\#(failures.count)}"#
            output.line(line)
            return
        }
        if failures.isEmpty {
            say("all \(passed) checks passed: every venue ended as expected")
        } else {
            say("\(failures.count) of \(passed + failures.count) checks failed:")
            failures.forEach { say("  - \($0)") }
        }
    }
}
