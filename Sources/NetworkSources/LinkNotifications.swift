#if canImport(Glibc)
import Glibc
#endif

/// The kernel's news of network links, from rtnetlink: a NETLINK_ROUTE socket in the link
/// group (RTMGRP_LINK) gets an RTM_NEWLINK whenever a link changes (flags, carrier) and an
/// RTM_DELLINK when one goes away, so nothing polls /sys. The owner polls `descriptor` and
/// reads when it is readable. The same socket is in the ND user options group
/// (RTNLGRP_ND_USEROPT), where the kernel passes on router advertisements' options that are
/// for user space (`RouterOption`).
final class LinkNotifications {
    /// A link as one message describes it.
    struct Link: Equatable {
        /// The kernel's index of the link: a renamed link keeps it.
        let index: Int32
        let name: String
        /// Administratively up (IFF_UP) with a carrier (IFF_LOWER_UP), as the probes see it; a
        /// deleted link is not.
        let isUp: Bool
    }

    let descriptor: Int32
    private var sequence: UInt32 = 0

    /// RTM_NEWLINK, RTM_DELLINK and RTM_GETLINK of <linux/rtnetlink.h>; NLMSG_DONE
    /// and NLM_F_REQUEST | NLM_F_DUMP of <linux/netlink.h>; IFLA_IFNAME of <linux/if_link.h>;
    /// IFF_UP and IFF_LOWER_UP of <linux/if.h>.
    static let newLink: UInt16 = 16, deletedLink: UInt16 = 17, getLink: UInt16 = 18
    static let doneMessage: UInt16 = 3
    static let dumpRequest: UInt16 = 0x1 | 0x300
    static let nameAttribute: UInt16 = 3
    static let upFlag: UInt32 = 0x1, lowerUpFlag: UInt32 = 0x10000
    static let headerSize = 16  // struct nlmsghdr
    static let linkInfoSize = 16  // struct ifinfomsg

    init() throws(NetworkSourceError) {
        let socket = Glibc.socket(AF_NETLINK, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue),
                                  0 /* NETLINK_ROUTE */)
        guard socket >= 0 else { throw NetworkSourceError("cannot open an rtnetlink socket: \(String(cString: strerror(errno)))") }
        // RTMGRP_LINK, and RTNLGRP_ND_USEROPT (20) as the bit 1 << (20 - 1).
        var address = NetlinkAddress(family: UInt16(AF_NETLINK), groups: 1 | 1 << 19)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, socklen_t(MemoryLayout<NetlinkAddress>.size)) }
        }
        guard bound == 0 else {
            let reason = String(cString: strerror(errno))
            close(socket)
            throw NetworkSourceError("cannot listen to link changes (rtnetlink): \(reason)")
        }
        descriptor = socket
    }

    deinit { close(descriptor) }

    /// Asks for every link's state; the answers are read as news are.
    func requestAll() {
        sequence &+= 1
        var request = [UInt8](repeating: 0, count: Self.headerSize + Self.linkInfoSize)
        Self.store(UInt32(request.count), at: 0, in: &request)
        Self.store(Self.getLink, at: 4, in: &request)
        Self.store(Self.dumpRequest, at: 6, in: &request)
        Self.store(sequence, at: 8, in: &request)
        request[Self.headerSize] = UInt8(AF_UNSPEC)
        _ = request.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, 0) }
    }

    /// What arrived since the last read.
    struct News: Equatable {
        var links: [Link] = []
        /// Router advertisements' options, in the order they came.
        var routerOptions: [RouterOption.Advertised] = []
        /// The answer to `requestAll` is complete: a link it did not name does not exist.
        var allListed = false
        /// The kernel dropped news for want of room (ENOBUFS): only `requestAll` tells the state now.
        var overflowed = false
    }

    func read() -> News {
        var news = News()
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count < 0 {
                if errno == EINTR { continue }
                news.overflowed = errno == ENOBUFS
                return news
            }
            guard count > 0 else { return news }
            let batch = Self.parse(buffer[..<count])
            news.links += batch.links
            news.routerOptions += batch.routerOptions
            news.allListed = news.allListed || batch.allListed
        }
    }

    /// The links and router options described by a batch of netlink messages; anything else, or anything cut
    /// short, is skipped.
    static func parse(_ bytes: ArraySlice<UInt8>) -> News {
        var news = News()
        var offset = bytes.startIndex
        while offset + headerSize <= bytes.endIndex {
            let length = Int(load(UInt32.self, at: offset, in: bytes))
            let type = load(UInt16.self, at: offset + 4, in: bytes)
            guard length >= headerSize, offset + length <= bytes.endIndex else { break }
            if (type == newLink || type == deletedLink), length >= headerSize + linkInfoSize {
                let info = offset + headerSize
                let index = load(Int32.self, at: info + 4, in: bytes)
                let flags = load(UInt32.self, at: info + 8, in: bytes)
                if let name = linkName(bytes[(info + linkInfoSize)..<(offset + length)]) {
                    news.links.append(Link(index: index, name: name,
                                           isUp: type == newLink && flags & upFlag != 0 && flags & lowerUpFlag != 0))
                }
            }
            if type == RouterOption.message, let advertised = RouterOption.parse(message: bytes[(offset + headerSize)..<(offset + length)]) {
                news.routerOptions.append(advertised)
            }
            if type == doneMessage { news.allListed = true }
            offset += (length + 3) & ~3
        }
        return news
    }

    /// IFLA_IFNAME among a message's attributes.
    private static func linkName(_ attributes: ArraySlice<UInt8>) -> String? {
        var offset = attributes.startIndex
        while offset + 4 <= attributes.endIndex {
            let length = Int(load(UInt16.self, at: offset, in: attributes))
            let type = load(UInt16.self, at: offset + 2, in: attributes)
            guard length >= 4, offset + length <= attributes.endIndex else { return nil }
            if type == nameAttribute {
                let name = attributes[(offset + 4)..<(offset + length)].prefix { $0 != 0 }
                return name.isEmpty ? nil : String(decoding: name, as: UTF8.self)
            }
            offset += (length + 3) & ~3
        }
        return nil
    }

    static func load<Value: FixedWidthInteger>(_: Value.Type, at offset: Int, in bytes: ArraySlice<UInt8>) -> Value {
        var value = Value.zero
        withUnsafeMutableBytes(of: &value) { $0.copyBytes(from: bytes[offset..<(offset + MemoryLayout<Value>.size)]) }
        return value  // netlink is in the host's byte order
    }

    private static func store<Value: FixedWidthInteger>(_ value: Value, at offset: Int, in bytes: inout [UInt8]) {
        withUnsafeBytes(of: value) { bytes.replaceSubrange(offset..<(offset + $0.count), with: $0) }
    }
}

/// struct sockaddr_nl of <linux/netlink.h>, which Glibc's Swift module leaves out.
private struct NetlinkAddress {
    var family: UInt16
    var padding: UInt16 = 0
    /// 0: the kernel gives the socket its port.
    var port: UInt32 = 0
    var groups: UInt32
}
