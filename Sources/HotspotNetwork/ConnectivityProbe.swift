#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// One connectivity probe: a URL and what an open Internet answers there.
public struct Probe: Sendable, Hashable {
    public enum Expectation: Sendable, Hashable {
        case status(Int)
        /// A 200 whose body contains the text (case-insensitive).
        case bodyContains(String)
    }

    public var url: String
    public var expectation: Expectation

    public init(url: String, expectation: Expectation) {
        self.url = url
        self.expectation = expectation
    }

    /// A probe for a URL given by the user: 204, or a 200 that says "success", is open.
    public init(url: String) {
        self.init(url: url, expectation: url.hasSuffix("generate_204") ? .status(204) : .bodyContains("success"))
    }

    /// The well-known endpoints of Apple, Google and Firefox.
    public static let defaults = [
        Probe(url: "http://captive.apple.com/hotspot-detect.html", expectation: .bodyContains("Success")),
        Probe(url: "http://connectivitycheck.gstatic.com/generate_204", expectation: .status(204)),
        Probe(url: "http://detectportal.firefox.com/success.txt", expectation: .bodyContains("success")),
    ]
}

/// What the probes found.
public struct ConnectivityVerdict: Sendable, Equatable {
    public enum State: String, Sendable {
        case connected, captive
        case notConnected = "not_connected"
    }

    public var state: State
    /// Where the portal sent the probe, when it is captive.
    public var portalURL: String?
    /// One line per probe that answered before the verdict: its URL and what happened.
    public var details: [String]
}

/// Probes run in parallel over the bound network; the verdict comes as soon as it is
/// certain (enough probes passed, or too few can still pass), and the rest are cancelled.
public enum ConnectivityProbe {
    public static func run(_ probes: [Probe], binding: NetworkBinding, threshold: Double = 0.75,
                           timeout: Duration = .seconds(5), deadline: ContinuousClock.Instant? = nil,
                           isCancelled: @escaping @Sendable () -> Bool = { false }) -> ConnectivityVerdict {
        let probes = probes.isEmpty ? Probe.defaults : probes
        let needed = max(1, Int((threshold * Double(probes.count)).rounded(.up)))
        let tally = Mutex(Tally())
        let decided: @Sendable () -> Bool = { isCancelled() || tally.withLock { $0.verdict != nil } }
        runConcurrently(probes.map { probe in
            {
                let outcome = attempt(probe, binding: binding, timeout: timeout, deadline: deadline, isCancelled: decided)
                tally.withLock { $0.record(outcome, of: probe, needed: needed, total: probes.count) }
            }
        })
        return tally.withLock { $0.verdict ?? ConnectivityVerdict(state: .notConnected, portalURL: nil, details: $0.details) }
    }

    enum Outcome {
        case open
        case captive(portalURL: String?)
        case unreachable
    }

    struct Tally {
        var passed = 0
        var answered = 0
        var portalURL: String?
        var sawPortal = false
        var details: [String] = []
        var verdict: ConnectivityVerdict?

        mutating func record(_ outcome: (Outcome, String), of probe: Probe, needed: Int, total: Int) {
            guard verdict == nil else { return }
            answered += 1
            details.append("\(probe.url): \(outcome.1)")
            switch outcome.0 {
            case .open: passed += 1
            case .captive(let url):
                sawPortal = true
                portalURL = portalURL ?? url
            case .unreachable: break
            }
            if passed >= needed {
                verdict = ConnectivityVerdict(state: .connected, portalURL: nil, details: details)
            } else if passed + (total - answered) < needed {
                verdict = ConnectivityVerdict(state: sawPortal ? .captive : .notConnected, portalURL: portalURL, details: details)
            }
        }
    }

    static func attempt(_ probe: Probe, binding: NetworkBinding, timeout: Duration, deadline: ContinuousClock.Instant?,
                        isCancelled: @escaping () -> Bool) -> (Outcome, String) {
        guard let host = URLReference(probe.url).hostParts?.host, case .success(let pattern) = HostPattern.parse(host) else {
            return (.unreachable, "not a URL with a host")
        }
        let client = BoundHTTPClient(binding: binding, allowedHosts: [pattern])
        let request = HTTPRequest(url: probe.url, headers: [("Cache-Control", "no-cache")], timeout: timeout,
                                  followRedirects: false, maxBody: 65_536)
        do {
            let response = try client.perform(request, deadline: deadline, isCancelled: isCancelled)
            let opened = switch probe.expectation {
            case .status(let status): response.status == status
            case .bodyContains(let text):
                response.status == 200 && String(decoding: response.body, as: UTF8.self).lowercased().contains(text.lowercased())
            }
            if opened { return (.open, "open (\(response.status))") }
            if let location = response.header("location"), (300..<400).contains(response.status) {
                let portal = URLReference(probe.url).resolving(URLReference(location)).text
                return (.captive(portalURL: portal), "redirected (\(response.status)) to \(portal)")
            }
            return (.captive(portalURL: nil), "intercepted (\(response.status))")
        } catch {
            return (.unreachable, error.description)
        }
    }

    /// Runs each piece of blocking work on its own thread and waits for all of them:
    /// probes wait on the network, so they must not queue behind each other.
    static func runConcurrently(_ works: [@Sendable () -> Void]) {
        final class Work {
            let body: @Sendable () -> Void
            init(_ body: @escaping @Sendable () -> Void) { self.body = body }
        }
        var threads: [pthread_t] = []
        for work in works {
            var thread = pthread_t()
            let context = Unmanaged.passRetained(Work(work)).toOpaque()
            let started = pthread_create(&thread, nil, { context in
                let work = Unmanaged<Work>.fromOpaque(context!).takeRetainedValue()
                work.body()
                return nil
            }, context)
            if started == 0 {
                threads.append(thread)
            } else {
                Unmanaged<Work>.fromOpaque(context).takeRetainedValue().body()
            }
        }
        for thread in threads { pthread_join(thread, nil) }
    }
}
