import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A web server (port 80, answers its name) and a resolver (port 53, answers every A
/// question with one address) on sockets made inside a network namespace: a thread
/// that enters the namespace creates them there.
public final class NamespaceServer: @unchecked Sendable {
    private var sockets: [Int32] = []

    public init(namespace: String, name: String, dnsAnswer: String) throws {
        let ready = DispatchSemaphore(value: 0)
        let thread = Thread { [self] in
            let handle = open("/run/netns/\(namespace)", O_RDONLY)
            guard handle >= 0, Self.enterNetworkNamespace(handle) == 0 else {
                ready.signal()
                return
            }
            close(handle)
            let web = Self.socket(SOCK_STREAM, port: 80)
            let dns = Self.socket(SOCK_DGRAM, port: 53)
            listen(web, 16)
            sockets = [web, dns]
            ready.signal()
            serve(web: web, dns: dns, body: name, answer: dnsAnswer)
        }
        thread.start()
        ready.wait()
        if sockets.isEmpty { throw CocoaError(.fileReadNoPermission, userInfo: [NSLocalizedDescriptionKey: "cannot enter \(namespace)"]) }
    }

    /// setns(fd, CLONE_NEWNET), which Glibc's Swift module leaves out (it needs _GNU_SOURCE).
    private static func enterNetworkNamespace(_ handle: Int32) -> Int32 {
        typealias SetNamespace = @convention(c) (Int32, Int32) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "setns") else { return -1 }
        let cloneNewNet: Int32 = 0x4000_0000
        return unsafeBitCast(symbol, to: SetNamespace.self)(handle, cloneNewNet)
    }

    /// Wakes the serving thread, which closes the sockets itself: closing them here could
    /// let it read from other sockets that reused the numbers.
    public func stop() { sockets.forEach { shutdown($0, Int32(SHUT_RDWR)) } }

    private static func socket(_ type: __socket_type, port: UInt16) -> Int32 {
        let socket = Glibc.socket(AF_INET, Int32(type.rawValue), 0)
        var yes: Int32 = 1
        setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in(sin_family: sa_family_t(AF_INET), sin_port: port.bigEndian,
                                  sin_addr: in_addr(s_addr: 0), sin_zero: (0, 0, 0, 0, 0, 0, 0, 0))
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        return socket
    }

    private func serve(web: Int32, dns: Int32, body: String, answer: String) {
        defer { close(web); close(dns) }
        let address = answer.split(separator: ".").compactMap { UInt8($0) }
        var descriptors = [pollfd(fd: web, events: Int16(POLLIN), revents: 0), pollfd(fd: dns, events: Int16(POLLIN), revents: 0)]
        let closed = Int16(POLLNVAL | POLLHUP | POLLERR)
        while poll(&descriptors, 2, -1) > 0, descriptors.allSatisfy({ $0.revents & closed == 0 }) {
            if descriptors[0].revents & Int16(POLLIN) != 0 {
                let client = accept(web, nil, nil)
                guard client >= 0 else { return }
                var request = [UInt8](repeating: 0, count: 4096)
                _ = read(client, &request, request.count)
                let reply = "HTTP/1.1 200 OK\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)"
                _ = reply.withCString { write(client, $0, strlen($0)) }
                close(client)
            }
            if descriptors[1].revents & Int16(POLLIN) != 0 {
                var query = [UInt8](repeating: 0, count: 512)
                var from = sockaddr_in()
                var length = socklen_t(MemoryLayout<sockaddr_in>.size)
                let count = withUnsafeMutablePointer(to: &from) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(dns, &query, 512, 0, $0, &length) }
                }
                guard count > 12 else { return }
                var offset = 12
                while offset < count, query[offset] != 0 { offset += Int(query[offset]) + 1 }
                var reply = Array(query[..<(offset + 5)])
                reply[2] = 0x81
                reply[3] = 0x80
                reply[7] = 1
                reply += [0xC0, 0x0C, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4] + address
                _ = withUnsafePointer(to: &from) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(dns, reply, reply.count, 0, $0, length) }
                }
            }
        }
    }
}
