public import HotspotCore
import Locking

/// Watches one network's connectivity: checks it after a short settle delay, then every
/// `interval` (while not connected only, if asked), and again sooner after losing it
/// (from `firstBackoff`, doubling up to `interval`), and reports each verdict that says
/// something new.
public final class ConnectivityMonitor: Sendable {
    public struct Settings: Sendable {
        public var probes: ProbeSet
        /// Between two checks while nothing changes.
        public var interval: Duration
        /// Once connected, check again only when asked (`recheck()`).
        public var onlyWhileNotConnected: Bool
        /// The first re-check after connectivity is lost; later ones double up to `interval`.
        public var firstBackoff: Duration
        /// Before the first check: the link settles (DHCP, routes) after a join.
        public var settleDelay: Duration

        public init(probes: ProbeSet = ProbeSet(), interval: Duration = .seconds(10), onlyWhileNotConnected: Bool = false,
                    firstBackoff: Duration = .seconds(1), settleDelay: Duration = .milliseconds(500)) {
            self.probes = probes
            self.interval = interval
            self.onlyWhileNotConnected = onlyWhileNotConnected
            self.firstBackoff = firstBackoff
            self.settleDelay = settleDelay
        }
    }

    public let settings: Settings
    public let binding: NetworkBinding
    private let link: NetworkLink
    private let findPortalURL: PortalURLFinder?
    /// What the pauses between checks sleep on.
    private let clock: any HotspotClock
    /// The pause in progress, which `recheck()` cuts short, and whether one was asked for
    /// while a check ran.
    private let waiting = PlainLock(Waiting())

    private struct Waiting {
        var pause: Task<Void, Never>?
        var recheckAsked = false
    }

    public init(binding: NetworkBinding, settings: Settings = Settings(), link: NetworkLink = .system,
                findPortalURL: PortalURLFinder? = nil, clock: any HotspotClock = SystemClock()) {
        self.binding = binding
        self.clock = clock
        self.settings = settings
        self.link = link
        self.findPortalURL = findPortalURL
    }

    /// `determining` at once, then every verdict that differs from the one before (state,
    /// portal URL or interface kind). Checking stops when the consumer stops listening.
    /// Meant for one consumer at a time.
    public func changes() -> AsyncStream<ConnectivityVerdict> {
        AsyncStream { continuation in
            let task = Task {
                continuation.yield(ConnectivityVerdict(state: .determining))
                await pause(settings.settleDelay)
                var last: ConnectivityVerdict?
                var backoff: Duration?
                while !Task.isCancelled {
                    let verdict = await ConnectivityProbe.verdict(of: settings.probes, binding: binding, link: link,
                                                                  findPortalURL: findPortalURL)
                    guard !Task.isCancelled else { break }
                    if last.map(verdict.differs(from:)) ?? true { continuation.yield(verdict) }
                    if verdict.state == .connected {
                        backoff = nil
                    } else if last?.state == .connected {
                        backoff = settings.firstBackoff
                    } else if let current = backoff {
                        backoff = min(current * 2, settings.interval)
                    }
                    last = verdict
                    let connected = verdict.state == .connected
                    await pause(connected && settings.onlyWhileNotConnected ? nil : connected ? settings.interval : backoff ?? settings.interval)
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// Checks now (after a join, a roam, a login), cutting the pause short.
    public func recheck() {
        waiting.withLock { state in
            // A check in progress is followed by another at once.
            if let pause = state.pause { pause.cancel() } else { state.recheckAsked = true }
        }
    }

    /// Sleeps for `duration` (nil: until asked), unless a recheck was asked meanwhile.
    private func pause(_ duration: Duration?) async {
        let clock = clock
        let pause = Task<Void, Never> {
            try? await clock.sleep(until: clock.now + (duration ?? .seconds(365 * 86_400)))
        }
        let asked = waiting.withLock { state -> Bool in
            defer { state.recheckAsked = false }
            if !state.recheckAsked { state.pause = pause }
            return state.recheckAsked
        }
        if asked { pause.cancel() }
        await withTaskCancellationHandler { await pause.value } onCancel: { pause.cancel() }
        waiting.withLock { $0.pause = nil }
    }
}
