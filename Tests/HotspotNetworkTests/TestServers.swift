import Foundation
import Hummingbird
import Logging
import NIOCore
import Locking
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A local HTTP server on loopback with the behaviours the HTTP client must handle. It
/// records the `Host` of every request, so tests can prove nothing reached a host.
final class TestHTTPServer: Sendable {
    let port: Int
    private let task: Task<Void, any Error>
    private let log: HostLog
    /// Whether `/probe/switch` is open (204) or behind a portal (302), and when it was asked.
    let probeSwitch: ProbeSwitch

    /// The `Host` of every request received, in order.
    var hostsReached: [String] { log.hosts.withLock { $0 } }

    /// Listening on `host`, loopback's IPv4 address unless told.
    static func start(host: String = "127.0.0.1") async throws -> TestHTTPServer {
        let log = HostLog()
        let probeSwitch = ProbeSwitch()
        let router = Router()
        router.middlewares.add(HostRecorder(log: log))
        addRoutes(to: router)
        addProbeRoutes(to: router, probeSwitch: probeSwitch)
        let (ports, portContinuation) = AsyncStream.makeStream(of: Int.self)
        var logger = Logger(label: "test-server")
        logger.logLevel = .critical
        let app = Application(
            router: router,
            configuration: .init(address: .hostname(host, port: 0)),
            onServerRunning: { channel in portContinuation.yield(channel.localAddress?.port ?? 0) },
            logger: logger)
        let task = Task { try await app.runService(gracefulShutdownSignals: []) }
        var iterator = ports.makeAsyncIterator()
        return TestHTTPServer(port: await iterator.next() ?? 0, task: task, log: log, probeSwitch: probeSwitch)
    }

    private init(port: Int, task: Task<Void, any Error>, log: HostLog, probeSwitch: ProbeSwitch) {
        self.port = port
        self.task = task
        self.log = log
        self.probeSwitch = probeSwitch
    }

    func stop() { task.cancel() }

