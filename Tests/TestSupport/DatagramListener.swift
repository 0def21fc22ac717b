public import Foundation
import Locking
import Synchronization
public import Testing

/// A Unix datagram socket standing in for systemd's (the notification socket, the
/// journal's), keeping what arrives with the time it came, read on a thread of its own.
public final class DatagramListener: Sendable {
    public struct Datagram: Sendable {
        public let bytes: [UInt8]
        public let arrived: ContinuousClock.Instant
        public var text: String { String(decoding: bytes, as: UTF8.self) }
    }

    /// What the reading thread fills; it holds this rather than the listener, whose end stops it.
    private final class Inbox: Sendable {
        let received = PlainLock<[Datagram]>([])
        let closed = Atomic<Bool>(false)
    }

    public let path: String
    private let inbox = Inbox()

    public init(_ kind: String) throws {
        path = scratchPath(kind)
        let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = unixSocketAddress(path)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard descriptor >= 0, bound == 0 else { throw POSIXError(.EADDRNOTAVAIL) }
        var wait = timeval(tv_sec: 0, tv_usec: 100_000)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
        Thread { [inbox] in
            var buffer = [UInt8](repeating: 0, count: 256 * 1024)
            while !inbox.closed.load(ordering: .relaxed) {
                let count = recv(descriptor, &buffer, buffer.count, 0)
                if count > 0 {
                    let datagram = Datagram(bytes: Array(buffer[0..<count]), arrived: .now)
                    inbox.received.withLock { $0.append(datagram) }
                }
            }
            close(descriptor)
        }.start()
    }

    public var datagrams: [Datagram] { inbox.received.withLock { $0 } }

    /// Waits until `count` datagrams match (those already there included) and returns the
    /// last that did; fails the test if they do not come.
    @discardableResult
    public func waitFor(count: Int = 1, timeout: Duration = .seconds(20), sourceLocation: SourceLocation = #_sourceLocation,
                 _ matches: (Datagram) -> Bool) async throws -> Datagram {
        try await eventually("\(count) matching datagram(s) on \(path)", within: timeout, sourceLocation: sourceLocation) {
            datagrams.count(where: matches) >= count
        }
        return datagrams.filter(matches)[count - 1]
    }

    deinit {
        inbox.closed.store(true, ordering: .relaxed)
        unlink(path)
    }
}

/// The address of the Unix socket at `path`.
public func unixSocketAddress(_ path: String) -> sockaddr_un {
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
        raw.copyBytes(from: Array(path.utf8))
        raw[path.utf8.count] = 0
    }
    return address
}
