#if canImport(Glibc)
package import Glibc
#endif
public import HotspotCore
import Locking

/// A TCP connection or a UDP session to one allowed host, leaving by the network's
/// interface (SO_BINDTODEVICE), its name resolved through the network's resolvers. Every
/// operation ends by the `end` it is given and stops early when `isCancelled` turns true.
/// Failures carry the same prefixes as HTTP's (`timeout`, `dns`, `connect`,
/// `not_allowed`, `too_large`, `protocol`), and `closed` once the peer has closed.
public final class BoundSocket: Sendable {
    public enum Transport: String, Sendable {
        case tcp, udp
    }

    /// What one `receive` reads.
    public enum Amount: Sendable, Equatable {
        /// A line, without its `\n` or `\r\n`; longer than `maximum` bytes is `too_large`.
        /// At the end of the stream, the bytes left make the last line.
        case line(maximum: Int)
        /// Exactly `count` bytes, fewer only when the stream ends first.
        case bytes(Int)
        /// Everything until the peer closes; more than `maximum` bytes is `too_large`.
        case all(maximum: Int)
        /// One datagram (UDP); larger than `maximum` is `too_large`.
        case datagram(maximum: Int)
    }

    /// The largest datagram UDP over IPv4 carries.
    public static let largestDatagram = 65_507

    private struct Connection {
        var descriptor: Int32
        /// Bytes received and not yet handed out (TCP).
        var buffered: [UInt8] = []
        var ended = false
    }

    public let transport: Transport
    /// `host:port` as the script named it, for messages.
    public let peer: String
    private let connection: PlainLock<Connection>

    private init(transport: Transport, peer: String, descriptor: Int32) {
        self.transport = transport
        self.peer = peer
        connection = PlainLock(Connection(descriptor: descriptor))
    }

    deinit { close() }

    /// Connects to `host` (a name, or an IPv4 or IPv6 address) on `port`. The host is
    /// checked against `allowedHosts` before anything is resolved or sent.
    public static func open(_ transport: Transport, host: String, port: UInt16, binding: NetworkBinding,
                            allowedHosts: [HostPattern], end: ContinuousClock.Instant,
                            isCancelled: () -> Bool) throws(HTTPFailure) -> BoundSocket {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        guard allowedHosts.contains(where: { $0.matches(bare) || $0.matches("[\(bare)]") }) else {
            throw HTTPFailure(.notAllowed, host)
        }
        let peer = bare.contains(":") ? "[\(bare)]:\(port)" : "\(bare):\(port)"
        var lastProblem = HTTPFailure(.dns, "no address for \(bare)")
        for address in try addresses(of: bare, port: port, transport: transport, binding: binding, end: end) {
            do {
                let descriptor = try connect(address, transport: transport, interface: binding.interface, peer: peer,
                                             end: end, isCancelled: isCancelled)
                return BoundSocket(transport: transport, peer: peer, descriptor: descriptor)
            } catch {
                if error.kind == .timeout { throw error }
                lastProblem = error
            }
        }
        throw lastProblem
    }

    /// Sends all of `bytes` (TCP) or one datagram (UDP); returns how many were sent.
    public func send(_ bytes: [UInt8], end: ContinuousClock.Instant, isCancelled: () -> Bool) throws(HTTPFailure) -> Int {
        if transport == .udp, bytes.count > Self.largestDatagram {
            throw HTTPFailure(.tooLarge, "a datagram of \(bytes.count) bytes (at most \(Self.largestDatagram))")
        }
        return try connection.withLock { connection throws(HTTPFailure) in
            let descriptor = try open(connection)
            var offset = 0
            repeat {
                let sent = bytes.withUnsafeBytes {
                    Glibc.send(descriptor, $0.baseAddress.map { $0 + offset }, $0.count - offset, Int32(MSG_NOSIGNAL))
                }
                if sent >= 0 {
                    offset += sent
                } else if errno == EAGAIN || errno == EINTR {
                    try Self.wait(descriptor, for: POLLOUT, end: end, isCancelled: isCancelled, doing: "sending to \(peer)")
                } else {
                    throw failure(errno, doing: "sending to")
                }
            } while offset < bytes.count
            return offset
        }
    }

