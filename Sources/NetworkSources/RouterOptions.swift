#if canImport(Glibc)
import Glibc
#endif
import HotspotNetwork

/// What an IPv6 router advertisement tells of a network, from the options the kernel passes
/// on (rtnetlink's RTM_NEWNDUSEROPT, one option a message): the Captive Portal API URI
/// (option 37, RFC 8910) and the recursive name servers (RDNSS, option 25, RFC 8106).
///
/// Read from rtnetlink rather than an ICMPv6 raw socket: the kernel forwards exactly these
/// options (its `ndisc_is_useropt` lists RDNSS, DNSSL, the captive portal and PREF64, Linux
/// 5.8 and later) from advertisements it accepted (link-local source, hop limit 255, on an
/// interface that takes RAs), needs no CAP_NET_RAW, and the socket is the one that already
/// follows the links. What it cannot do is ask: an option is seen when the router next
/// advertises (radvd: every 4 to 10 minutes by default, or at once after the kernel's
/// solicitation when a link comes up).
enum RouterOption: Equatable {
    /// Option 37's URI, checked: https, UTF-8, no control characters, at most `uriLimit` bytes.
    case captivePortal(String)
    /// Option 37 with RFC 8910's `urn:ietf:params:capport:unrestricted`: no captive portal here.
    case unrestricted
    /// RDNSS: the name servers, and how long they may be used (0: no longer).
    case nameServers([String], lifetimeSeconds: UInt32)
    /// An option 37 or RDNSS that breaks its RFC, and why.
    case malformed(String)

    /// RFC 8910 sets no limit; the option's length byte allows 2,038 bytes, more than any
    /// portal needs and more than is worth logging.
    static let uriLimit = 1024
    static let captivePortalType: UInt8 = 37, nameServersType: UInt8 = 25
    static let unrestrictedURI = "urn:ietf:params:capport:unrestricted"

    /// RTM_NEWNDUSEROPT of <linux/rtnetlink.h>; struct nduseroptmsg is 16 bytes.
    static let message: UInt16 = 68
    static let headerSize = 16

    /// An option as the kernel passed it on, with the index of the interface it came by.
    struct Advertised: Equatable {
        let index: Int32
        let option: RouterOption
    }

    /// The option of one RTM_NEWNDUSEROPT message's body (struct nduseroptmsg after the
    /// nlmsghdr, in the host's byte order); nil for an option of another kind or a message
    /// that is not from a router advertisement.
    static func parse(message body: ArraySlice<UInt8>) -> Advertised? {
        let start = body.startIndex
        guard body.count >= headerSize, body[start] == UInt8(AF_INET6), body[start + 8] == 134 /* ND_ROUTER_ADVERT */ else { return nil }
        let optionsLength = Int(LinkNotifications.load(UInt16.self, at: start + 2, in: body))
        guard body.count >= headerSize + optionsLength,
              let option = parse(option: body[(start + headerSize)..<(start + headerSize + optionsLength)]) else { return nil }
        return Advertised(index: LinkNotifications.load(Int32.self, at: start + 4, in: body), option: option)
    }

    /// One ND option (type, length in units of 8 bytes, data); nil for other kinds.
    static func parse(option bytes: ArraySlice<UInt8>) -> RouterOption? {
        guard bytes.count >= 2 else { return nil }
        let type = bytes[bytes.startIndex], units = Int(bytes[bytes.startIndex + 1])
        guard type == captivePortalType || type == nameServersType else { return nil }
        let name = type == captivePortalType ? "captive-portal option (37)" : "RDNSS option (25)"
        guard units > 0, units * 8 == bytes.count else {
            return .malformed("a router advertisement's \(name) says \(units * 8) bytes but has \(bytes.count)")
        }
        let data = bytes.dropFirst(2)
        return type == captivePortalType ? captivePortal(data) : nameServers(data)
    }

    /// The URI, padded with NULs to the option's end (RFC 8910 §2.3).
    private static func captivePortal(_ data: ArraySlice<UInt8>) -> RouterOption {
        let uri = data.prefix { $0 != 0 }
        guard data.dropFirst(uri.count).allSatisfy({ $0 == 0 }) else {
            return .malformed("a router advertisement's captive-portal option (37) has bytes after its URI's end")
        }
        guard !uri.isEmpty else { return .malformed("a router advertisement's captive-portal option (37) is empty") }
        guard uri.count <= uriLimit else {
            return .malformed("a router advertisement's captive-portal URI is \(uri.count) bytes; at most \(uriLimit) are taken")
        }
        guard let text = String(validating: uri, as: UTF8.self) else {
            return .malformed("a router advertisement's captive-portal URI is not UTF-8")
        }
        guard !text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F || $0 == " " }) else {
            return .malformed("a router advertisement's captive-portal URI holds spaces or control characters: \(text.debugDescription)")
        }
        if text == unrestrictedURI { return .unrestricted }
        guard text.lowercased().hasPrefix("https://"), text.count > "https://".count else {
            return .malformed("a router advertisement's captive-portal URI \(text.debugDescription) is not https, as RFC 8910 requires")
        }
        return .captivePortal(text)
    }

    /// Reserved (2 bytes), lifetime (4), then 16 bytes an address.
    private static func nameServers(_ data: ArraySlice<UInt8>) -> RouterOption {
        guard data.count >= 6 + 16, (data.count - 6) % 16 == 0 else {
            return .malformed("a router advertisement's RDNSS option (25) has no whole address")
        }
        let lifetime = data.dropFirst(2).prefix(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        var servers: [String] = []
        var offset = data.startIndex + 6
        while offset < data.endIndex {
            servers.append(SocketAddress.ipv6Text(data[offset..<(offset + 16)]))
            offset += 16
        }
        return .nameServers(servers, lifetimeSeconds: lifetime)
    }
}
