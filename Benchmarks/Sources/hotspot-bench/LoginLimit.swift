import LuaSandbox
import PortalSimulator
import Synchronization

/// The login path against its limit: `hotspot-helper connect` to `authenticated` with the
/// bundled campus.lua (the simulator's `credentials`) and click-through.lua (`click-through`),
/// against one `curl` process making the same requests, the two taking turns, each run
/// starting logged out. The portal's request log checks that both made the same requests,
/// with the same answers.
func measureLoginLimit(runs: Int = 12) async throws -> [Figure] {
    let dns = try await DNSResponder.start(answer: "127.0.0.1")
    let scratch = try ScratchDirectory()
    var figures: [Figure] = []
    var failure: (any Error)?
    for venue in [ConnectVenue.campus, LoginLimitVenue.clickThrough] {
        let requests = RequestLog()
        let portal: SimulatedPortal
        do {
            portal = try await SimulatedPortal.start(venue.scenario, settings: venue.settings, requestLog: requests.record)
        } catch {
            failure = error
            break
        }
        do {
            figures.append(try measureLoginLimit(venue, portal: portal, dnsPort: dns.port, scratch: scratch, runs: runs, requests: requests))
        } catch {
            failure = error
        }
        await portal.stop()
        if failure != nil { break }
    }
    await dns.stop()
    scratch.remove()
    if let failure { throw failure }
    return figures
}

private func measureLoginLimit(_ venue: ConnectVenue, portal: SimulatedPortal, dnsPort: Int, scratch: ScratchDirectory,
                               runs: Int, requests: RequestLog) throws -> Figure {
    let connect = HelperCommand.connect(try venue.connectArguments(portal: portal, dnsPort: dnsPort, scratch: scratch))
    let curl = try LoginLimitVenue.curlLogin(venue, portal: portal)
    /// Logs the device out, then runs `arguments` from a clean request log: when the portal
    /// answered the request that opens the network (the form's POST), when it exited, and
    /// the requests it made.
    func loggedIn(_ arguments: [String]) throws -> (opened: Double, exited: Double, requests: [String]) {
        try runProcess(Curl.fetching([portal.url + "logout"]))
        _ = requests.take()
        let run = try timedRun(arguments)
        let made = requests.take()
        guard let opening = made.first(where: { $0.line.hasPrefix("POST ") }) else {
            throw BenchError("\(arguments[0]) posted no form: \(made.map(\.line))")
        }
        return (Double(opening.at - run.start), run.toExit, made.map(\.line))
    }
    var logins: [Double] = [], loginExits: [Double] = []
    var curls: [Double] = [], curlExits: [Double] = []
    // Run 0 only warms the page cache.
    for run in 0...runs {
        let login = try loggedIn(connect)
        let curled = try loggedIn(curl)
        guard login.requests == curled.requests else {
            throw BenchError("curl's requests differ from the login's: \(login.requests) against \(curled.requests)")
        }
        guard run > 0 else { continue }
        logins.append(login.opened)
        loginExits.append(login.exited)
        curls.append(curled.opened)
        curlExits.append(curled.exited)
    }
    let (login, limit) = (Samples(logins), Samples(curls))
    let (loginExit, curlExit) = (Samples(loginExits), Samples(curlExits))
    return Figure(
        name: "Login vs one curl, \(venue.scenario.name) (\(venue.script).lua)",
        result: "to the form's POST median \(duration(nanoseconds: login.median)), min \(duration(nanoseconds: login.minimum)), max \(duration(nanoseconds: login.maximum)); to exit median \(duration(nanoseconds: loginExit.median)) against curl's \(duration(nanoseconds: curlExit.median)), \(ratio(loginExit.median, over: curlExit.median)) (n=\(runs))",
        baseline: (duration(nanoseconds: limit.median), ratio(login.median, over: limit.median),
                   "Login vs one curl: `hotspot-helper connect --json` from posix_spawn to the portal answering the request that opens the network (the form's POST, stamped by the portal in the bench's process); to exit: to the process's end. Baseline: one `curl` process making the same requests (method, path and answer, checked in the portal's log), timed to the same POST, names given with --resolve; median of the same runs, taking turns."),
        goals: [.init(text: "median ≤ 2× one curl", met: login.median <= 2 * limit.median)])
}

enum LoginLimitVenue {
    /// click-through.lua, the bundled script for any terms page, at a click-through portal.
    static let clickThrough: ConnectVenue = {
        var settings = ScenarioSettings()
        settings.portalHost = "portal.terms.example"
        return ConnectVenue(ssid: "Terms-Guest", script: "click-through", scenario: .clickThrough, settings: settings, secrets: nil)
    }()

    /// One `curl` making the requests the venue's script and the runtime make: the probe
    /// (intercepted), the login page, the form as the script fills it, and the probes that
    /// check the login (the script's, then the runtime's). Click-through's evaluate probes and
    /// reads the page first too. The credentials form is posted with a session the portal
    /// handed out beforehand (its cookie and CSRF field), as the script posts the one its
    /// page load got.
    static func curlLogin(_ venue: ConnectVenue, portal: SimulatedPortal) throws -> [String] {
        let portalHost = venue.settings.portalHost!
        let probe = ConnectVenue.probeURL(port: portal.port)
        let login = "http://\(portalHost):\(portal.port)/login"
        var common = ["--silent"]
        for host in ["connectivitycheck.demo.example", portalHost] { common += ["--resolve", "\(host):\(portal.port):127.0.0.1"] }
        let form: String
        if venue.scenario == .credentials {
            let (cookie, token) = try session(at: portal.url + "login")
            common += ["--cookie", "\(credentialsCookie)=\(cookie)"]
            form = "csrf_token=\(token)&username=\(venue.settings.username)&password=\(venue.settings.password)"
        } else {
            form = "accept_terms=yes&connect=1"
        }
        let reads = venue.scenario == .credentials ? [probe, login] : [probe, login, probe, login]
        return [Curl.path] + common + reads + ["--next"] + common + ["--data", form, login, "--next"] + common + [probe, probe]
    }

    /// The credentials portal's session cookie (`CredentialsPortal`'s, internal to the simulator).
    private static let credentialsCookie = "portal_session"

    /// A session of the credentials portal: the cookie its login page sets and its CSRF field.
    private static func session(at url: String) throws -> (cookie: String, token: String) {
        let page = try runProcess([Curl.path, "--silent", "--include", url])
        guard let cookie = page.split(separator: "\(credentialsCookie)=").dropFirst().first?.prefix(while: { $0 != ";" }),
              let token = page.split(separator: #"name="csrf_token" value=""#).dropFirst().first?.prefix(while: { $0 != "\"" })
        else { throw BenchError("the credentials portal's page has no session: \(page.prefix(400))") }
        return (String(cookie), String(token))
    }
}

/// The requests a portal answered, as its request log tells them, each stamped when the
/// portal logged it (on `Deadline.now`'s clock, as `TimedRun.start`).
private final class RequestLog: Sendable {
    private let entries = Mutex<[(line: String, at: Int64)]>([])

    /// Keeps "GET /login -> 200" of the log's "credentials: 127.0.0.1:PORT GET /login -> 200".
    @Sendable func record(_ line: String) {
        let at = Deadline.now.nanoseconds
        entries.withLock { $0.append((line.split(separator: " ").dropFirst(2).joined(separator: " "), at)) }
    }

    /// The requests since the last call.
    func take() -> [(line: String, at: Int64)] {
        entries.withLock { entries in
            defer { entries = [] }
            return entries
        }
    }
}