    static let gzipBody: [UInt8] = {
        // 4 MiB of zeros, compressed by the real gzip tool to a few KiB.
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "head -c 4194304 /dev/zero | gzip -c"]
        let pipe = Pipe()
        process.standardOutput = pipe
        try! process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Array(data)
    }()

    private static func addRoutes(to router: Router<BasicRequestContext>) {
        router.get("/hello") { _, _ in "hello" }
        router.on("/echo", method: .post) { request, _ in
            var request = request
            let body = try await request.collectBody(upTo: 1 << 20)
            let type = request.headers[.contentType] ?? ""
            return "POST|\(type)|\(String(buffer: body))"
        }
        router.get("/echo") { request, _ in "GET|\(request.headers[.init("X-Test")!] ?? "")" }
        router.get("/cookies/set") { _, _ in
            var headers = HTTPFields()
            headers.append(.init(name: .setCookie, value: "session=abc; Path=/"))
            headers.append(.init(name: .setCookie, value: "scoped=1; Path=/cookies/scoped"))
            headers.append(.init(name: .setCookie, value: "tls_only=1; Path=/; Secure"))
            headers.append(.init(name: .setCookie, value: "gone=1; Path=/; Max-Age=0"))
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: "set")))
        }
        router.get("/cookies/show") { request, _ in request.headers[.cookie] ?? "" }
        // 45 new cookies at each call (`round` names them, `size` is each value's), as a hostile
        // portal sets them, and one too large to keep.
        router.get("/cookies/flood/:round") { request, context in
            let round = context.parameters.get("round") ?? "0"
            let size = request.uri.queryParameters["size"].flatMap { Int(String($0)) } ?? 1200
            var headers = HTTPFields()
            for index in 0..<45 {
                headers.append(.init(name: .setCookie, value: "c\(round)_\(index)=\(String(repeating: "v", count: size)); Path=/"))
            }
            headers.append(.init(name: .setCookie, value: "huge=\(String(repeating: "h", count: 5000)); Path=/"))
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: "flooded")))
        }
        router.get("/cookies/scoped/show") { request, _ in request.headers[.cookie] ?? "" }
        router.on("/redirect/:code", method: .get) { request, context in try redirect(request, context) }
        router.on("/redirect/:code", method: .post) { request, context in try redirect(request, context) }
        router.get("/loop") { _, _ in Response(status: .found, headers: [.location: "/loop"]) }
        router.get("/gzip") { _, _ in
            Response(status: .ok, headers: [.contentEncoding: "gzip"],
                     body: .init(byteBuffer: ByteBuffer(bytes: gzipBody)))
        }
        router.get("/big") { _, _ in String(repeating: "x", count: 2 << 20) }
        // Answers what the query asks for: `status`, `type` (Content-Type) and `body`.
        router.get("/respond") { request, _ in
            let query = request.uri.queryParameters
            var headers = HTTPFields()
            if let type = query["type"] { headers[.contentType] = String(type) }
            return Response(status: .init(code: query["status"].flatMap { Int(String($0)) } ?? 200), headers: headers,
                            body: .init(byteBuffer: ByteBuffer(string: query["body"].map(String.init) ?? "")))
        }
        router.get("/drip") { _, _ in
            Response(status: .ok, body: ResponseBody { writer in
                for _ in 0..<600 {
                    try await writer.write(ByteBuffer(string: "."))
                    // A body that trickles in over real time, which is what its tests are about.
                    try await Task.sleep(for: .milliseconds(50))
                }
                try await writer.finish(nil)
            })
        }
    }

    /// What connectivity probes meet: open endpoints, portals, and one that can switch.
    private static func addProbeRoutes(to router: Router<BasicRequestContext>, probeSwitch: ProbeSwitch) {
        router.get("/probe/generate_204") { _, _ in Response(status: .noContent) }
        router.get("/probe/success") { _, _ in "success\n" }
        router.get("/probe/portal") { _, _ in Response(status: .found, headers: [.location: "/login?from=probe"]) }
        router.get("/probe/page") { _, _ in "<html><form action=/login>Accept the terms</form></html>" }
        router.get("/probe/511") { _, _ in Response(status: .networkAuthenticationRequired) }
        router.get("/probe/missing") { _, _ in Response(status: .notFound) }
        router.get("/probe/nm") { _, _ in
            Response(status: .ok, headers: [.init("X-NetworkManager-Status")!: "online"], body: .init(byteBuffer: ByteBuffer(string: "NetworkManager is online\n")))
        }
        router.get("/probe/slow/:ms") { _, context in
            // A probe that answers late in real time, which is what its tests are about.
            try await Task.sleep(for: .milliseconds(try context.parameters.require("ms", as: Int.self)))
            return Response(status: .noContent)
        }
        router.get("/probe/switch") { _, _ in
            probeSwitch.asked.withLock { $0.append(.now) }
            return probeSwitch.isOpen.withLock { $0 } ? Response(status: .noContent) : Response(status: .found, headers: [.location: "/login"])
        }
    }

    private static func redirect(_ request: Request, _ context: BasicRequestContext) throws -> Response {
        let code = try context.parameters.require("code", as: Int.self)
        let target = request.uri.queryParameters["to"].map(String.init) ?? "/hello"
        return Response(status: .init(code: code), headers: [.location: target])
    }
}

final class HostLog: Sendable {
    let hosts = PlainLock<[String]>([])
}

final class ProbeSwitch: Sendable {
    let isOpen = PlainLock(true)
    let asked = PlainLock<[ContinuousClock.Instant]>([])
}

/// A TCP socket on loopback that listens and never accepts: the kernel completes the
/// handshake, takes the request, and no answer ever comes. Close it when done.
func silentListener() -> (socket: Int32, port: Int) {
    let listener = loopbackSocket(SOCK_STREAM)
    listen(listener.socket, 16)
    return listener
}

private struct HostRecorder: RouterMiddleware {
    let log: HostLog

    func handle(_ request: Request, context: BasicRequestContext,
                next: (Request, BasicRequestContext) async throws -> Response) async throws -> Response {
        log.hosts.withLock { $0.append(request.head.authority ?? "") }
        return try await next(request, context)
    }
}

