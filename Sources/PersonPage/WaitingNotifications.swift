import HotspotCore
import HotspotControl

/// Tells the person on their desktop when a network starts waiting for them, and takes the
/// notice back when it stops; clicking it opens the page. Brought up to date from the
/// daemon's status at every event.
actor WaitingNotifications {
    private let notifier: DesktopNotifier
    /// The notices shown, by network.
    private var shown: [String: UInt32] = [:]

    /// Nil when there is no desktop (no session bus) to notify.
    init?(open: @escaping @Sendable () -> Void) {
        guard let notifier = DesktopNotifier(onAction: { _, _ in open() }) else { return nil }
        self.notifier = notifier
    }

    func update(_ status: DaemonStatus) async {
        let waiting = status.networks.filter { $0.state == .presentingUI }
        for network in waiting where shown[network.ssid] == nil {
            let body = network.questions.map { "\($0.title): answer on the hotspot-helper page." } ?? "Answer on the hotspot-helper page."
            if let id = await notifier.show(summary: "\(network.ssid) waits for you", body: body, action: ("default", "Open the page")) {
                shown[network.ssid] = id
            }
        }
        for (ssid, id) in shown where !waiting.contains(where: { $0.ssid == ssid }) {
            await notifier.withdraw(id)
            shown[ssid] = nil
        }
    }

    func stop() { notifier.stop() }
}
