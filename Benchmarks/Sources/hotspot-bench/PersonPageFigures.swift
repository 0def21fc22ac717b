#if canImport(Glibc)
import Glibc
#endif
import LuaSandbox

/// The person's page, `hotspot-helper web`, beside a daemon keeping one network with two
/// helpers: its first load, how soon an event in the daemon reaches an open page, and the
/// web process's memory once idle.
func measurePersonPage(runs: Int = 20) async throws -> [Figure] {
    let daemon = try IdleDaemon(helperScripts: [Scripts.helper(0), Scripts.helper(1)])
    defer { _ = daemon.stop() }
    let state = daemon.state
    let web = try ChildProcess([HelperCommand.path, "web", "--state-dir", state.path, "--no-open"])
    web.closeInput()
    defer { _ = web.terminate() }
    let address = try web.readLine(containing: "http://127.0.0.1:")
    guard let port = loopbackPort(in: address), let token = address.split(separator: "token=").last?.split(separator: " ").first
    else { throw BenchError("hotspot-helper web printed no address: \(address)") }
    let cookie = "hh_session=\(token)"
    let controlSocket = state.path + "/control.sock"

    // First load, as a browser without a cache: the page (the token in its address), its
    // script and style, then the status, on one new connection each time.
    var loads: [Double] = []
    var statusAlone: [Double] = []
    for _ in 0...runs {
        let start = Deadline.now.nanoseconds
        let connection = try LocalStream(port: port)
        let page = try connection.get("/?token=\(token)", port: port)
        guard page.status == 200, page.headers.lowercased().contains("set-cookie: \(cookie.lowercased())") else { throw BenchError("the page answered \(page.status)") }
        for target in ["/app.js", "/style.css", "/api/status"] {
            let answer = try connection.get(target, port: port, cookie: cookie)
            guard answer.status == 200 else { throw BenchError("GET \(target) answered \(answer.status)") }
        }
        loads.append(nanoseconds(since: start))
        let asked = Deadline.now.nanoseconds
        _ = try controlRequest(#"{"command":"status"}"#, socket: controlSocket)
        statusAlone.append(nanoseconds(since: asked))
    }
    let firstEver = loads.removeFirst()
    statusAlone.removeFirst()

    // An event: switching a helper off or on (helper-001, which claims no network here) logs
    // one. Timed from the request on the control socket to its line on the page's event
    // stream, and to its line on a watch of the daemon's own, open meanwhile.
    let stream = try LocalStream(port: port)
    try stream.send("GET /api/events HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nCookie: \(cookie)\r\n\r\n")
    _ = try stream.read(upTo: ": connected\n\n")
    let watch = try LocalStream(unixSocket: controlSocket)
    try watch.send(#"{"command":"watch"}"# + "\n")
    _ = try watch.read(upTo: "\n")
    var onPage: [Double] = []
    var onWatch: [Double] = []
    for run in 0...runs {
        try await Task.sleep(for: .milliseconds(50))
        stream.discardArrived()
        watch.discardArrived()
        let start = Deadline.now.nanoseconds
        let command = run.isMultiple(of: 2) ? "disable" : "enable"
        _ = try controlRequest(#"{"command":"\#(command)","helper":"helper-001"}"#, socket: controlSocket)
        _ = try watch.read(upTo: "\n")
        let watched = nanoseconds(since: start)
        _ = try stream.read(upTo: "data: ")
        let paged = nanoseconds(since: start)
        guard run > 0 else { continue }
        onWatch.append(watched)
        onPage.append(paged)
    }

    try await Task.sleep(for: .seconds(1))
    let memory = try ResidentMemory(pid: web.pid)

    let (load, status) = (Samples(loads), Samples(statusAlone))
    let (event, watched) = (Samples(onPage), Samples(onWatch))
    return [
        Figure(
            name: "Person's page, first load",
            result: "median \(duration(nanoseconds: load.median)), min \(duration(nanoseconds: load.minimum)), max \(duration(nanoseconds: load.maximum)); the web process's very first \(duration(nanoseconds: firstEver)) (n=\(runs))",
            baseline: (duration(nanoseconds: status.median), ratio(load.median, over: status.median),
                       "Page load: GET / with the token, then /app.js, /style.css and /api/status with the cookie, on a new loopback connection, from `connect` to the last byte; the very first is the web process's first load after it started. Baseline: the daemon's own `status` request on its control socket, which /api/status relays, median of the same runs."),
            goals: [.init(text: "median ≤ 100 ms", met: load.median <= 100_000_000)]),
        Figure(
            name: "Person's page, event to open page",
            result: "median \(duration(nanoseconds: event.median)), p99 \(duration(nanoseconds: event.percentile(99))), max \(duration(nanoseconds: event.maximum)) (n=\(runs))",
            baseline: (duration(nanoseconds: watched.median), ratio(event.median, over: watched.median),
                       "Event to page: from a `disable`/`enable` request on the daemon's control socket (its state directory written, then an event logged) to the event's line on the page's /api/events stream. Baseline: the same event's line on a `watch` of the control socket, the daemon's own stream, which the page relays."),
            goals: [.init(text: "median ≤ 100 ms", met: event.median <= 100_000_000)]),
        Figure(
            name: "Person's page, web process idle",
            result: "\(mebibytes(memory.total)) resident (anonymous \(mebibytes(memory.anonymous))), 1 s after the loads above, one event stream open",
            goals: [.init(text: "≤ 20 MiB", met: memory.total <= 20 << 20)]),
    ]
}

/// One request line to the daemon's control socket; its reply line.
private func controlRequest(_ request: String, socket: String) throws -> String {
    let connection = try LocalStream(unixSocket: socket)
    try connection.send(request + "\n")
    let reply = String(decoding: try connection.read(upTo: "\n"), as: UTF8.self)
    guard reply.contains(#""ok":true"#) else { throw BenchError("the daemon refused \(request): \(reply)") }
    return reply
}
