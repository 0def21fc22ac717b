#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import HotspotNetwork
import Locking
import LinuxFiles

public struct MetricsResponderError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

/// The smallest HTTP server that Prometheus can scrape: `GET /metrics` answered with the
/// exposition, anything else 404 or 405, `Connection: close`. Each connection is answered on
/// a thread of its own, and has `requestDeadline` for its whole exchange: a client that
/// trickles or stalls holds its own thread for that long, and no other client's scrape
/// waits for it. At most `maximumConnections` are open at once, and `maximumPerPeer` from
/// one address; a connection past either cap makes room by closing the oldest one (of that
/// peer, or of all) whose request has not come whole yet. A scraper sends its request at
/// once, so clients that connect and stall, however many, only ever close one another.
public final class MetricsResponder: Sendable {
    /// Where to listen: `PORT` (loopback), `ADDRESS:PORT`, or `[IPv6]:PORT`.
    public struct ListenAddress: Sendable, CustomStringConvertible {
        public let host: String
        public let port: UInt16

        public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

        public static func parse(_ text: String) -> ListenAddress? {
            if let port = UInt16(text) { return ListenAddress(host: "127.0.0.1", port: port) }
            let host: Substring, portText: Substring
            if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
                host = text[text.index(after: text.startIndex)..<close]
                let rest = text[text.index(after: close)...]
                guard rest.hasPrefix(":") else { return nil }
                portText = rest.dropFirst()
            } else {
                guard let colon = text.lastIndex(of: ":") else { return nil }
                host = text[..<colon]
                portText = text[text.index(after: colon)...]
            }
            guard let port = UInt16(portText), SocketAddress(literal: String(host), port: port) != nil else { return nil }
            return ListenAddress(host: String(host), port: port)
        }
    }

    /// What it listens on, with the port the system chose for port 0.
    public let address: ListenAddress
    /// The whole exchange's time, by default.
    public static let requestDeadline: Duration = .seconds(2)
    static let maximumRequestSize = 8 * 1024
    /// Connections answered at once: a scrape comes every 15 s or so from each of a few
    /// Prometheus servers, so more are clients that stall.
    static let maximumConnections = 8
    static let maximumPerPeer = 4

    private let listener: Int32
    private let wakeUp = WakeUpPipe()

    /// Listens on `address` and answers every scrape with what `exposition` returns then,
    /// giving each connection `requestDeadline` for its whole exchange.
    public init(listening address: ListenAddress, requestDeadline: Duration = MetricsResponder.requestDeadline,
                exposition: @escaping @Sendable () async -> [UInt8]) throws(MetricsResponderError) {
        guard var socketAddress = SocketAddress(literal: address.host, port: address.port) else {
            throw MetricsResponderError("\(address) is not an IP address and port")
        }
        let listener = socket(Int32(socketAddress.family), Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard listener >= 0 else { throw MetricsResponderError("cannot create a socket: \(String(cString: strerror(errno)))") }
        var reuse: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &reuse, socklen_t(MemoryLayout<Int32>.size))
        let bound = withUnsafePointer(to: &socketAddress.storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socketAddress.length) }
        }
        guard bound == 0, listen(listener, 16) == 0 else {
            let reason = String(cString: strerror(errno))
            close(listener)
            throw MetricsResponderError("cannot listen on \(address): \(reason)")
        }
        var length = socketAddress.length
        _ = withUnsafeMutablePointer(to: &socketAddress.storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        // sin_port and sin6_port sit at the same offset, right after the family.
        let port = withUnsafeBytes(of: socketAddress.storage) { UInt16(bigEndian: $0.load(fromByteOffset: 2, as: UInt16.self)) }
        self.address = ListenAddress(host: address.host, port: port)
        self.listener = listener
        let wakeUp = self.wakeUp
        DispatchQueue(label: "metrics-responder").async {
            Self.serve(listener, wakeUp: wakeUp, requestDeadline: requestDeadline, exposition: exposition)
        }
    }

    /// Stops listening (the thread closes the socket).
    public func stop() { wakeUp.wake() }

    deinit { stop() }

    /// The connections open, oldest first.
    private struct Open {
        var descriptor: Int32
        var peer: [UInt8]
        /// Whether its request came whole (it is being answered, and is not closed for room).
        var requested = false
    }

    private static func serve(_ listener: Int32, wakeUp: WakeUpPipe, requestDeadline: Duration,
                              exposition: @escaping @Sendable () async -> [UInt8]) {
        let connections = PlainLock<[Open]>([])
        defer {
            close(listener)
            wakeUp.close()
        }
        while true {
            var descriptors = [pollfd(fd: wakeUp.readEnd, events: Int16(POLLIN), revents: 0),
                               pollfd(fd: listener, events: Int16(POLLIN), revents: 0)]
            let ready = poll(&descriptors, 2, -1)
            if ready < 0, errno == EINTR { continue }
            guard ready > 0, descriptors[0].revents == 0 else { return }
            var address = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let connection = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { accept(listener, $0, &length) }
            }
            guard connection >= 0 else { continue }
            _ = fcntl(connection, F_SETFD, FD_CLOEXEC)
            let peer = Self.peer(address)
            let admitted = connections.withLock { open in
                let fromPeer = open.filter { $0.peer == peer }
                let full = fromPeer.count >= maximumPerPeer ? fromPeer : open.count >= maximumConnections ? open : nil
                if let full {
                    // Shut down, not closed: its own thread sees the end, forgets it and closes it.
                    guard let stalled = full.first(where: { !$0.requested }) else { return false }
                    shutdown(stalled.descriptor, Int32(SHUT_RDWR))
                    open.removeAll { $0.descriptor == stalled.descriptor }
                }
                open.append(Open(descriptor: connection, peer: peer))
                return true
            }
            guard admitted else {
                close(connection)
                continue
            }
            _ = fcntl(connection, F_SETFL, fcntl(connection, F_GETFL) | O_NONBLOCK)
            // A serial queue's work runs on dispatch's overcommitting threads, so it gets a
            // thread of its own while others wait on stalled clients (a concurrent queue's
            // threads are as many as the cores).
            DispatchQueue(label: "metrics-connection").async {
                answer(connection, until: ContinuousClock.now + requestDeadline, exposition: exposition) {
                    connections.withLock { open in
                        if let index = open.firstIndex(where: { $0.descriptor == connection }) { open[index].requested = true }
                    }
                }
                // Forgotten before it is closed, so a number the system gives again is never shut down.
                connections.withLock { open in open.removeAll { $0.descriptor == connection } }
                close(connection)
            }
        }
    }

    /// The peer's address bytes (IPv4 or IPv6, without the port).
    private static func peer(_ address: sockaddr_storage) -> [UInt8] {
        withUnsafeBytes(of: address) { bytes in
            switch Int32(address.ss_family) {
            case AF_INET: Array(bytes[4..<8])  // sin_addr
            case AF_INET6: Array(bytes[8..<24])  // sin6_addr
            default: []
            }
        }
    }

    private static func answer(_ connection: Int32, until end: ContinuousClock.Instant,
                               exposition: @escaping @Sendable () async -> [UInt8], requested: () -> Void) {
        guard let requestLine = readRequestLine(connection, until: end) else { return }
        requested()
        let parts = requestLine.split(separator: " ")
        let response: [UInt8]
        if parts.count != 3 || !parts[2].hasPrefix("HTTP/1.") {
            response = Self.response("400 Bad Request", body: Array("not an HTTP/1 request\n".utf8))
        } else if parts[0] != "GET" && parts[0] != "HEAD" {
            response = Self.response("405 Method Not Allowed", body: Array("GET /metrics\n".utf8), extra: "Allow: GET, HEAD\r\n")
        } else if parts[1].split(separator: "?", maxSplits: 1).first != "/metrics" {
            response = Self.response("404 Not Found", body: Array("the metrics are at /metrics\n".utf8))
        } else {
            let body = waitFor(exposition)
            response = Self.response("200 OK", body: parts[0] == "HEAD" ? [] : body, length: body.count,
                                     contentType: "text/plain; version=0.0.4; charset=utf-8")
        }
        write(response, to: connection, until: end)
    }

    /// The exposition, made by a task while this thread (not one of Swift concurrency's) waits.
    private static func waitFor(_ exposition: @escaping @Sendable () async -> [UInt8]) -> [UInt8] {
        let done = DispatchSemaphore(value: 0)
        let result = PlainLock<[UInt8]>([])
        Task {
            let body = await exposition()
            result.withLock { $0 = body }
            done.signal()
        }
        done.wait()
        return result.withLock { $0 }
    }

    /// The request line, once the whole head has come (its blank line), or nil when it does
    /// not come in time or is too large.
    private static func readRequestLine(_ connection: Int32, until end: ContinuousClock.Instant) -> String? {
        var head: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 2048)
        while head.count <= maximumRequestSize {
            if head.count >= 4, head.suffix(4) == Array("\r\n\r\n".utf8) {
                let line = head.split(separator: UInt8(ascii: "\r"), maxSplits: 1).first ?? []
                return String(decoding: line, as: UTF8.self)
            }
            guard waitUntil(connection, POLLIN, end) else { return nil }
            let count = read(connection, &chunk, chunk.count)
            if count < 0, errno == EINTR || errno == EAGAIN { continue }
            guard count > 0 else { return nil }
            head += chunk[0..<count]
        }
        return nil
    }

    private static func write(_ bytes: [UInt8], to connection: Int32, until end: ContinuousClock.Instant) {
        var offset = 0
        while offset < bytes.count, waitUntil(connection, POLLOUT, end) {
            let written = bytes[offset...].withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if written < 0, errno == EINTR || errno == EAGAIN { continue }
            guard written > 0 else { return }
            offset += written
        }
    }

    private static func waitUntil(_ connection: Int32, _ event: Int32, _ end: ContinuousClock.Instant) -> Bool {
        let remaining = end - .now
        guard remaining > .zero else { return false }
        var descriptor = pollfd(fd: connection, events: Int16(event), revents: 0)
        let milliseconds = Int32(clamping: Int((remaining / .milliseconds(1)).rounded(.up)))
        return poll(&descriptor, 1, milliseconds) > 0
    }

    private static func response(_ status: String, body: [UInt8], length: Int? = nil,
                                 contentType: String = "text/plain; charset=utf-8", extra: String = "") -> [UInt8] {
        Array("HTTP/1.1 \(status)\r\nContent-Type: \(contentType)\r\nContent-Length: \(length ?? body.count)\r\n\(extra)Connection: close\r\n\r\n".utf8)
            + body
    }
}
