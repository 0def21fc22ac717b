#if canImport(Glibc)
import Glibc
#endif

/// Where a network's traffic goes: the interface it leaves by and the resolvers that
/// answer its names. A captive network's resolver often answers differently from the
/// default route's, so its names must be resolved through it.
public struct NetworkBinding: Sendable, Hashable {
    /// The interface traffic leaves by (SO_BINDTODEVICE); nil means the default route.
    public var interface: String?
    /// Resolvers as `address` or `address:port`, IPv6 ones as `address` (link-local with
    /// `%interface`, or the bound interface) or `[address]:port`; empty means the system resolver.
    public var resolvers: [String]
    /// Extra trusted CA certificates (PEM), for portals signed by a private CA.
    public var caFile: String?

    public init(interface: String? = nil, resolvers: [String] = [], caFile: String? = nil) {
        self.interface = interface
        self.resolvers = resolvers
        self.caFile = caFile
    }

    /// Whether `text` is a resolver as `resolvers` takes it.
    public static func isResolverAddress(_ text: String) -> Bool {
        ResolverEndpoint(text, defaultPort: 53) != nil
    }
}

/// The addresses a resolver gave for a name (IPv4, else IPv6), and how long they may be used: the
/// shortest time to live of the answer's records.
public struct ResolvedName: Sendable, Equatable {
    public var addresses: [String]
    public var timeToLive: Duration

    public init(addresses: [String], timeToLive: Duration) {
        self.addresses = addresses
        self.timeToLive = timeToLive
    }
}

/// A small DNS client for A and AAAA records that sends its queries through the bound interface,
/// so names resolve the way the network being evaluated resolves them (libcurl's
/// threaded resolver cannot be bound).
public enum BoundDNS {
    /// The addresses of `name`, asking each resolver in turn until `deadline`: its IPv4
    /// addresses, or when it has none its IPv6 ones. AAAA is asked only then: a captive
    /// network's resolver that drops AAAA questions would cost every lookup its timeout.
    public static func lookup(_ name: String, binding: NetworkBinding,
                              deadline: ContinuousClock.Instant) throws(HTTPFailure) -> ResolvedName {
        guard !binding.resolvers.isEmpty else { throw HTTPFailure(.dns, "no resolver for \(name)") }
        var lastProblem = "no answer"
        for resolver in binding.resolvers {
            guard let server = ResolverEndpoint(resolver, defaultPort: 53) else {
                throw HTTPFailure(.dns, "resolver \"\(resolver)\" is not an IP address[:port]")
            }
            do {
                let resolved = try query(name, type: .a, server: server, interface: binding.interface, deadline: deadline)
                if !resolved.addresses.isEmpty { return resolved }
                let resolved6 = try query(name, type: .aaaa, server: server, interface: binding.interface, deadline: deadline)
                if !resolved6.addresses.isEmpty { return resolved6 }
                lastProblem = "\(server) knows no address for \(name)"
            } catch {
                lastProblem = error.detail
                if error.kind == .timeout { break }
            }
        }
        throw HTTPFailure(.dns, "\(name): \(lastProblem)")
    }

    private static func query(_ name: String, type: DNSMessage.RecordType, server: ResolverEndpoint, interface: String?,
                              deadline: ContinuousClock.Instant) throws(HTTPFailure) -> ResolvedName {
        var address = server.address
        // A link-local server given without its interface is on the bound one.
        if address.family == sa_family_t(AF_INET6), let interface { address.setScopeIfLinkLocal(if_nametoindex(interface)) }
        let socket = Glibc.socket(Int32(address.family), Int32(SOCK_DGRAM.rawValue), 0)
        guard socket >= 0 else { throw HTTPFailure(.dns, "cannot open a socket (errno \(errno))") }
        defer { close(socket) }
        if let interface { try bind(socket, to: interface) }
        let identifier = UInt16.random(in: 0...UInt16.max)
        guard let message = DNSMessage.query(name, type: type, identifier: identifier) else {
            throw HTTPFailure(.dns, "\"\(name)\" is not a valid host name")
        }
        let sent = message.withUnsafeBytes { bytes in
            withUnsafePointer(to: &address.storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(socket, bytes.baseAddress, bytes.count, 0, $0, address.length) }
            }
        }
        guard sent == message.count else { throw HTTPFailure(.dns, "cannot send to \(server) (errno \(errno))") }
        var buffer = [UInt8](repeating: 0, count: 1500)
        while true {
            let remaining = ContinuousClock.now.duration(to: deadline)
            guard remaining > .zero else { throw HTTPFailure(.timeout, "no answer from \(server)") }
            var poller = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            let waited = poll(&poller, 1, Int32(min(remaining / .milliseconds(1) + 1, Double(Int32.max))))
            if waited < 0, errno == EINTR { continue }
            guard waited > 0 else { throw HTTPFailure(.timeout, "no answer from \(server)") }
            var from = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let received = buffer.withUnsafeMutableBytes { bytes in
                withUnsafeMutablePointer(to: &from) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        recvfrom(socket, bytes.baseAddress, bytes.count, 0, $0, &length)
                    }
                }
            }
            guard received > 0 else { throw HTTPFailure(.dns, "cannot receive from \(server) (errno \(errno))") }
            // Answers from elsewhere, or to another query, are ignored (spoofing).
            guard address.isSameHostAndPort(as: from),
                  let answer = DNSMessage.answer(Array(buffer[..<received]), identifier: identifier) else { continue }
            switch answer {
            case .addresses(let addresses, let timeToLive):
                return ResolvedName(addresses: addresses, timeToLive: .seconds(timeToLive))
            case .failure(let code): throw HTTPFailure(.dns, "\(server) answered \(DNSMessage.describe(code))")
            }
        }
    }

    /// SO_BINDTODEVICE: the socket's packets leave by `interface` whatever the routes say.
    static func bind(_ socket: Int32, to interface: String) throws(HTTPFailure) {
        let result = interface.withCString {
            setsockopt(socket, SOL_SOCKET, SO_BINDTODEVICE, $0, socklen_t(strlen($0) + 1))
        }
        guard result == 0 else {
            throw HTTPFailure(.connect, "cannot bind to interface \(interface): \(String(cString: strerror(errno)))")
        }
    }
}

