#if canImport(Glibc)
import Glibc
#endif

public import HotspotCore

/// What the kernel says about the device's links: which interface the default route
/// leaves by, whether an interface is up with a carrier, and what kind it is. Reads
/// sysfs and procfs; the paths are parameters so tests can give their own.
public struct NetworkLink: Sendable {
    public var classDirectory: String
    public var routeTable: String

    public init(classDirectory: String = "/sys/class/net", routeTable: String = "/proc/net/route") {
        self.classDirectory = classDirectory
        self.routeTable = routeTable
    }

    public static let system = NetworkLink()

    /// IFF_UP and IFF_LOOPBACK of <net/if.h>.
    static let interfaceUpFlag = 0x1
    static let loopbackFlag = 0x8

    /// The loopback flag means loopback; a `wireless` directory or `DEVTYPE=wlan` Wi-Fi,
    /// `DEVTYPE=wwan` cellular; no `device` under the link (veth, bridge, tunnel) virtual;
    /// any other link, with a device, ethernet.
    public func kind(of interface: String) -> InterfaceKind {
        let directory = classDirectory + "/" + interface
        if let flags = flags(of: interface), flags & Self.loopbackFlag != 0 { return .loopback }
        let deviceType = Self.contents(of: directory + "/uevent")?.split(separator: "\n")
            .first { $0.hasPrefix("DEVTYPE=") }?.dropFirst("DEVTYPE=".count)
        if deviceType == "wlan" || access(directory + "/wireless", F_OK) == 0 { return .wifi }
        if deviceType == "wwan" { return .cellular }
        return access(directory + "/device", F_OK) == 0 ? .ethernet : .virtual
    }

    private func flags(of interface: String) -> Int? {
        Self.contents(of: classDirectory + "/" + interface + "/flags").flatMap { Int($0.trimmingWhitespace().dropFirst(2), radix: 16) }
    }

    /// Administratively up (IFF_UP) with a carrier. The kernel refuses to read `carrier`
    /// of an interface that is down.
    public func isUp(_ interface: String) -> Bool {
        guard let flags = flags(of: interface), flags & Self.interfaceUpFlag != 0 else { return false }
        return Self.contents(of: classDirectory + "/" + interface + "/carrier")?.trimmingWhitespace() == "1"
    }

    /// The interface of the IPv4 default route, if there is one.
    public func defaultRouteInterface() -> String? {
        guard let table = Self.contents(of: routeTable) else { return nil }
        for line in table.split(separator: "\n").dropFirst() {
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            if fields.count > 2, fields[1] == "00000000" { return String(fields[0]) }
        }
        return nil
    }

    /// A small text file, whole; nil when it cannot be read.
    static func contents(of path: String) -> String? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while bytes.count < 1 << 20 {
            let count = Glibc.read(descriptor, &buffer, buffer.count)
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return count == 0 ? String(decoding: bytes, as: UTF8.self) : nil }
            bytes += buffer[..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
