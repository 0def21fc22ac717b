#if canImport(Glibc)
import Glibc
#endif

/// A stream connection on this machine, written and read blocking: TCP to a server on
/// loopback (the person's page), or a Unix socket (the daemon's control socket).
final class LocalStream {
    private let descriptor: Int32
    /// Bytes read but not yet returned.
    private var unread: [UInt8] = []

    /// TCP to 127.0.0.1:`port`.
    convenience init(port: Int) throws {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = in_addr_t(UInt32(0x7f00_0001).bigEndian)
        try self.init(family: AF_INET, address: address, describing: "127.0.0.1:\(port)")
    }

    /// The Unix socket at `path`.
    convenience init(unixSocket path: String) throws {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { throw BenchError("socket path too long: \(path)") }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        try self.init(family: AF_UNIX, address: address, describing: path)
    }

    private init<Address>(family: Int32, address: Address, describing name: String) throws {
        descriptor = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw BenchError("socket: \(String(cString: strerror(errno)))") }
        var address = address
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<Address>.size)) }
        }
        guard connected == 0 else {
            let reason = String(cString: strerror(errno))
            close(descriptor)
            throw BenchError("cannot connect to \(name): \(reason)")
        }
        if family == AF_INET {
            var on: Int32 = 1
            setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
        }
    }

    deinit { close(descriptor) }

    func send(_ text: String) throws {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if written < 0, errno == EINTR { continue }
            guard written > 0 else { throw BenchError("send: \(String(cString: strerror(errno)))") }
            offset += written
        }
    }

    /// Waits until `marker` has arrived and returns everything before it; the marker is consumed.
    func read(upTo marker: String) throws -> [UInt8] {
        let marker = Array(marker.utf8)
        while true {
            if let end = range(of: marker) {
                defer { unread.removeSubrange(..<end.upperBound) }
                return Array(unread[..<end.lowerBound])
            }
            try receive()
        }
    }

    /// Waits for the next `count` bytes.
    func read(count: Int) throws -> [UInt8] {
        while unread.count < count { try receive() }
        defer { unread.removeSubrange(..<count) }
        return Array(unread[..<count])
    }

    /// Drops what has arrived so far, without waiting for more.
    func discardArrived() {
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while case let count = recv(descriptor, &chunk, chunk.count, Int32(MSG_DONTWAIT)), count > 0 {}
        unread = []
    }

    private func receive() throws {
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = recv(descriptor, &chunk, chunk.count, 0)
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { throw BenchError("the connection closed") }
            unread += chunk[..<count]
            return
        }
    }

    private func range(of marker: [UInt8]) -> Range<Int>? {
        guard unread.count >= marker.count else { return nil }
        for start in 0...(unread.count - marker.count) where unread[start] == marker[0] {
            if unread[start..<(start + marker.count)].elementsEqual(marker) { return start..<(start + marker.count) }
        }
        return nil
    }
}

extension LocalStream {
    /// An HTTP/1.1 GET on this kept-alive connection to the server on 127.0.0.1:`port`;
    /// the status and the response's headers and body (sized by its Content-Length).
    func get(_ target: String, port: Int, cookie: String? = nil) throws -> (status: Int, headers: String, body: [UInt8]) {
        try send("GET \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n" + (cookie.map { "Cookie: \($0)\r\n" } ?? "") + "\r\n")
        let head = String(decoding: try read(upTo: "\r\n\r\n"), as: UTF8.self)
        let lines = head.split(separator: "\r\n")
        guard let statusLine = lines.first, let status = Int(statusLine.split(separator: " ").dropFirst().first ?? "") else {
            throw BenchError("GET \(target): no status line")
        }
        let length = lines.dropFirst().first { $0.lowercased().hasPrefix("content-length:") }
            .flatMap { Int($0.split(separator: ":")[1].trimmingPrefix(" ")) }
        guard let length else { throw BenchError("GET \(target): no Content-Length") }
        return (status, head, try read(count: length))
    }
}

/// The port of the address `http://127.0.0.1:PORT/...` in a line a server on loopback wrote.
func loopbackPort(in line: String) -> Int? {
    guard let address = line.split(separator: "http://127.0.0.1:", omittingEmptySubsequences: false).dropFirst().first,
          let slash = address.firstIndex(of: "/") else { return nil }
    return Int(address[..<slash])
}
