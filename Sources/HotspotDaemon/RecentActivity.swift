import Locking
public import HotspotCore
import HotspotControl

/// What the daemon's events said lately of each network, for `status`: its last commands
/// and its last connectivity verdict. Fed with every event on its way out.
public final class RecentActivity: Sendable {
    /// Commands kept per network.
    public static let commandsKept = 10

    private struct Network {
        var commands: [DaemonStatus.Command] = []
        var connectivity: ConnectivityEvent?
    }

    private let networks = PlainLock<[String: Network]>([:])

    public init() {}

    public func record(_ event: HotspotEvent) {
        switch event {
        case .command(let command):
            guard let ssid = command.network else { return }
            let entry = DaemonStatus.Command(command: command.command, helper: command.helper, result: command.result,
                                             milliseconds: command.milliseconds, error: command.error)
            networks.withLock { networks in
                networks[ssid, default: Network()].commands.append(entry)
                if networks[ssid]!.commands.count > Self.commandsKept { networks[ssid]!.commands.removeFirst() }
            }
        case .connectivity(let verdict):
            guard let ssid = verdict.network else { return }
            networks.withLock { $0[ssid, default: Network()].connectivity = verdict }
        default:
            return
        }
    }

    func commands(of ssid: String) -> [DaemonStatus.Command] { networks.withLock { $0[ssid]?.commands ?? [] } }
    func connectivity(of ssid: String) -> ConnectivityEvent? { networks.withLock { $0[ssid]?.connectivity } }
}
