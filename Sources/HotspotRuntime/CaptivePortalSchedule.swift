import Dispatch
import HotspotNetwork

/// When the next `maintain` comes on a network with an RFC 8908 Captive Portal API: before
/// its session runs out when the API says it can be extended, just after it runs out (the
/// helper then answers `authentication_required`) when it cannot; never later than the
/// maintain interval.
extension HotspotRuntime {
    nonisolated func maintainDelay(for network: NetworkDescription?, interval: Duration) async -> Duration {
        guard let network, let uri = network.captivePortalAPI else { return interval }
        let binding = NetworkBinding(interface: network.interface, resolvers: network.resolvers, caFile: configuration.caFile)
        let allowsPlainHTTP = configuration.allowsPlainHTTPCaptivePortalAPI
        let deadline = ContinuousClock.now + configuration.commandDeadline
        // libcurl blocks: off Swift concurrency's threads.
        let fetched = await withCheckedContinuation { (continuation: CheckedContinuation<Result<CaptivePortalStatus?, HTTPFailure>, Never>) in
            DispatchQueue.global().async {
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
            emit(HotspotEvent(event: .log, network: network.ssid, level: "warn",
                              message: "the Captive Portal API at \(uri) could not be read: \(failure)"))
            return interval
        case .success(nil):
            return interval
        case .success(let answered?):
            status = answered
        }
        if status.captive {
            emit(HotspotEvent(event: .log, network: network.ssid, level: "warn",
                              message: "the Captive Portal API at \(uri) still says captive after the helper's success"))
        }
        let delay = Self.maintainDelay(after: status, interval: interval, margin: configuration.captivePortalRenewalMargin)
        if let seconds = status.secondsRemaining, delay < interval {
            let plan = status.canExtendSession ? "extend it" : "log in again once it has run out"
            emit(HotspotEvent(event: .log, network: network.ssid, level: "info",
                              message: "the session has \(seconds.plainDescription) s left; maintain in \(delay) to \(plan)"))
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
