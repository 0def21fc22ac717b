#if canImport(Glibc)
import Glibc
#endif

/// A Unix datagram socket that sends to one address: the service manager's notification
/// socket, the journal's.
final class UnixDatagramSender: Sendable {
    private let descriptor: Int32
    private let address: [UInt8]

    /// A sender to `path`, or to the abstract name after `@`; nil when the path is too long
    /// for a socket address or no socket can be made.
    init?(path: String) {
        guard let address = Self.socketAddress(path) else { return nil }
        let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return nil }
        self.descriptor = descriptor
        self.address = address
    }

    deinit { close(descriptor) }

    /// Sends `bytes` as one datagram; false when the socket did not take it whole.
    func send(_ bytes: [UInt8]) -> Bool {
        address.withUnsafeBytes { address in
            bytes.withUnsafeBytes { bytes in
                sendto(descriptor, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL),
                       address.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(address.count)) == bytes.count
            }
        }
    }

    /// The bytes of a `sockaddr_un` for `path`, as long as it needs to be (an abstract name's
    /// length counts, as it has no terminating NUL).
    private static func socketAddress(_ path: String) -> [UInt8]? {
        var name = Array(path.utf8)
        let isAbstract = name.first == UInt8(ascii: "@")
        if isAbstract { name[0] = 0 }
        let pathOffset = MemoryLayout<sa_family_t>.size  // sun_path follows the family
        guard name.count < MemoryLayout<sockaddr_un>.size - pathOffset else { return nil }
        var address = [UInt8](repeating: 0, count: pathOffset + name.count + (isAbstract ? 0 : 1))
        withUnsafeBytes(of: sa_family_t(AF_UNIX)) { address.replaceSubrange(0..<$0.count, with: $0) }
        address.replaceSubrange(pathOffset..<(pathOffset + name.count), with: name)
        return address
    }
}