    public func receive(_ amount: Amount, end: ContinuousClock.Instant,
                        isCancelled: () -> Bool) throws(HTTPFailure) -> [UInt8] {
        try connection.withLock { connection throws(HTTPFailure) in
            let descriptor = try open(connection)
            if case .datagram(let maximum) = amount {
                return try receiveDatagram(descriptor, maximum: maximum, end: end, isCancelled: isCancelled)
            }
            while true {
                if let taken = try take(amount, from: &connection) { return taken }
                try fill(&connection, descriptor: descriptor, end: end, isCancelled: isCancelled)
            }
        }
    }

    /// Closes the socket; later operations fail with `closed`. Closing twice is harmless.
    public func close() {
        connection.withLock { connection in
            if connection.descriptor >= 0 { _ = Glibc.close(connection.descriptor) }
            connection.descriptor = -1
        }
    }

    public var isClosed: Bool { connection.withLock { $0.descriptor < 0 } }

    // MARK: receiving

    /// What `amount` asks for, taken from the buffer, if it is there; nil to read more.
    private func take(_ amount: Amount, from connection: inout Connection) throws(HTTPFailure) -> [UInt8]? {
        func split(at count: Int) -> [UInt8] {
            defer { connection.buffered.removeFirst(count) }
            return Array(connection.buffered[..<count])
        }
        switch amount {
        case .line(let maximum):
            if let newline = connection.buffered.firstIndex(of: UInt8(ascii: "\n")) {
                let carriageReturn = newline > 0 && connection.buffered[newline - 1] == UInt8(ascii: "\r")
                let length = carriageReturn ? newline - 1 : newline
                guard length <= maximum else { throw lineTooLong(maximum) }
                let line = Array(connection.buffered[..<length])
                connection.buffered.removeFirst(newline + 1)
                return line
            }
            guard connection.buffered.count <= maximum + 1 else { throw lineTooLong(maximum) }
        case .bytes(let count):
            if connection.buffered.count >= count { return split(at: count) }
        case .all(let maximum):
            guard connection.buffered.count <= maximum else {
                throw HTTPFailure(.tooLarge, "\(peer) sent more than \(maximum) bytes")
            }
            if connection.ended { return split(at: connection.buffered.count) }
            return nil
        case .datagram:
            return nil
        }
        guard connection.ended else { return nil }
        guard !connection.buffered.isEmpty else { throw HTTPFailure(.closed, "\(peer) closed the connection") }
        return split(at: connection.buffered.count)
    }

    private func lineTooLong(_ maximum: Int) -> HTTPFailure {
        HTTPFailure(.tooLarge, "a line from \(peer) longer than \(maximum) bytes")
    }

    private func fill(_ connection: inout Connection, descriptor: Int32, end: ContinuousClock.Instant,
                      isCancelled: () -> Bool) throws(HTTPFailure) {
        guard !connection.ended else { return }
        var chunk = [UInt8](repeating: 0, count: 16_384)
        while true {
            let received = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if received > 0 {
                connection.buffered += chunk[..<received]
                return
            }
            if received == 0 {
                connection.ended = true
                return
            }
            guard errno == EAGAIN || errno == EINTR else { throw failure(errno, doing: "receiving from") }
            try Self.wait(descriptor, for: POLLIN, end: end, isCancelled: isCancelled, doing: "waiting for \(peer)")
        }
    }

