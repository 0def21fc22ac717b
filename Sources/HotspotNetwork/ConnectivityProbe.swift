#if canImport(Glibc)
import Glibc
#endif
import Locking
import Synchronization
public import HotspotCore

/// The probes of one check, and how many must pass.
public struct ProbeSet: Sendable, Hashable {
    /// Empty means `Probe.defaults`.
    public var probes: [Probe]
    /// The fraction of probes that must pass for `connected` (0.75 is 75%).
    public var threshold: Double
    /// How long each probe may take.
    public var timeout: Duration

    public init(_ probes: [Probe] = [], threshold: Double = 0.75, timeout: Duration = .seconds(5)) {
        self.probes = probes
        self.threshold = threshold
        self.timeout = timeout
    }

    /// Probes in the compact syntax of `Probe.parse`; the first that does not parse fails the set.
    public static func parse(_ specs: [String], threshold: Double = 0.75, timeout: Duration = .seconds(5))
        -> Result<ProbeSet, ProbeSpecError> {
        var probes: [Probe] = []
        for spec in specs {
            switch Probe.parse(spec) {
            case .success(let probe): probes.append(probe)
            case .failure(let error): return .failure(error)
            }
        }
        return .success(ProbeSet(probes, threshold: threshold, timeout: timeout))
    }

    var effectiveProbes: [Probe] { probes.isEmpty ? Probe.defaults : probes }
}

/// What one probe found.
public struct ProbeResult: Sendable, Equatable {
    public enum Outcome: Sendable, Equatable {
        /// The expected answer.
        case open
        /// Redirected (3xx), intercepted (another 2xx) or told to log in (511).
        case captive
        /// No answer, or an error status that says nothing about a portal.
        case failed
    }

    public var url: String
    public var isHTTPS: Bool
    public var outcome: Outcome
    public var portalURL: String?
    public var portalURLSource: PortalURLSource?
    /// What happened, for people: "open (204)", "redirected (302) to ...", "connect: ...".
    public var summary: String
    /// From the start of the check to this probe's answer.
    public var elapsed: Duration
}

/// Where a portal URL came from. Later cases are more authoritative: the RFC 8908 API's
/// `user-portal-url` beats WISPr's `LoginURL`, which beats a redirect's `Location`.
public enum PortalURLSource: String, Sendable, Codable, Comparable, CaseIterable {
    case location, wispr
    case captivePortalAPI = "capport"

    public static func < (lhs: PortalURLSource, rhs: PortalURLSource) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }
}

/// Reads a portal URL out of a probe's intercepted answer (a WISPr gateway's XML in the
/// redirect page, say); the probes call it for every answer that is not open.
public typealias PortalURLFinder = @Sendable (HTTPResponse) -> (url: String, source: PortalURLSource)?

/// What a check found. When each state applies, in this order:
///
/// - `connected`: at least the threshold of the probes passed.
/// - `captive`: the threshold can no longer be reached and a probe was redirected,
///   intercepted or answered 511; decided once a probe said where the portal is (or all
///   have answered), and `portalURL` is the best such place found.
/// - `partial`: every probe answered or failed, none was captive, an HTTP probe passed and
///   every HTTPS probe failed (something breaks TLS).
/// - `connected_without_internet`: otherwise, when the interface (the bound one, or the
///   default route's) is up with a carrier.
/// - `not_connected`: otherwise: no interface, or it is down or without a carrier.
/// - `determining`: the check was cancelled or ran out of time before any of these was certain.
public struct ConnectivityVerdict: Sendable, Equatable {
    public typealias State = ConnectivityState

    public var state: State
    /// Where to log in, when captive.
    public var portalURL: String?
    public var portalURLSource: PortalURLSource?
    /// The kind of the interface checked, when one is known.
    public var interfaceKind: InterfaceKind?
    /// The probes that answered before the verdict, in the order they did.
    public var results: [ProbeResult]

    public init(state: State, portalURL: String? = nil, portalURLSource: PortalURLSource? = nil,
                interfaceKind: InterfaceKind? = nil, results: [ProbeResult] = []) {
        self.state = state
        self.portalURL = portalURL
        self.portalURLSource = portalURLSource
        self.interfaceKind = interfaceKind
        self.results = results
    }

    /// One line per probe that answered: its URL and what happened.
    public var details: [String] { results.map { "\($0.url): \($0.summary)" } }

    /// A captive verdict takes a portal URL from a more authoritative source (the RFC 8908
    /// API or WISPr, found after the probes ran); a less authoritative one changes nothing.
    public mutating func offerPortalURL(_ url: String, from source: PortalURLSource) {
        guard state == .captive, portalURLSource.map({ $0 < source }) ?? true else { return }
        portalURL = url
        portalURLSource = source
    }

