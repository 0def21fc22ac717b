import PortalSimulator

/// `hotspot-helper connect` from its start to `authenticated`, as a whole process, against
/// each simulator scenario without built-in latency that a bundled script handles:
/// click-through (aroma.lua) and credentials (campus.lua). The simulators run in this
/// process, behind a DNS responder that sends every name to 127.0.0.1, as in the demo.
/// Baseline: `hotspot-helper check` of the same script, which starts the process and an
/// engine and loads the script, so the difference is what joining and logging in add.
func measureConnectWallTime(runs: Int = 10) async throws -> [Figure] {
    let dns = try await DNSResponder.start(answer: "127.0.0.1")
    var portals: [SimulatedPortal] = []
    let scratch = try ScratchDirectory()
    // Kept until the simulators have stopped, which a failure must not skip.
    var figures: [Figure] = []
    var failure: (any Error)?
    do {
        for venue in ConnectVenue.all {
            let portal = try await SimulatedPortal.start(venue.scenario, settings: venue.settings)
            portals.append(portal)
            figures.append(try measureConnect(venue, portal: portal, dnsPort: dns.port, scratch: scratch, runs: runs))
        }
    } catch {
        failure = error
    }
    for portal in portals { await portal.stop() }
    await dns.stop()
    scratch.remove()
    if let failure { throw failure }
    return figures
}

private func measureConnect(_ venue: ConnectVenue, portal: SimulatedPortal, dnsPort: Int, scratch: ScratchDirectory,
                            runs: Int) throws -> Figure {
    let script = try HelperCommand.bundledScript(venue.script)
    let arguments = try venue.connectArguments(portal: portal, dnsPort: dnsPort, scratch: scratch)
    var toAuthenticated: [Double] = []
    var toExit: [Double] = []
    var checks: [Double] = []
    // Run 0 only warms the page cache.
    for run in 0...runs {
        // The portal remembers a device that logged in (by address): log it out, so every
        // run finds the portal captive and logs in for real.
        try runProcess(Curl.fetching([portal.url + "logout"]))
        let connect = try timedRun(HelperCommand.connect(arguments), marker: #""to":"authenticated""#)
        let check = try timedRun([HelperCommand.path, "check", script])
        guard run > 0 else { continue }
        toAuthenticated.append(connect.toMarker!)
        toExit.append(connect.toExit)
        checks.append(check.toExit)
    }
    let (authenticated, exited, check) = (Samples(toAuthenticated), Samples(toExit), Samples(checks))
    return Figure(
        name: "connect to authenticated, \(venue.scenario.name) (\(venue.script).lua)",
        result: "min \(duration(nanoseconds: authenticated.minimum)), median \(duration(nanoseconds: authenticated.median)), max \(duration(nanoseconds: authenticated.maximum)); exit median \(duration(nanoseconds: exited.median)) (n=\(runs))",
        baseline: (duration(nanoseconds: check.median), ratio(authenticated.median, over: check.median),
                   "connect: from posix_spawn of `hotspot-helper connect --json` to its line saying the network went to `authenticated` (exit: to the process's end). Baseline: `hotspot-helper check` of the same script from posix_spawn to its exit (process start, a one-worker engine, the script loaded), median of the same runs."),
        goals: [.init(text: "median ≤ 50 ms", met: authenticated.median <= 50_000_000)])
}

/// A simulated venue and the bundled script that logs into it, set up as the demo does.
struct ConnectVenue {
    let ssid: String
    let script: String
    let scenario: Scenario
    let settings: ScenarioSettings
    /// The secrets file's text, when the script needs credentials.
    let secrets: String?

    static let all = [aroma, campus]

    static let aroma: ConnectVenue = {
        var settings = ScenarioSettings()
        settings.portalHost = "portal.aroma.example"
        return ConnectVenue(ssid: "Aroma-Guest", script: "aroma", scenario: .clickThrough, settings: settings, secrets: nil)
    }()

    static let campus: ConnectVenue = {
        var settings = ScenarioSettings()
        settings.portalHost = "login.campus.example"
        settings.username = "bench-student"
        settings.password = "bench-pass-0600"
        return ConnectVenue(ssid: "Campus-WiFi", script: "campus", scenario: .credentials, settings: settings, secrets: """
            [campus]
            username = \(settings.username)
            password = \(settings.password)
            wifi_password = bench-wpa
            """)
    }()

    /// The probe the portal intercepts, by a name the DNS responder sends to 127.0.0.1.
    static func probeURL(port: Int) -> String { "http://connectivitycheck.demo.example:\(port)/generate_204" }

    /// `hotspot-helper connect`'s arguments for this venue: its script, the DNS responder,
    /// the portal's probe, and a secrets file when the script needs one.
    func connectArguments(portal: SimulatedPortal, dnsPort: Int, scratch: ScratchDirectory) throws -> [String] {
        var arguments = [
            "--scripts", try HelperCommand.bundledScript(script), "--ssid", ssid, "--resolver", "127.0.0.1:\(dnsPort)",
            "--probe-url", Self.probeURL(port: portal.port),
        ]
        if let secrets {
            arguments += ["--secrets", try scratch.write(secrets, to: script + ".secrets", private: true)]
        }
        return arguments
    }
}
