import Dispatch
import HotspotCore
import HotspotNetwork
import PortalRecording

/// The state machine's checks of a network, over the network's own interface and resolvers:
/// the probes after a helper's success and at a join for declared portals, and the RFC 8908
/// Captive Portal API for when the next `maintain` comes.
struct BoundNetworkChecks: NetworkChecks {
    let configuration: RuntimeConfiguration
    let events: @Sendable (HotspotEvent) -> Void

    private func binding(_ network: NetworkDescription) -> NetworkBinding {
        NetworkBinding(interface: network.interface, resolvers: network.resolvers, caFile: configuration.caFile)
    }

    func connectivity(of network: NetworkDescription, after helper: String) async -> ConnectivityEvent? {
        let verdict = await ConnectivityProbe.verdict(of: ProbeSet(network.probes), binding: binding(network))
        return ConnectivityEvent(verdict, network: network.ssid, helper: helper)
    }

    /// The portal's host and the gateway family its URL's shape names (the redirect of a
    /// probe, the Captive Portal API's or a WISPr message's login URL, the best found).
    func portal(of network: NetworkDescription) async -> PortalSighting? {
        let verdict = await ConnectivityProbe.verdict(of: ProbeSet(network.probes), binding: binding(network))
        events(.connectivity(ConnectivityEvent(verdict, network: network.ssid, helper: nil)))
        guard verdict.state == .captive, let url = verdict.portalURL else { return nil }
        let reference = URLReference(url)
        guard let host = reference.hostParts?.host, !host.isEmpty else { return nil }
        let query = Dictionary(FormFields.decode(reference.query ?? ""), uniquingKeysWith: { _, last in last })
        return PortalSighting(url: url, host: host.contains(":") ? "[\(host)]" : host,
                              family: GatewayFamily.recognised(path: reference.path, query: query))
    }

    /// Before the session runs out when the API says it can be extended, just after it runs
    /// out (the helper then answers `authentication_required`) when it cannot; never later
    /// than the maintain interval.
    func maintainDelay(for network: NetworkDescription, interval: Duration) async -> Duration {
        guard let uri = network.captivePortalAPI else { return interval }
        let binding = binding(network)
        let allowsPlainHTTP = network.allowsPlainHTTPCaptivePortalAPI(configured: configuration.allowsPlainHTTPCaptivePortalAPI)
        let deadline = ContinuousClock.now + configuration.policy.commandDeadline
        // libcurl blocks: off Swift concurrency's threads, on a queue of its own rather than a
        // global one, whose thread pool libdispatch watches with a timer of 1 s for good (see
        // the daemon's executor, DaemonExecutor).
        let fetched = await withCheckedContinuation { (continuation: CheckedContinuation<Result<CaptivePortalStatus?, HTTPFailure>, Never>) in
            DispatchQueue(label: "captive-portal-api").async {
                continuation.resume(returning: Result { () throws(HTTPFailure) in
                    try CaptivePortalAPI.fetch(uri, binding: binding, allowsPlainHTTP: allowsPlainHTTP, deadline: deadline)
                })
            }
        }
        // A logoff or a leave while the API was read: its answer no longer describes the login.
        if Task.isCancelled { return interval }
        let status: CaptivePortalStatus
        switch fetched {
        case .failure(let failure):
            events(.log(.warn, "the Captive Portal API at \(uri) could not be read: \(failure)", network: network.ssid))
            return interval
        case .success(nil):
            return interval
        case .success(let answered?):
            status = answered
        }
        if status.captive {
            events(.log(.warn, "the Captive Portal API at \(uri) still says captive after the helper's success", network: network.ssid))
        }
        let delay = Self.maintainDelay(after: status, interval: interval, margin: configuration.captivePortalRenewalMargin)
        if let seconds = status.secondsRemaining, delay < interval {
            let plan = status.canExtendSession ? "extend it" : "log in again once it has run out"
            events(.log(.info, "the session has \(seconds.plainDescription) s left; maintain in \(delay) to \(plan)", network: network.ssid))
        }
        return delay
    }

    static func maintainDelay(after status: CaptivePortalStatus, interval: Duration, margin: Duration) -> Duration {
        guard !status.captive, let seconds = status.secondsRemaining else { return interval }
        let remaining = Duration.seconds(seconds)
        let delay = status.canExtendSession
            ? max(.seconds(1), remaining - min(margin, remaining / 4))
            : remaining + .seconds(1)
        return min(delay, interval)
    }
}