    /// Whether this says something else than `other`: its state, portal or interface kind.
    public func differs(from other: ConnectivityVerdict) -> Bool {
        state != other.state || portalURL != other.portalURL || interfaceKind != other.interfaceKind
    }
}

/// Probes run in parallel over the bound network, each on a thread of its own (one probe alone
/// on the caller's); the verdict comes as soon as it is certain, and the probes still running
/// are cancelled and left to end by themselves.
public enum ConnectivityProbe {
    public static func run(_ set: ProbeSet, binding: NetworkBinding, deadline: ContinuousClock.Instant? = nil,
                           link: NetworkLink = .system, findPortalURL: PortalURLFinder? = nil, exchangeLog: ExchangeLog? = nil,
                           isCancelled: @escaping @Sendable () -> Bool = { false }) -> ConnectivityVerdict {
        let probes = set.effectiveProbes
        let needed = min(probes.count, max(1, Int((set.threshold * Double(probes.count)).rounded(.up))))
        let check = Check(Tally(total: probes.count, needed: needed, httpsCount: probes.count { $0.isHTTPS }))
        let start = ContinuousClock.now
        let stop: @Sendable () -> Bool = { isCancelled() || check.isSettled }
        let probing: @Sendable (Probe) -> Void = { probe in
            check.record(attempt(probe, binding: binding, timeout: set.timeout, deadline: deadline, start: start,
                                 findPortalURL: findPortalURL, exchangeLog: exchangeLog, isCancelled: stop))
        }
        // The caller waits for the verdict anyway: a probe alone runs on its thread, which
        // saves starting one and waking the caller from it (a login's checks are one probe).
        if probes.count == 1 {
            probing(probes[0])
        } else {
            for probe in probes { startThread { probing(probe) } }
        }
        let (state, results) = check.waitForVerdict()
        let interface = binding.interface ?? link.defaultRouteInterface()
        var verdict = ConnectivityVerdict(state: state, interfaceKind: interface.map(link.kind(of:)), results: results)
        if state == .notConnected, let interface, link.isUp(interface) { verdict.state = .connectedWithoutInternet }
        if state == .captive, let best = results.filter({ $0.portalURL != nil }).max(by: { $0.portalURLSource! < $1.portalURLSource! }) {
            verdict.portalURL = best.portalURL
            verdict.portalURLSource = best.portalURLSource
        }
        return verdict
    }