/// A resolver's address and port, parsed from `a.b.c.d[:port]`, an IPv6 address (with
/// `%interface` for a link-local one) or `[IPv6 address]:port`.
struct ResolverEndpoint: CustomStringConvertible {
    let address: SocketAddress
    let description: String

    init?(_ text: String, defaultPort: UInt16) {
        var host = Substring(text), port = defaultPort
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            host = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            guard rest.isEmpty || rest.hasPrefix(":") else { return nil }
            if rest.hasPrefix(":") {
                guard let given = UInt16(rest.dropFirst()), given > 0 else { return nil }
                port = given
            }
        } else if text.filter({ $0 == ":" }).count == 1 {
            let parts = text.split(separator: ":", omittingEmptySubsequences: false)
            guard let given = UInt16(parts[1]), given > 0 else { return nil }
            host = parts[0]
            port = given
        }
        let parts = host.split(separator: "%", maxSplits: 1, omittingEmptySubsequences: false)
        // Brackets are for IPv6 only, as in URLs.
        guard var address = SocketAddress(literal: String(parts[0]), port: port),
              !text.hasPrefix("[") || address.family == sa_family_t(AF_INET6) else { return nil }
        if parts.count == 2 {
            let index = if_nametoindex(String(parts[1]))
            guard address.family == sa_family_t(AF_INET6), index != 0 else { return nil }
            address.setScopeIfLinkLocal(index)
        }
        self.address = address
        description = text
    }
}

/// The wire format of one A or AAAA question and its answer (RFC 1035, RFC 3596), nothing more.
enum DNSMessage {
    enum RecordType: UInt8 {
        case a = 1, aaaa = 28
    }

    enum Answer: Equatable {
        /// The A or AAAA records' addresses, and the shortest time to live (seconds) of the answer's records.
        case addresses([String], timeToLive: UInt32)
        case failure(UInt8)
    }

    static func query(_ name: String, type: RecordType = .a, identifier: UInt16) -> [UInt8]? {
        var message: [UInt8] = [UInt8(identifier >> 8), UInt8(identifier & 0xFF), 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]
        let trimmed = name.hasSuffix(".") ? String(name.dropLast()) : name
        guard !trimmed.isEmpty, trimmed.utf8.count <= 253 else { return nil }
        for label in trimmed.split(separator: ".", omittingEmptySubsequences: false) {
            guard !label.isEmpty, label.utf8.count <= 63 else { return nil }
            message.append(UInt8(label.utf8.count))
            message += label.utf8
        }
        message += [0, 0, type.rawValue, 0, 1]  // root, the type, class IN
        return message
    }

    /// The A and AAAA records of a response to query `identifier`, following the answer section
    /// (CNAMEs included by the resolver come first and are skipped); nil when the bytes
    /// are not such a response.
    static func answer(_ bytes: [UInt8], identifier: UInt16) -> Answer? {
        guard bytes.count >= 12, UInt16(bytes[0]) << 8 | UInt16(bytes[1]) == identifier, bytes[2] & 0x80 != 0 else {
            return nil
        }
        let code = bytes[3] & 0x0F
        guard code == 0 else { return .failure(code) }
        let questions = Int(bytes[4]) << 8 | Int(bytes[5])
        let answers = Int(bytes[6]) << 8 | Int(bytes[7])
        var offset = 12
        for _ in 0..<questions {
            guard let end = skipName(bytes, from: offset), end + 4 <= bytes.count else { return nil }
            offset = end + 4
        }
        var addresses: [String] = []
        var timeToLive = UInt32.max
        for _ in 0..<answers {
            guard let end = skipName(bytes, from: offset), end + 10 <= bytes.count else { return nil }
            let type = Int(bytes[end]) << 8 | Int(bytes[end + 1])
            // A CNAME's time to live bounds its target's: the shortest of all records counts.
            timeToLive = min(timeToLive, bytes[end + 4..<end + 8].reduce(0) { $0 << 8 | UInt32($1) })
            let length = Int(bytes[end + 8]) << 8 | Int(bytes[end + 9])
            let data = end + 10
            guard data + length <= bytes.count else { return nil }
            if type == Int(RecordType.a.rawValue), length == 4 {
                addresses.append(bytes[data..<data + 4].map(String.init).joined(separator: "."))
            } else if type == Int(RecordType.aaaa.rawValue), length == 16 {
                addresses.append(SocketAddress.ipv6Text(bytes[data..<data + 16]))
            }
            offset = data + length
        }
        return .addresses(addresses, timeToLive: answers == 0 ? 0 : timeToLive)
    }

    /// The offset after a (possibly compressed) name.
    private static func skipName(_ bytes: [UInt8], from start: Int) -> Int? {
        var offset = start
        while offset < bytes.count {
            let length = bytes[offset]
            if length == 0 { return offset + 1 }
            if length & 0xC0 == 0xC0 { return offset + 2 <= bytes.count ? offset + 2 : nil }
            offset += Int(length) + 1
        }
        return nil
    }

    static func describe(_ code: UInt8) -> String {
        switch code {
        case 1: "FORMERR"
        case 2: "SERVFAIL"
        case 3: "NXDOMAIN (no such name)"
        case 5: "REFUSED"
        default: "error \(code)"
        }
    }
}
