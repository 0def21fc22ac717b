import HotspotRuntime
import LuaSandbox
import PortalSimulator
import HotspotCore

/// A bound GET through a script: an `authenticate` handler that fetches a small page
/// (the `click-through` simulator's login form, on 127.0.0.1) `requests` times with
/// `cmd:http` and logs how long that took, against the `curl` command fetching the same
/// URL: as one process per request (the goal's comparison), and as one process for
/// `requests` URLs, keeping its connection or opening one per request.
func measureScriptHTTP(requests: Int = 200, rounds: Int = 5, curlProcesses: Int = 50) async throws -> [Figure] {
    let portal = try await SimulatedPortal.start(.clickThrough)
    // Kept until the portal has stopped, which a failure must not skip.
    var figures: [Figure] = []
    var failure: (any Error)?
    do {
        figures = try await measureScriptHTTP(url: portal.url + "login", requests: requests, rounds: rounds,
                                              curlProcesses: curlProcesses)
    } catch {
        failure = error
    }
    await portal.stop()
    if let failure { throw failure }
    return figures
}

private func measureScriptHTTP(url: String, requests: Int, rounds: Int, curlProcesses: Int) async throws -> [Figure] {
    let bench = try await RuntimeBench(sources: [Scripts.fetching(url, times: requests)])
    defer { bench.finish() }
    // Round 0 of each only warms up (connections, page cache, the worker's first transfer).
    var script: [Double] = []
    for round in 0...rounds {
        let ssid = "HTTP-\(round)"
        let state = await bench.runtime.join(NetworkDescription(ssid: ssid))
        await bench.runtime.leave(ssid)
        let logged = bench.probe.takeLogMessages()
        guard state == .authenticated, let seconds = logged.last.flatMap(Double.init) else {
            throw BenchError("the fetching script did not finish (ended \(state), logged \(logged))")
        }
        if round > 0 { script.append(seconds * 1e9 / Double(requests)) }
    }
    var curlEach: [Double] = []
    for run in 0...curlProcesses {
        let start = Deadline.now.nanoseconds
        try runProcess(Curl.fetching([url]))
        if run > 0 { curlEach.append(nanoseconds(since: start)) }
    }
    // One process for every URL, once reusing its connection and once, as cmd:http does
    // (a new transfer handle per request), opening a new one for each.
    var curlAll: [Double] = []
    var curlAllClosing: [Double] = []
    for round in 0...rounds {
        let start = Deadline.now.nanoseconds
        try runProcess(Curl.fetching(Array(repeating: url, count: requests)))
        let closingStart = Deadline.now.nanoseconds
        try runProcess(Curl.fetching(Array(repeating: url, count: requests), closingConnections: true))
        if round > 0 {
            curlAll.append(Double(closingStart - start) / Double(requests))
            curlAllClosing.append(nanoseconds(since: closingStart) / Double(requests))
        }
    }
    let (perRequest, perProcess) = (Samples(script), Samples(curlEach))
    let (inOneProcess, inOneProcessClosing) = (Samples(curlAll), Samples(curlAllClosing))
    let result = "median \(duration(nanoseconds: perRequest.median)) per GET, min \(duration(nanoseconds: perRequest.minimum)), max \(duration(nanoseconds: perRequest.maximum)) (\(rounds) handlers × \(requests) GETs)"
    return [
        Figure(name: "Bound GET: script cmd:http vs curl per process", result: result,
               baseline: (duration(nanoseconds: perProcess.median), ratio(perRequest.median, over: perProcess.median),
                          "Bound GET: `curl --silent --fail --output /dev/null URL` of the same page, one process per request, from posix_spawn to its exit; median of \(curlProcesses)."),
               goals: [.init(text: "≤ 1.5× curl per request", met: perRequest.median <= 1.5 * perProcess.median)]),
        Figure(name: "Bound GET: script cmd:http vs one curl, kept alive", result: result,
               baseline: (duration(nanoseconds: inOneProcess.median), ratio(perRequest.median, over: inOneProcess.median),
                          "Bound GET: one `curl` process fetching the same URL \(requests) times (one connection, kept alive), its whole time divided by \(requests); median of \(rounds) runs.")),
        Figure(name: "Bound GET: script cmd:http vs one curl, new connections", result: result,
               baseline: (duration(nanoseconds: inOneProcessClosing.median), ratio(perRequest.median, over: inOneProcessClosing.median),
                          "Bound GET: the same, with `--header 'Connection: close'`, so curl opens a connection per request (cmd:http reuses its session's).")),
    ]
}

/// The `curl` command-line tool, the baseline for HTTP.
enum Curl {
    static let path = "/usr/bin/curl"

    /// Fetches every URL in turn, bodies thrown away, failing on an HTTP error status;
    /// with `closingConnections`, the server closes each connection after its answer.
    static func fetching(_ urls: [String], closingConnections: Bool = false) -> [String] {
        [path, "--silent", "--fail"] + (closingConnections ? ["--header", "Connection: close"] : [])
            + urls.flatMap { ["--output", "/dev/null", $0] }
    }
}

extension Scripts {
    /// A helper whose `authenticate` GETs `url` `times` times through `cmd:http` and logs
    /// the seconds that took; it claims every network, so each join runs it once.
    static func fetching(_ url: String, times: Int) -> String {
        """
        local URL, TIMES = "\(url)", \(times)
        return {
            name = "HTTP bench",
            hosts = { "127.0.0.1" },
            evaluate = function(cmd) return "high" end,
            authenticate = function(cmd)
                local started = time.now()
                for _ = 1, TIMES do
                    local page, problem = cmd:http{ url = URL }
                    if not page or page.status ~= 200 then error("GET " .. URL .. ": " .. (problem or page.status)) end
                end
                log.info(tostring(time.now() - started))
                return "success"
            end,
        }
        """
    }
}
