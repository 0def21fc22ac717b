import Foundation
import Spawning
import Locking

/// A program a test runs in the background (a bus, a DHCP server, NetworkManager), its output
/// in a log file. It starts with no signal blocked, whatever the test process blocks (a child
/// of Foundation's Process inherits that, and then ignores SIGTERM), and is stopped by its id
/// and reaped when dropped.
public final class BackgroundProcess: Sendable {
    public let processIdentifier: Int32
    /// Where its standard output and error go.
    public let log: String
    private let exitStatus = PlainLock<Int32?>(nil)

    public init(_ executable: String, _ arguments: [String], environment: [String] = [], log: String? = nil) throws {
        let log = log ?? scratchPath("log")
        self.log = log
        processIdentifier = try spawnProcess(
            executable, arguments: arguments,
            descriptors: [.open("/dev/null", flags: O_RDONLY, as: 0), .open(log, flags: O_WRONLY | O_CREAT | O_APPEND, as: 1),
                          .open(log, flags: O_WRONLY | O_APPEND, as: 2)],
            closingFrom: 3, environmentOverrides: environment, resettingSignals: true)
    }

    /// What it wrote so far.
    public var output: String { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }

    public var isRunning: Bool { reap(waiting: false) == nil }

    /// Sends SIGTERM, then SIGKILL if it is still running after `grace`; returns once it ended.
    public func stop(grace: Duration = .seconds(5)) {
        guard isRunning else { return }
        kill(processIdentifier, SIGTERM)
        if !holdsBlocking(within: grace, { !isRunning }) { kill(processIdentifier, SIGKILL) }
        _ = reap(waiting: true)
    }

    /// Its exit status once it ended (128 + the signal for a signal), reaping it; nil while it runs.
    private func reap(waiting: Bool) -> Int32? {
        exitStatus.withLock { status in
            if status == nil {
                var raw: Int32 = 0
                if waitpid(processIdentifier, &raw, waiting ? 0 : WNOHANG) == processIdentifier {
                    status = raw & 0x7f == 0 ? (raw >> 8) & 0xff : 128 + (raw & 0x7f)
                }
            }
            return status
        }
    }

    deinit { stop() }
}
