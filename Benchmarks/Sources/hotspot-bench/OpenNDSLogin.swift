#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import LuaSandbox
import TestbedRecipes

/// The bundled helpers' login through a real openNDS gateway (Debian's `opennds`, its default
/// click-to-continue splash, set up as the GatewayTests set it up: OpenNDSRecipe's namespaces),
/// beside curl making the same requests, the two taking turns, each run starting with the
/// client deauthenticated (`ndsctl deauth`). Root only, with the packages `make test` installs.
func measureOpenNDSLogin(runs: Int = 10) async throws -> [Figure] {
    guard getuid() == 0 else { throw BenchError("a real openNDS needs root (namespaces, mounts, its firewall)") }
    for tool in ["/usr/bin/opennds", "/usr/bin/ndsctl", "/usr/sbin/iptables-legacy", "/usr/sbin/dnsmasq", "/sbin/dhclient", Curl.path]
    where access(tool, X_OK) != 0 {
        throw BenchError("needs \(tool) (`make test-deps` installs it)")
    }
    let scratch = try ScratchDirectory()
    defer { scratch.remove() }
    let testbed = try OpenNDSBench(directory: scratch.path)
    defer { testbed.tearDown() }
    let connect = testbed.recipe.inClient(HelperCommand.connect([
        "--scripts", try HelperCommand.bundledScript("click-through"), "--ssid", "openNDS", "--interface", testbed.recipe.interface,
        "--resolver", OpenNDSRecipe.gatewayAddress, "--probe-url", OpenNDSBench.probe,
    ]))
    let curl = testbed.recipe.inClient(["/bin/sh", "-c", OpenNDSBench.curlLogin])
    var logins: [Double] = []
    var curls: [Double] = []
    // Run 0 only warms the page cache.
    for run in 0...runs {
        var times: [Double] = [0, 0]
        for contender in run.isMultiple(of: 2) ? [0, 1] : [1, 0] {
            try testbed.deauthenticate()
            times[contender] = contender == 0
                ? try timedRun(connect, marker: #""to":"authenticated""#).toExit
                : try timedRun(curl).toExit
            guard try testbed.isAuthenticated() else { throw BenchError("the client is not authenticated after run \(run)") }
        }
        guard run > 0 else { continue }
        logins.append(times[0])
        curls.append(times[1])
    }
    let (login, limit) = (Samples(logins), Samples(curls))
    return [Figure(
        name: "Login vs curl, real openNDS (click-through.lua)",
        result: "median \(duration(nanoseconds: login.median)), min \(duration(nanoseconds: login.minimum)), max \(duration(nanoseconds: login.maximum)) (n=\(runs))",
        baseline: (duration(nanoseconds: limit.median), ratio(login.median, over: limit.median),
                   "Login vs curl, real openNDS: `hotspot-helper connect --json` with the bundled click-through.lua in the client namespace of a real openNDS 9.10 (its default click-to-continue splash), from posix_spawn to its exit (both are commands: each side timed to its end). Baseline: a shell running curl for the same requests (the probe intercepted, the splash, the probe and splash again, its GET form with `fas` first, the probe, the \"Thank you\" page's form, two probes) from posix_spawn to its exit; the client deauthenticated before each, the two taking turns."),
        goals: [.init(text: "median ≤ 1.2× curl", met: login.median <= 1.2 * limit.median)])]
}

/// OpenNDSRecipe's gateway, client and Internet stand-in, started and stopped by process id.
private final class OpenNDSBench {
    static let page = "internet stand-in"
    /// The Internet stand-in's page, by address: openNDS's firewall holds it until the login.
    static let probe = "http://\(OpenNDSRecipe.internetAddress)/ contains=\(page)"

    /// The requests click-through.lua and the runtime make, as curl processes: evaluate's
    /// probe and splash, authenticate's probe and splash, the splash's GET form (`fas` first,
    /// percent-encoded, as a browser sends it), the probe, the "Thank you" page's form, the
    /// probe that finds the network open, and the runtime's check of the success.
    static let curlLogin = """
        set -e
        c="\(Curl.path) -s -m 5"
        probe=http://\(OpenNDSRecipe.internetAddress)/
        form=http://\(OpenNDSRecipe.gatewayAddress):\(OpenNDSRecipe.gatewayPort)/opennds_preauth/
        splash=$($c -o /dev/null -w '%{redirect_url}' $probe); $c -o /dev/null "$splash"
        splash=$($c -o /dev/null -w '%{redirect_url}' $probe)
        fas=$($c "$splash" | sed -n 's/.*name="fas" value="\\([^"]*\\)".*/\\1/p' | head -n 1)
        [ -n "$fas" ]
        $c -o /dev/null -G --data-urlencode "fas=$fas" --data-urlencode continue=clicked "$form"
        $c -o /dev/null $probe
        $c -o /dev/null -G --data-urlencode "fas=$fas" --data-urlencode landing=yes "$form"
        $c $probe | grep -q '\(page)'
        $c $probe | grep -q '\(page)'
        """

    let recipe: OpenNDSRecipe
    private var processes: [ChildProcess] = []
    private var gateway: ChildProcess?
    private var client = ""

    init(directory: String) throws {
        recipe = OpenNDSRecipe(prefix: "bo\(getpid() % 100_000)", directory: directory)
        do {
            try FileManager.default.createDirectory(atPath: recipe.clientFiles.folder, withIntermediateDirectories: true)
            try "".write(toFile: recipe.clientFiles.file, atomically: true, encoding: .utf8)
            try recipe.dhclientConfiguration.write(toFile: "\(directory)/dhclient.conf", atomically: true, encoding: .utf8)
            try FileManager.default.createDirectory(atPath: "\(directory)/www", withIntermediateDirectories: true)
            try "<html><body>\(Self.page)</body></html>\n".write(toFile: "\(directory)/www/index.html", atomically: true, encoding: .utf8)
            _ = try runProcess(["/bin/sh", "-c", recipe.namespacesScript])
            let internet = try ChildProcess(["/usr/sbin/ip", "netns", "exec", recipe.internet, "/bin/sh", "-c",
                                             "exec /usr/bin/python3 -m http.server 80 --bind \(OpenNDSRecipe.internetAddress) --directory \(directory)/www 2>/dev/null"])
            processes.append(internet)
            let fetch = ["/usr/sbin/ip", "netns", "exec", recipe.gateway, Curl.path, "-s", "-m", "1", "http://\(OpenNDSRecipe.internetAddress)/"]
            var answered = false
            for _ in 0..<100 where !answered {
                answered = (try? runProcess(fetch))?.contains(Self.page) == true
                if !answered { usleep(100_000) }
            }
            guard answered else { throw BenchError("the Internet stand-in did not answer") }
            // openNDS says it runs on its standard error.
            let gateway = try ChildProcess(["/usr/sbin/ip", "netns", "exec", recipe.gateway, "/bin/sh", "-c",
                                            "exec 2>&1\n" + recipe.gatewayScript(theme: .clickToContinue, announcesCaptivePortalAPI: false)])
            processes.append(gateway)
            self.gateway = gateway
            _ = try gateway.readLine(containing: "openNDS is now running", before: Deadline.now.nanoseconds + 60_000_000_000)
            // dhclient goes to the background once it has its lease.
            let dhclient = try ChildProcess(recipe.dhclient)
            dhclient.closeInput()
            _ = dhclient.wait()
            let lease = try String(contentsOfFile: "\(directory)/dhcp/dhclient.leases", encoding: .utf8)
            guard let address = lease.split(separator: "fixed-address ").dropFirst().first?.prefix(while: { $0 != ";" }) else {
                throw BenchError("dhclient got no lease: \(lease)")
            }
            client = String(address)
        } catch {
            tearDown()
            throw error
        }
    }

    /// The client back to preauthenticated, as openNDS puts it when its session ends.
    func deauthenticate() throws {
        guard try isAuthenticated() else { return }
        _ = try runProcess(ndsctl(["deauth", client]))
    }

    func isAuthenticated() throws -> Bool {
        try runProcess(ndsctl(["json", client])).contains(#""Authenticated""#)
    }

    private func ndsctl(_ arguments: [String]) throws -> [String] {
        guard let gateway else { throw BenchError("openNDS is not running") }
        return recipe.ndsctl(openNDS: gateway.pid, arguments)
    }

    /// Every process in the namespaces ended by its id, the namespaces deleted.
    func tearDown() {
        _ = try? runProcess(["/bin/sh", "-c", recipe.removalScript])
        for process in processes { process.killAndWait() }
        processes = []
    }
}
