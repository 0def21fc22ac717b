#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import HotspotCore
import HotspotNetwork

/// The connectivity verdict with four probes on loopback, three answering 204 after 5, 15
/// and 30 ms and one that never answers: three of four meet the default 75%, so the
/// verdict needs the slowest of the three. Each round's verdict time is put beside that
/// probe's own time (from the start of the check to its answer) in the same round.
func measureProbeVerdict(rounds: Int = 30) throws -> [Figure] {
    let answering = try [5, 15, 30].map { try DelayedNoContentServer(delayMilliseconds: $0) }
    let silent = try SilentListener()
    defer {
        answering.forEach { $0.stop() }
        silent.stop()
    }
    let probes = (answering.map(\.port) + [silent.port]).map {
        Probe(url: "http://127.0.0.1:\($0)/generate_204", expectation: .status(204))
    }
    var verdicts: [Double] = []
    var needed: [Double] = []
    // Round 0 only warms up (libcurl, the page cache, the servers' threads).
    for round in 0...rounds {
        let start = ContinuousClock.now
        let verdict = ConnectivityProbe.run(ProbeSet(probes), binding: NetworkBinding())
        let elapsed = start.duration(to: .now)
        let open = verdict.results.filter { $0.outcome == .open }.map(\.elapsed).sorted()
        guard verdict.state == .connected, open.count >= 3 else {
            throw BenchError("the check ended \(verdict.state.rawValue): \(verdict.details)")
        }
        if round > 0 {
            verdicts.append(elapsed / .nanoseconds(1))
            needed.append(open[2] / .nanoseconds(1))
        }
    }
    let (verdict, slowest) = (Samples(verdicts), Samples(needed))
    return [
        Figure(name: "Probe verdict, 3 of 4 answer (75%)",
               result: "median \(duration(nanoseconds: verdict.median)), max \(duration(nanoseconds: verdict.maximum)) (n=\(rounds))",
               baseline: (duration(nanoseconds: slowest.median), ratio(verdict.median, over: slowest.median),
                          "Probe verdict: the time of the slowest of the three probes the verdict needs (204 after 30 ms), from the start of the same check to its answer; median of the same rounds. The fourth probe never answers (5 s timeout)."),
               goals: [.init(text: "≤ 1.2× the slowest needed probe", met: verdict.median <= 1.2 * slowest.median),
                       .init(text: "max < 5 s (the probe timeout)", met: verdict.maximum < 5e9)]),
    ]
}

/// An HTTP server on 127.0.0.1 that answers every request with 204 after a delay, one
/// thread per connection.
final class DelayedNoContentServer: Sendable {
    let port: Int
    private let socket: Int32

    init(delayMilliseconds: Int) throws {
        (socket, port) = try listeningLoopbackSocket()
        let socket = self.socket
        DispatchQueue(label: "probe-verdict-server").async {
            // Ends when `stop()` shuts the socket down; the socket is closed here, by its reader.
            defer { close(socket) }
            while true {
                let client = accept(socket, nil, nil)
                guard client >= 0 else { return }
                DispatchQueue(label: "probe-verdict-server").async {
                    defer { close(client) }
                    var request: [UInt8] = []
                    var buffer = [UInt8](repeating: 0, count: 4096)
                    while !request.suffix(4).elementsEqual(Array("\r\n\r\n".utf8)) {
                        let count = read(client, &buffer, buffer.count)
                        guard count > 0 else { return }
                        request += buffer[..<count]
                    }
                    usleep(useconds_t(delayMilliseconds * 1000))
                    let reply = "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n"
                    _ = reply.withCString { write(client, $0, strlen($0)) }
                }
            }
        }
    }

    func stop() { shutdown(socket, Int32(SHUT_RDWR)) }
}

/// A socket on 127.0.0.1 that listens and never accepts: requests reach the kernel and
/// nothing ever answers them.
final class SilentListener: Sendable {
    let port: Int
    private let socket: Int32

    init() throws { (socket, port) = try listeningLoopbackSocket() }

    func stop() { close(socket) }
}

private func listeningLoopbackSocket() throws -> (Int32, Int) {
    let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_in(sin_family: sa_family_t(AF_INET), sin_port: 0,
                              sin_addr: in_addr(s_addr: inet_addr("127.0.0.1")), sin_zero: (0, 0, 0, 0, 0, 0, 0, 0))
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(socket, $0, length) == 0 && getsockname(socket, $0, &length) == 0
        }
    }
    guard socket >= 0, bound, listen(socket, 128) == 0 else { throw BenchError("cannot listen on 127.0.0.1: \(errno)") }
    return (socket, Int(UInt16(bigEndian: address.sin_port)))
}
