#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials

/// The service manager's notification socket: `sd_notify`'s protocol spoken directly, one
/// datagram of `NAME=value` lines to the Unix socket `NOTIFY_SOCKET` names (a path, or an
/// abstract name after `@`). Not libsystemd: the protocol is a stable, documented datagram,
/// and linking the library would add a dependency to every device for a `sendto`.
public final class ServiceNotifier: Sendable {
    private let descriptor: Int32
    private let address: [UInt8]
    /// How often the manager wants `WATCHDOG=1` (`WATCHDOG_USEC`); nil when it wants none,
    /// or when `WATCHDOG_PID` names another process.
    public let watchdogInterval: Duration?

    /// The notifier the environment asks for; nil when no manager listens (no `NOTIFY_SOCKET`).
    public init?(environment: [String: String]? = nil) {
        let environment = environment ?? ProcessInfo.processInfo.environment
        guard let path = environment["NOTIFY_SOCKET"], path.hasPrefix("/") || path.hasPrefix("@"),
              let address = Self.socketAddress(path) else { return nil }
        let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return nil }
        self.descriptor = descriptor
        self.address = address
        let forThisProcess = environment["WATCHDOG_PID"].map { Int32($0) == getpid() } ?? true
        if forThisProcess, let microseconds = environment["WATCHDOG_USEC"].flatMap(UInt64.init), microseconds > 0 {
            watchdogInterval = .microseconds(microseconds)
        } else {
            watchdogInterval = nil
        }
    }

    deinit { close(descriptor) }

    /// Sends the assignments (`READY=1`, `STATUS=...`) in one datagram; false when the
    /// manager's socket did not take it.
    @discardableResult
    public func notify(_ assignments: [String]) -> Bool {
        let message = Array(assignments.joined(separator: "\n").utf8)
        return address.withUnsafeBytes { address in
            message.withUnsafeBytes { message in
                sendto(descriptor, message.baseAddress, message.count, Int32(MSG_NOSIGNAL),
                       address.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(address.count)) == message.count
            }
        }
    }

    /// Keeps the manager's status line current and, when it asks for one, feeds its watchdog,
    /// until cancelled. Each round waits for `status`, which the caller makes go through
    /// the parts that must be making progress: when they are stuck, the pings stop and the
    /// manager restarts the service. Pings come at half the watchdog's interval, as systemd
    /// advises; without a watchdog, the status is refreshed every second.
    public func keepInformed(status: @Sendable () async -> String) async {
        let interval = watchdogInterval.map { $0 / 2 } ?? .seconds(1)
        var reported: String?
        while !Task.isCancelled {
            let current = await status()
            var assignments = watchdogInterval == nil ? [] : ["WATCHDOG=1"]
            if current != reported { assignments.append(Self.status(current)) }
            if !assignments.isEmpty { notify(assignments) }
            reported = current
            try? await Task.sleep(for: interval)
        }
    }

    /// `RELOADING=1` with the `MONOTONIC_USEC=` that `Type=notify-reload` asks for.
    public static var reloadingAssignments: [String] {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return ["RELOADING=1", "MONOTONIC_USEC=\(UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000)"]
    }

    /// A one-line `STATUS=` (a newline would end the assignment).
    public static func status(_ text: String) -> String {
        "STATUS=" + text.split(whereSeparator: \.isNewline).joined(separator: " ")
    }

    /// The bytes of a `sockaddr_un` for `path`, as long as it needs to be (an abstract name's
    /// length counts, as it has no terminating NUL).
    static func socketAddress(_ path: String) -> [UInt8]? {
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
