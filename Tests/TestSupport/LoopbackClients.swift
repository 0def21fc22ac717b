import Foundation

/// A blocking TCP connection to 127.0.0.1:`port`, from `source` (another loopback address
/// is another peer), for tests of servers' limits on the clients that connect and stall.
public func connectToLoopback(_ port: UInt16, from source: String = "127.0.0.1") throws -> Int32 {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var local = sockaddr_in()
    local.sin_family = sa_family_t(AF_INET)
    local.sin_addr.s_addr = inet_addr(source)
    _ = withUnsafePointer(to: &local) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard connected == 0 else {
        close(descriptor)
        throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .ECONNREFUSED)
    }
    return descriptor
}

/// Whether the server has closed `descriptor`, or reset it (without waiting).
public func isClosedByPeer(_ descriptor: Int32) -> Bool {
    var byte: UInt8 = 0
    let count = recv(descriptor, &byte, 1, Int32(MSG_DONTWAIT))
    return count == 0 || (count < 0 && errno != EAGAIN)
}