    /// The same on a thread of its own, so no task waits on the network; cancelling the
    /// task cancels the probes.
    public static func verdict(of set: ProbeSet, binding: NetworkBinding, link: NetworkLink = .system,
                               findPortalURL: PortalURLFinder? = nil) async -> ConnectivityVerdict {
        let cancelled = CancellationFlag()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                startThread {
                    continuation.resume(returning: run(set, binding: binding, link: link, findPortalURL: findPortalURL,
                                                       isCancelled: { cancelled.isSet }))
                }
            }
        } onCancel: {
            cancelled.set()
        }
    }

    final class CancellationFlag: Sendable {
        private let flag = Atomic(false)
        var isSet: Bool { flag.load(ordering: .relaxed) }
        func set() { flag.store(true, ordering: .relaxed) }
    }

    /// The answers so far and when they settle the verdict.
    struct Tally {
        let total: Int
        let needed: Int
        let httpsCount: Int
        var results: [ProbeResult] = []
        var finished = 0
        /// Set once certain; later answers are ignored.
        var settled: ConnectivityVerdict.State?

        mutating func record(_ result: ProbeResult?) {
            finished += 1
            guard settled == nil else { return }
            if let result { results.append(result) }
            settled = decision()
        }

        /// The state once it is certain, else nil; `not_connected` is refined by the link.
        func decision() -> ConnectivityVerdict.State? {
            let passed = results.count { $0.outcome == .open }
            let pending = total - finished
            if passed >= needed { return .connected }
            if passed + pending >= needed { return nil }
            // A probe still running could yet find a portal, or say where it is.
            if results.contains(where: { $0.outcome == .captive }) {
                return pending == 0 || results.contains { $0.portalURL != nil } ? .captive : nil
            }
            if pending > 0 { return nil }
            // Some probes were cut short by cancellation: nothing else is certain.
            if results.count < total { return .determining }
            let https = results.filter(\.isHTTPS)
            if !https.isEmpty, https.allSatisfy({ $0.outcome == .failed }),
               results.contains(where: { !$0.isHTTPS && $0.outcome == .open }) {
                return .partial
            }
            return .notConnected
        }
    }

    /// A tally shared by the probe threads, and a semaphore the caller waits on.
    final class Check: @unchecked Sendable {
        // Unchecked: the tally is behind a lock; the semaphore is made for threads.
        private let tally: PlainLock<Tally>
        private let semaphore = UnsafeMutablePointer<sem_t>.allocate(capacity: 1)

        init(_ tally: Tally) {
            self.tally = PlainLock(tally)
            sem_init(semaphore, 0, 0)
        }

        deinit {
            sem_destroy(semaphore)
            semaphore.deallocate()
        }

        var isSettled: Bool { tally.withLock { $0.settled != nil } }

        /// Records a probe's result (nil when it was cut short) and wakes the caller once the
        /// verdict is certain.
        func record(_ result: ProbeResult?) {
            let settledNow = tally.withLock { tally in
                let before = tally.settled
                tally.record(result)
                return before == nil && tally.settled != nil
            }
            if settledNow { sem_post(semaphore) }
        }

        func waitForVerdict() -> (ConnectivityVerdict.State, [ProbeResult]) {
            while sem_wait(semaphore) != 0 && errno == EINTR {}
            return tally.withLock { ($0.settled!, $0.results) }
        }
    }

    static func attempt(_ probe: Probe, binding: NetworkBinding, timeout: Duration, deadline: ContinuousClock.Instant?,
                        start: ContinuousClock.Instant, findPortalURL: PortalURLFinder?, exchangeLog: ExchangeLog?,
                        isCancelled: @escaping () -> Bool) -> ProbeResult? {
        var result = ProbeResult(url: probe.url, isHTTPS: probe.isHTTPS, outcome: .failed, summary: "", elapsed: .zero)
        guard let host = URLReference(probe.url).hostParts?.host, case .success(let pattern) = HostPattern.parse(host) else {
            result.summary = "not a URL with a host"
            return result
        }
        let client = BoundHTTPClient(binding: binding, allowedHosts: [pattern], exchangeLog: exchangeLog)
        let headers = [("Cache-Control", "no-cache")] + probe.headers.map { ($0.name, $0.value) }
        let request = HTTPRequest(method: probe.method, url: probe.url, headers: headers, timeout: timeout,
                                  followRedirects: false, maxBody: 65_536)
        let response: HTTPResponse
        do {
            response = try client.perform(request, deadline: deadline, isCancelled: isCancelled)
        } catch {
            // Cut short by the caller, or by a deadline before the probe's own timeout: no answer either way.
            if isCancelled() || error.kind == .timeout && deadline.map({ $0 < start + timeout }) == true { return nil }
            result.summary = error.description
            result.elapsed = start.duration(to: .now)
            return result
        }
        result.elapsed = start.duration(to: .now)
        if probe.isMet(by: response) {
            result.outcome = .open
            result.summary = "open (\(response.status))"
            return result
        }
        switch response.status {
        case 300..<400:
            result.outcome = .captive
            if let location = response.header("location") {
                let portal = URLReference(probe.url).resolving(URLReference(location)).text
                (result.portalURL, result.portalURLSource) = (portal, .location)
                result.summary = "redirected (\(response.status)) to \(portal)"
            } else {
                result.summary = "redirected (\(response.status)) nowhere"
            }
        case 200..<300, 511:
            result.outcome = .captive
            result.summary = "intercepted (\(response.status))"
        default:
            result.summary = "answered \(response.status), neither open nor a portal"
        }
        if result.outcome == .captive, let found = findPortalURL?(response),
           result.portalURLSource.map({ $0 < found.source }) ?? true {
            (result.portalURL, result.portalURLSource) = (found.url, found.source)
        }
        return result
    }

    /// Runs blocking work on a detached thread of its own: probes wait on the network, so
    /// they must not queue behind each other, and no one waits for the ones cut short.
    static func startThread(_ work: @escaping @Sendable () -> Void) {
        final class Work {
            let body: @Sendable () -> Void
            init(_ body: @escaping @Sendable () -> Void) { self.body = body }
        }
        var thread = pthread_t()
        let context = Unmanaged.passRetained(Work(work)).toOpaque()
        let started = pthread_create(&thread, nil, { context in
            Unmanaged<Work>.fromOpaque(context!).takeRetainedValue().body()
            return nil
        }, context)
        if started == 0 {
            pthread_detach(thread)
        } else {
            Unmanaged<Work>.fromOpaque(context).takeRetainedValue().body()
        }
    }
}
