#if canImport(Glibc)
import Glibc
#endif
import LuaSandbox

/// The peer: captivity-cli 3.2.1's own `login` against its own portal simulator (`simple`),
/// beside `hotspot-helper connect` with a script doing the same login and one curl making
/// the same requests. All three are commands, so each is timed from its spawn to its exit;
/// a fresh simulator and (for connect) a fresh state directory for every run, the three
/// taking turns. captivity runs from the virtual environment `make bench` makes (`make peer`).
func measurePeerLogin(runs: Int = 12) async throws -> [Figure] {
    let peer = try CaptivityPeer()
    let scratch = try ScratchDirectory()
    defer { scratch.remove() }
    let script = try scratch.write(Scripts.simplePortalLogin, to: "simple.lua")
    let network = "Simple-WiFi"
    try peer.storeCredentials(network: network, home: scratch.path)
    var ours: [Double] = [], theirs: [Double] = [], curls: [Double] = []
    // Run 0 only warms the page cache.
    for run in 0...runs {
        var times: [Double] = [0, 0, 0]  // ours, the peer's, curl's
        // Each contender goes first, second and third in turn.
        let order = [0, 1, 2].map { ($0 + run) % 3 }
        for contender in order {
            let simulator = try await peer.startSimulator()
            defer { simulator.process.killAndWait() }
            switch contender {
            case 0:
                let state = scratch.path + "/state-\(run)"
                times[0] = try timedRun(HelperCommand.connect([
                    "--scripts", script, "--ssid", network, "--interface", "lo", "--state-dir", state,
                    "--probe-url", simulator.url + "/generate_204",
                ]), marker: #""to":"authenticated""#).toExit
            case 1:
                times[1] = try timedRun(peer.login(simulator: simulator.url, network: network, home: scratch.path)).toExit
            default:
                times[2] = try timedRun(Scripts.simplePortalCurl(simulator.url)).toExit
            }
        }
        guard run > 0 else { continue }
        ours.append(times[0])
        theirs.append(times[1])
        curls.append(times[2])
    }
    let (login, peerLogin, curl) = (Samples(ours), Samples(theirs), Samples(curls))
    let speedUp = peerLogin.median / login.median
    let setUp = "against captivity-cli 3.2.1's own simulator (`captivity simulate --scenario simple`), a fresh one each run, each side from posix_spawn to its exit; `hotspot-helper connect --json --interface lo --state-dir FRESH` with a script that logs in as captivity does (probe, login page, its form with username and password, probe), the three taking turns."
    return [
        Figure(
            name: "Login vs the peer, captivity-cli 3.2.1 (simple)",
            result: "median \(duration(nanoseconds: login.median)), min \(duration(nanoseconds: login.minimum)), max \(duration(nanoseconds: login.maximum)); \(fixed(speedUp, decimals: 1))× faster (n=\(runs))",
            baseline: (duration(nanoseconds: peerLogin.median), ratio(login.median, over: peerLogin.median),
                       "Login vs the peer, " + setUp + " Baseline: captivity's own `captivity login --network N --portal URL`, its probes pointed at the simulator (Benchmarks/Peer/captivity_login.py)."),
            goals: [.init(text: "≥ 8× faster than the peer", met: speedUp >= 8)]),
        Figure(
            name: "Login vs one curl, at the peer's simulator (simple)",
            result: "median \(duration(nanoseconds: login.median)) (the same runs as the row above)",
            baseline: (duration(nanoseconds: curl.median), ratio(login.median, over: curl.median),
                       "Login vs one curl at the peer's simulator, " + setUp + " Baseline: one `curl` process making the script's and the runtime's requests (the probe, the login page, the form, the script's probe and the runtime's)."),
            goals: [.init(text: "median ≤ 2× one curl", met: login.median <= 2 * curl.median)]),
    ]
}

/// captivity-cli's source from its PyPI release and the packages it needs, in the bench's
/// virtual environment (`make peer`).
private struct CaptivityPeer {
    static let environment = HelperCommand.projectRoot.appendingPathComponent("Benchmarks/.build/peer-venv").path
    static let harness = HelperCommand.projectRoot.appendingPathComponent("Benchmarks/Peer/captivity_login.py").path
    let python = environment + "/bin/python"
    let source = environment + "/src"

    init() throws {
        guard access(python, X_OK) == 0, access(source + "/captivity/cli.py", R_OK) == 0 else {
            throw BenchError("no captivity-cli in \(Self.environment); `make peer` makes it")
        }
    }

    /// `arguments` run by the environment's Python with captivity importable, its files
    /// (credentials, cache) kept under `home`.
    private func command(_ arguments: [String], home: String) -> [String] {
        ["/usr/bin/env", "PYTHONPATH=\(source)", "HOME=\(home)", "XDG_CONFIG_HOME=\(home)/config",
         "XDG_DATA_HOME=\(home)/data", python] + arguments
    }

    /// `captivity creds store NETWORK`, answering its prompts.
    func storeCredentials(network: String, home: String) throws {
        try runProcess(command(["-m", "captivity", "creds", "store", network], home: home), input: Array("bench-user\nbench-pass\n".utf8))
    }

    func login(simulator: String, network: String, home: String) -> [String] {
        command([Self.harness, simulator, network], home: home)
    }

    /// `captivity simulate --scenario simple` on a free loopback port, once it answers.
    func startSimulator() async throws -> (process: ChildProcess, url: String) {
        let port = try freeLoopbackPort()
        let process = try ChildProcess(command(["-m", "captivity", "simulate", "--port", String(port), "--scenario", "simple"], home: "/tmp"))
        process.closeInput()
        for _ in 0..<500 {
            if let connection = try? LocalStream(port: port), (try? connection.get("/status", port: port))?.status == 200 {
                return (process, "http://127.0.0.1:\(port)")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        process.killAndWait()
        throw BenchError("captivity's simulator did not answer on port \(port)")
    }
}

/// A port nothing listens on now, as the system picks one.
private func freeLoopbackPort() throws -> Int {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard descriptor >= 0 else { throw BenchError("socket: \(String(cString: strerror(errno)))") }
    defer { close(descriptor) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = in_addr_t(UInt32(0x7f00_0001).bigEndian)
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0 }
    }
    guard bound else { throw BenchError("cannot find a free port: \(String(cString: strerror(errno)))") }
    return Int(UInt16(bigEndian: address.sin_port))
}

extension Scripts {
    /// One curl making the requests `connect` makes with `simplePortalLogin` at captivity's
    /// simulator: the probe (redirected to /login), the login page, the form, the script's
    /// probe and the runtime's.
    static func simplePortalCurl(_ simulator: String) -> [String] {
        [Curl.path, "--silent", simulator + "/generate_204", simulator + "/login",
         "--next", "--silent", "--data", "username=bench-user&password=bench-pass", simulator + "/login",
         "--next", "--silent", simulator + "/generate_204", simulator + "/generate_204"]
    }

    /// A login as captivity's does it at its simulator: the probe finds the portal, the
    /// login page's form is filled with a username and a password and posted, and the probe
    /// says the network is open.
    static let simplePortalLogin = """
        return {
          name = "Simple portal",
          hosts = { "127.0.0.1" },
          evaluate = function(cmd) return "high" end,
          authenticate = function(cmd)
            local verdict = cmd:probe()
            if verdict.state == "connected" then return "success" end
            if not verdict.portal_url then return "temporary_failure" end
            local page = cmd:http{ url = verdict.portal_url }
            local form = page and html.forms(page.body, page.url)[1]
            if not form then return "failure" end
            local fields = {}
            for _, field in ipairs(form.fields) do
              if field.name then fields[field.name] = field.value end
            end
            fields.username, fields.password = "bench-user", "bench-pass"
            local answer = cmd:http{ method = form.method, url = form.action, form = fields }
            if not answer or answer.status ~= 200 then return "failure" end
            return cmd:probe().state == "connected" and "success" or "failure"
          end,
          maintain = function(cmd) return cmd:probe().state == "connected" and "success" or "authentication_required" end,
        }
        """
}

extension ChildProcess {
    /// Ends it with SIGKILL and waits for it: the bench's threads block SIGTERM, and a
    /// child that does not unblock it (Python) inherits the block.
    func killAndWait() {
        _ = kill(pid, SIGKILL)
        _ = wait()
    }
}
