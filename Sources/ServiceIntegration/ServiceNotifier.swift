#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials

/// The service manager's notification socket: `sd_notify`'s protocol spoken directly, one
/// datagram of `NAME=value` lines to the Unix socket `NOTIFY_SOCKET` names (a path, or an
/// abstract name after `@`). Not libsystemd: the protocol is a stable, documented datagram,
/// and linking the library would add a dependency to every device for a `sendto`.
public final class ServiceNotifier: Sendable {
    private let sender: UnixDatagramSender
    /// How often the manager wants `WATCHDOG=1` (`WATCHDOG_USEC`); nil when it wants none,
    /// or when `WATCHDOG_PID` names another process.
    public let watchdogInterval: Duration?

    /// The notifier the environment asks for; nil when no manager listens (no `NOTIFY_SOCKET`).
    public init?() {
        let environment = ProcessInfo.processInfo.environment
        guard let path = environment["NOTIFY_SOCKET"], path.hasPrefix("/") || path.hasPrefix("@"),
              let sender = UnixDatagramSender(path: path) else { return nil }
        self.sender = sender
        let forThisProcess = environment["WATCHDOG_PID"].map { Int32($0) == getpid() } ?? true
        if forThisProcess, let microseconds = environment["WATCHDOG_USEC"].flatMap(UInt64.init), microseconds > 0 {
            watchdogInterval = .microseconds(microseconds)
        } else {
            watchdogInterval = nil
        }
    }

    /// Sends the assignments (`READY=1`, `STATUS=...`) in one datagram. One the manager's
    /// socket does not take is lost, as with `sd_notify`: the service runs on regardless.
    public func notify(_ assignments: [String]) {
        _ = sender.send(Array(assignments.joined(separator: "\n").utf8))
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
}