    private func receiveDatagram(_ descriptor: Int32, maximum: Int, end: ContinuousClock.Instant,
                                 isCancelled: () -> Bool) throws(HTTPFailure) -> [UInt8] {
        var datagram = [UInt8](repeating: 0, count: Self.largestDatagram + 1)
        while true {
            // MSG_TRUNC: the datagram's real length, even when it did not fit.
            let length = datagram.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, Int32(MSG_TRUNC)) }
            if length >= 0 {
                guard length <= maximum else {
                    throw HTTPFailure(.tooLarge, "a datagram of \(length) bytes from \(peer) (at most \(maximum))")
                }
                return Array(datagram[..<length])
            }
            guard errno == EAGAIN || errno == EINTR else { throw failure(errno, doing: "receiving from") }
            try Self.wait(descriptor, for: POLLIN, end: end, isCancelled: isCancelled, doing: "waiting for \(peer)")
        }
    }

    private func open(_ connection: Connection) throws(HTTPFailure) -> Int32 {
        guard connection.descriptor >= 0 else { throw HTTPFailure(.closed, "the \(transport.rawValue) socket to \(peer) is closed") }
        return connection.descriptor
    }

    private func failure(_ code: Int32, doing action: String) -> HTTPFailure {
        let reason = String(cString: strerror(code))
        switch code {
        case EPIPE, ECONNRESET: return HTTPFailure(.closed, "\(peer) reset the connection")
        case ECONNREFUSED: return HTTPFailure(.connect, "\(peer) refused (\(reason))")
        default: return HTTPFailure(.protocol, "\(action) \(peer): \(reason)")
        }
    }

    // MARK: connecting

    /// Waits until `descriptor` is ready for `events`, in slices short enough to notice a
    /// cancellation promptly.
    private static func wait(_ descriptor: Int32, for events: Int32, end: ContinuousClock.Instant,
                             isCancelled: () -> Bool, doing action: String) throws(HTTPFailure) {
        while true {
            if isCancelled() { throw HTTPFailure(.timeout, "the command was cancelled") }
            let remaining = ContinuousClock.now.duration(to: end)
            guard remaining > .zero else { throw HTTPFailure(.timeout, action) }
            var poller = pollfd(fd: descriptor, events: Int16(events), revents: 0)
            let ready = poll(&poller, 1, Int32(min(remaining / .milliseconds(1) + 1, 50)))
            if ready > 0 { return }
            if ready < 0, errno != EINTR { throw HTTPFailure(.protocol, "\(action): \(String(cString: strerror(errno)))") }
        }
    }

    private static func connect(_ address: SocketAddress, transport: Transport, interface: String?, peer: String,
                                end: ContinuousClock.Instant, isCancelled: () -> Bool) throws(HTTPFailure) -> Int32 {
        let type = transport == .tcp ? SOCK_STREAM : SOCK_DGRAM
        let descriptor = socket(Int32(address.family), Int32(type.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw HTTPFailure(.connect, "cannot open a socket: \(String(cString: strerror(errno)))") }
        do throws(HTTPFailure) {
            if let interface { try BoundDNS.bind(descriptor, to: interface) }
            var storage = address.storage
            let started = withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(descriptor, $0, address.length) }
            }
            if started != 0 {
                guard errno == EINPROGRESS else {
                    throw HTTPFailure(.connect, "\(peer): \(String(cString: strerror(errno)))")
                }
                try wait(descriptor, for: POLLOUT, end: end, isCancelled: isCancelled, doing: "connecting to \(peer)")
                var problem: Int32 = 0
                var length = socklen_t(MemoryLayout<Int32>.size)
                getsockopt(descriptor, SOL_SOCKET, SO_ERROR, &problem, &length)
                guard problem == 0 else { throw HTTPFailure(.connect, "\(peer): \(String(cString: strerror(problem)))") }
            }
            return descriptor
        } catch {
            _ = Glibc.close(descriptor)
            throw error
        }
    }

    /// The addresses to try: the literal itself, the network's resolvers' answers, or
    /// without resolvers the system's.
    private static func addresses(of host: String, port: UInt16, transport: Transport, binding: NetworkBinding,
                                  end: ContinuousClock.Instant) throws(HTTPFailure) -> [SocketAddress] {
        if let literal = SocketAddress(literal: host, port: port) { return [literal] }
        if !binding.resolvers.isEmpty {
            return try BoundDNS.lookup(host, binding: binding, deadline: end).addresses.compactMap { SocketAddress(literal: $0, port: port) }
        }
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32((transport == .tcp ? SOCK_STREAM : SOCK_DGRAM).rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, nil, &hints, &list)
        guard status == 0, let list else {
            throw HTTPFailure(.dns, "cannot resolve \(host): \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(list) }
        var found: [SocketAddress] = []
        for entry in sequence(first: list, next: { $0.pointee.ai_next }) {
            if let address = SocketAddress(entry.pointee.ai_addr, length: entry.pointee.ai_addrlen, port: port) {
                found.append(address)
            }
        }
        return found
    }
}

/// An IPv4 or IPv6 socket address.
package struct SocketAddress {
    package var storage = sockaddr_storage()
    package var length: socklen_t
    package var family: sa_family_t { storage.ss_family }

    package init?(literal: String, port: UInt16) {
        var v4 = sockaddr_in()
        var v6 = sockaddr_in6()
        if inet_pton(AF_INET, literal, &v4.sin_addr) == 1 {
            v4.sin_family = sa_family_t(AF_INET)
            v4.sin_port = port.bigEndian
            length = socklen_t(MemoryLayout<sockaddr_in>.size)
            withUnsafeBytes(of: v4) { bytes in withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: bytes) } }
        } else if inet_pton(AF_INET6, literal, &v6.sin6_addr) == 1 {
            v6.sin6_family = sa_family_t(AF_INET6)
            v6.sin6_port = port.bigEndian
            length = socklen_t(MemoryLayout<sockaddr_in6>.size)
            withUnsafeBytes(of: v6) { bytes in withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: bytes) } }
        } else {
            return nil
        }
    }

    /// An IPv6 address's 16 bytes as text (RFC 5952's form, from inet_ntop).
    package static func ipv6Text(_ bytes: ArraySlice<UInt8>) -> String {
        var address = in6_addr()
        withUnsafeMutableBytes(of: &address) { $0.copyBytes(from: bytes.prefix(16)) }
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        _ = inet_ntop(AF_INET6, &address, &text, socklen_t(text.count))  // cannot fail for AF_INET6 with room enough
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// A link-local IPv6 address (fe80::/10) is only meaningful with its interface: sets it
    /// when none is set yet.
    mutating func setScopeIfLinkLocal(_ index: UInt32) {
        guard family == sa_family_t(AF_INET6), index != 0 else { return }
        withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { address in
                let first = withUnsafeBytes(of: address.pointee.sin6_addr) { ($0[0], $0[1]) }
                if first.0 == 0xfe, first.1 & 0xc0 == 0x80, address.pointee.sin6_scope_id == 0 { address.pointee.sin6_scope_id = index }
            }
        }
    }

    /// Whether `other` has this address and port (its scope and flow aside).
    func isSameHostAndPort(as other: sockaddr_storage) -> Bool {
        guard other.ss_family == family else { return false }
        var mine = storage, theirs = other
        return withUnsafeBytes(of: &mine) { a in
            withUnsafeBytes(of: &theirs) { b in
                // sockaddr_in: port at 2, address at 4 (4 bytes); sockaddr_in6: port at 2, address at 8 (16 bytes).
                family == sa_family_t(AF_INET) ? a[2..<8].elementsEqual(b[2..<8])
                    : a[2..<4].elementsEqual(b[2..<4]) && a[8..<24].elementsEqual(b[8..<24])
            }
        }
    }

    /// A copy of a resolver's answer with `port` set.
    init?(_ address: UnsafeMutablePointer<sockaddr>?, length: socklen_t, port: UInt16) {
        guard let address, length <= socklen_t(MemoryLayout<sockaddr_storage>.size) else { return nil }
        self.length = length
        withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: UnsafeRawBufferPointer(start: address, count: Int(length))) }
        switch Int32(storage.ss_family) {
        case AF_INET:
            withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_port = port.bigEndian }
            }
        case AF_INET6:
            withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_port = port.bigEndian }
            }
        default:
            return nil
        }
    }
}
