import Foundation
import Locking

/// A dbus-daemon of the test's own, configured as a system bus that every local user may use
/// and own names on: what `DBUS_SYSTEM_BUS_ADDRESS` points the code under test to, so no test
/// touches the machine's own bus. Stopped by its process id when dropped.
public final class PrivateBus: Sendable {
    /// `unix:path=...`, for DBUS_SYSTEM_BUS_ADDRESS.
    public let address: String
    private let directory: String
    private let process = PlainLock<BackgroundProcess?>(nil)

    /// Why a private bus cannot run here, or nil when it can.
    public static let unavailableReason: String? = FileManager.default.isExecutableFile(atPath: "/usr/bin/dbus-daemon")
        ? nil : "needs dbus-daemon (Debian's dbus package; `make test` installs it)"

    public init() throws {
        directory = try scratchDirectory("bus")
        address = "unix:path=\(directory)/bus.sock"
        try """
            <busconfig><type>system</type><listen>\(address)</listen><auth>EXTERNAL</auth>
            <policy context="default"><allow user="*"/><allow own="*"/><allow send_destination="*" eavesdrop="true"/>
            <allow receive_sender="*"/><allow eavesdrop="true"/></policy></busconfig>
            """.write(toFile: directory + "/bus.conf", atomically: true, encoding: .utf8)
        try start()
    }

    /// Starts the bus, once it was stopped, at the same address: a bus restarted, as the
    /// programs on it see it.
    public func start() throws {
        unlink(directory + "/bus.sock")  // a bus killed leaves its socket behind
        let started = try BackgroundProcess("/usr/bin/dbus-daemon", ["--config-file=\(directory)/bus.conf", "--nofork", "--nopidfile"])
        process.withLock { $0 = started }
        let socket = directory + "/bus.sock"
        guard holdsBlocking(within: .seconds(10), { FileManager.default.fileExists(atPath: socket) || !started.isRunning }),
              started.isRunning else {
            throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "dbus-daemon did not start: \(started.output)"])
        }
    }

    /// Stops the bus: every connection to it ends.
    public func stop() {
        process.withLock { $0.take() }?.stop()
    }

    deinit { stop() }
}