/// A socket bound to a free port of 127.0.0.1, and that port.
func loopbackSocket(_ type: __socket_type) -> (socket: Int32, port: Int) {
    let socket = Glibc.socket(AF_INET, Int32(type.rawValue), 0)
    var address = sockaddr_in(sin_family: sa_family_t(AF_INET), sin_port: 0,
                              sin_addr: in_addr(s_addr: inet_addr("127.0.0.1")), sin_zero: (0, 0, 0, 0, 0, 0, 0, 0))
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            _ = bind(socket, $0, length)
            _ = getsockname(socket, $0, &length)
        }
    }
    return (socket, Int(UInt16(bigEndian: address.sin_port)))
}

/// A DNS server on loopback that answers every A question with 127.0.0.1 for 60 seconds
/// (names starting with `uncached.` for none), and NXDOMAIN for names ending in `.nx`, like
/// a captive portal's resolver hijacking names.
final class TestDNSServer: Sendable {
    let port: Int
    private let socket: Int32
    let queries = PlainLock<[String]>([])

    init() {
        (socket, port) = loopbackSocket(SOCK_DGRAM)
        let thread = Thread { [self] in serve() }
        thread.start()
    }

    /// Wakes the serving thread, which closes the socket itself: closing it here could let
    /// the thread read from another socket that reused the number.
    func stop() { shutdown(socket, Int32(SHUT_RDWR)) }

    private func serve() {
        defer { close(socket) }
        var buffer = [UInt8](repeating: 0, count: 512)
        while true {
            var from = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let count = buffer.withUnsafeMutableBytes { bytes in
                withUnsafeMutablePointer(to: &from) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(socket, bytes.baseAddress, 512, 0, $0, &length) }
                }
            }
            guard count > 12 else { return }
            let query = Array(buffer[..<count])
            var labels: [String] = []
            var offset = 12
            while offset < query.count, query[offset] != 0 {
                let size = Int(query[offset])
                labels.append(String(decoding: query[(offset + 1)..<min(offset + 1 + size, query.count)], as: UTF8.self))
                offset += size + 1
            }
            let name = labels.joined(separator: ".")
            queries.withLock { $0.append(name) }
            let questionEnd = offset + 5
            var answer = Array(query[..<questionEnd])
            answer[2] = 0x81
            if name.hasSuffix(".nx") {
                answer[3] = 0x83
            } else {
                answer[3] = 0x80
                answer[7] = 1
                answer += [0xC0, 0x0C, 0, 1, 0, 1, 0, 0, 0, name.hasPrefix("uncached.") ? 0 : 60, 0, 4, 127, 0, 0, 1]
            }
            _ = answer.withUnsafeBytes { bytes in
                withUnsafePointer(to: &from) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(socket, bytes.baseAddress, bytes.count, 0, $0, length) }
                }
            }
        }
    }
}

/// `openssl s_server` on loopback with a certificate for `localhost` from a CA made for
/// the test: a real TLS peer.
final class TestTLSServer: Sendable {
    let port: Int
    let caFile: String
    private let process: Process

    init(directory: String) throws {
        let script = """
            set -e
            cd '\(directory)'
            openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=hotspot-helper-test-ca \
              -keyout ca.key -out ca.pem 2>/dev/null
            openssl req -newkey rsa:2048 -nodes -subj /CN=localhost -keyout server.key -out server.csr 2>/dev/null
            printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\n' > san.ext
            openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
              -extfile san.ext -out server.pem 2>/dev/null
            """
        let setup = Process()
        setup.executableURL = URL(fileURLWithPath: "/bin/sh")
        setup.arguments = ["-c", script]
        try setup.run()
        setup.waitUntilExit()
        // Below the kernel's ephemeral range (32768 and up), so no server the kernel gave a port
        // to, and no client, already holds it.
        port = Int.random(in: 20000...32000)
        caFile = directory + "/ca.pem"
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = ["s_server", "-quiet", "-accept", "127.0.0.1:\(port)", "-cert", directory + "/server.pem",
                             "-key", directory + "/server.key", "-www"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
    }

    /// A server with its certificates in a new scratch directory, which `stop()` removes.
    static func start() async throws -> TestTLSServer {
        let directory = try scratchDirectory("tls")
        return try await onOwnThread { try TestTLSServer(directory: directory) }
    }

    func stop() {
        // SIGKILL: a server spawned from a thread that blocks SIGTERM inherits the block.
        kill(process.processIdentifier, SIGKILL)
        try? FileManager.default.removeItem(atPath: (caFile as NSString).deletingLastPathComponent)
    }
}
