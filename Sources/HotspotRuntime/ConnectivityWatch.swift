public import HotspotCore
public import HotspotNetwork

extension HotspotMachine where Transport == ScriptTransport {
    /// Watches the connectivity of a joined network over its interface and resolvers, with
    /// its probes (`probes`, or `settings.probes` when it has none). Every change (the
    /// first `determining` included) is reported as a `connectivity` event and yielded;
    /// `monitor.recheck()` checks at once. Watching stops when the stream is dropped.
    public nonisolated func watchConnectivity(of network: NetworkDescription,
                                              settings: ConnectivityMonitor.Settings = .init())
        -> (monitor: ConnectivityMonitor, changes: AsyncStream<ConnectivityVerdict>) {
        var settings = settings
        if !network.probes.isEmpty { settings.probes.probes = network.probes }
        let monitor = ConnectivityMonitor(
            binding: NetworkBinding(interface: network.interface, resolvers: network.resolvers, caFile: configuration.caFile),
            settings: settings)
        let emit = self.emit
        let ssid = network.ssid
        let changes = AsyncStream<ConnectivityVerdict> { continuation in
            let task = Task {
                for await verdict in monitor.changes() {
                    emit(.connectivity(ConnectivityEvent(verdict, network: ssid)))
                    continuation.yield(verdict)
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
        return (monitor, changes)
    }
}
