public import HotspotCore
import Prometheus
import Locking

/// The daemon's metrics in Prometheus's text format. Events are counted as they happen
/// (`record`); what is a level rather than a count (networks by state, workers' memory, the
/// engine's replacements) is read at each scrape (`exposition`).
///
/// Labels are bounded: helpers, commands, results, states and verdicts are finite sets; a
/// network's SSID, which any venue names, is a label only when the operator asks
/// (`labelsNetworks`), and secrets never reach an event.
public final class HotspotMetrics: Sendable {
    /// What is read from the daemon and the engine at a scrape.
    public struct Levels: Sendable {
        /// Each network's state, by SSID.
        public var networkStates: [String: HotspotState]
        /// Each worker process's resident memory, in slot order (nil: not running).
        public var workerResidentBytes: [Int?]
        /// How many worker processes the engine replaced, by cause, since it started.
        public var workerReplacements: [String: Int]

        public init(networkStates: [String: HotspotState], workerResidentBytes: [Int?], workerReplacements: [String: Int]) {
            self.networkStates = networkStates
            self.workerResidentBytes = workerResidentBytes
            self.workerReplacements = workerReplacements
        }
    }

    /// Every state a network can be in, so each has a series from the first scrape on.
    static let allStates: [HotspotState] = [.inactive, .evaluating, .authenticating, .presentingUI, .authenticated, .maintaining,
                                            .loggingOff, .failure]
    /// Commands take from milliseconds (evaluate) to the 45 s deadline (a slow portal).
    static let durationBuckets: [Duration] = [.milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
                                              .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1),
                                              .milliseconds(2500), .seconds(5), .seconds(10), .seconds(30), .seconds(60)]

    private let registry = PrometheusCollectorRegistry()
    private let labelsNetworks: Bool
    /// Each command's counter and histogram by its labels, looked up in the registry once:
    /// a lookup checks the names, the labels, the help text and the buckets again each time,
    /// which made recording a command cost about 2 µs.
    private let commandSeries = PlainLock<[CommandLabels: CommandSeries]>([:])
    /// When each network entered `evaluating`, to time the arbitration that follows.
    private let evaluatingSince = PlainLock<[String: ContinuousClock.Instant]>([:])
    /// The engine's replacement counts already added to the counter, by cause.
    private let countedReplacements = PlainLock<[String: Int]>([:])
    /// The running signed catalog's series, replaced when a reload takes another version.
    private let catalogInfo = PlainLock<Gauge?>(nil)

    public init(version: String, labelsNetworks: Bool = false) {
        self.labelsNetworks = labelsNetworks
        registry.makeGauge(descriptor: Self.family("build", "info", "Always 1; the running hotspot-helper's version is its label."),
                           labels: [("version", version)]).set(Int64(1))
        // Series that exist before anything happens, so rate() and alerts see them from 0.
        _ = reloads
        _ = loadErrors
        WorkerCause.allCases.forEach { _ = workerRestarts($0.rawValue) }
    }

    /// The causes of a worker's replacement that are always exposed, even at 0.
    enum WorkerCause: String, CaseIterable {
        case deadline, memory, crash
    }

    /// A family's name (`hotspot_helper_NAME_UNIT`) and its help text.
    private static func family(_ name: String, _ unit: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(namespace: "hotspot_helper", metricName: name, unitName: unit, helpText: help)
    }

    // MARK: events

    /// Counts what the event says happened.
    public func record(_ event: HotspotEvent) {
        switch event {
        case .command(let event):
            let series = series(of: event)
            series.count.increment()
            series.duration.record(.nanoseconds(Int64(event.milliseconds * 1_000_000)))
        case .state(let event):
            timeArbitration(event)
        case .connectivity(let event):
            var labels = [("verdict", event.verdict.rawValue)]
            if labelsNetworks, let network = event.network { labels.append(("network", network)) }
            registry.makeCounter(descriptor: Self.family("connectivity_verdicts", "total",
                                                         "Connectivity verdicts: changes the monitor saw, and checks after a helper's success."),
                                 labels: labels).increment()
        case .reload(let event):
            reloads.increment()
            loadErrors.increment(by: Int64(event.problems.count))
            if let version = event.catalogVersion {
                let gauge = registry.makeGauge(descriptor: Self.family("catalog", "info", "Always 1; the running signed catalog's version is its label."),
                                               labels: [("version", version)])
                gauge.set(Int64(1))
                let old = catalogInfo.withLock { running in
                    defer { running = gauge }
                    return running
                }
                if let old, old !== gauge { registry.unregisterGauge(old) }
            }
        case .log, .done:
            break
        }
    }

    /// What names a command's series: its network only when networks are labels.
    private struct CommandLabels: Hashable {
        let helper: String
        let command: HotspotCommand
        let result: CommandResult
        let network: String?
    }

    private struct CommandSeries {
        let count: Counter
        let duration: DurationHistogram
    }

    private func series(of event: CommandEvent) -> CommandSeries {
        let key = CommandLabels(helper: event.helper, command: event.command, result: event.result, network: labelsNetworks ? event.network : nil)
        if let known = commandSeries.withLock({ $0[key] }) { return known }
        var labels = [("helper", key.helper), ("command", key.command.rawValue), ("result", key.result.rawValue)]
        if let network = key.network { labels.append(("network", network)) }
        // Made outside the lock: the registry returns the same series to a second caller.
        let made = CommandSeries(
            count: registry.makeCounter(descriptor: Self.family("commands", "total", "Commands sent to helpers, by helper, command and result."),
                                        labels: labels),
            duration: registry.makeDurationHistogram(descriptor: Self.family("command_duration", "seconds", "How long helpers took to answer commands."),
                                                     labels: [("helper", key.helper), ("command", key.command.rawValue)],
                                                     buckets: Self.durationBuckets))
        commandSeries.withLock { $0[key] = made }
        return made
    }

    private var reloads: Counter {
        registry.makeCounter(descriptor: Self.family("script_reloads", "total", "Times the scripts were read again (start, SIGHUP, a change on disk)."))
    }

    private var loadErrors: Counter {
        registry.makeCounter(descriptor: Self.family("script_load_errors", "total",
                                                     "Scripts that did not load when read (their last good version kept running)."))
    }

    private func workerRestarts(_ cause: String) -> Counter {
        registry.makeCounter(descriptor: Self.family("worker_restarts", "total", "Worker processes replaced, by cause (deadline, memory, crash, ...)."),
                             labels: [("cause", cause)])
    }

    /// Arbitration is the time from `evaluating` to the state the helpers' answers lead to.
    private func timeArbitration(_ event: StateEvent) {
        guard event.to == .evaluating || event.from == .evaluating else { return }
        let now = ContinuousClock.now
        let started: ContinuousClock.Instant? = evaluatingSince.withLock { since in
            if event.to == .evaluating { since[event.network] = now }
            return event.from == .evaluating ? since.removeValue(forKey: event.network) : nil
        }
        guard let started else { return }
        registry.makeDurationHistogram(descriptor: Self.family("arbitration_duration", "seconds",
                                                               "From evaluate to the helpers' verdict: every helper asked, the best chosen."),
                                       buckets: Self.durationBuckets)
            .record(now - started)
    }

    // MARK: scrapes

    /// The text exposition, with the levels read now.
    public func exposition(_ levels: Levels) -> [UInt8] {
        let byState = Dictionary(grouping: levels.networkStates.values, by: { $0 }).mapValues(\.count)
        for state in Self.allStates {
            registry.makeGauge(descriptor: Self.family("networks", "", "Networks the daemon keeps, by state."),
                               labels: [("state", state.rawValue)]).set(Int64(byState[state] ?? 0))
        }
        if labelsNetworks {
            for (network, current) in levels.networkStates {
                for state in Self.allStates {
                    registry.makeGauge(descriptor: Self.family("network_state", "", "1 for each network's state, 0 for the others."),
                                       labels: [("network", network), ("state", state.rawValue)]).set(Int64(state == current ? 1 : 0))
                }
            }
        }
        for (index, bytes) in levels.workerResidentBytes.enumerated() {
            registry.makeGauge(descriptor: Self.family("worker_resident", "bytes", "Resident memory of each worker process that runs venue scripts."),
                               labels: [("worker", String(index))]).set(Int64(bytes ?? 0))
        }
        let increments = countedReplacements.withLock { counted in
            levels.workerReplacements.compactMap { cause, total -> (String, Int)? in
                defer { counted[cause] = total }
                let new = total - (counted[cause] ?? 0)
                return new > 0 ? (cause, new) : nil
            }
        }
        for (cause, count) in increments { workerRestarts(cause).increment(by: Int64(count)) }
        return registry.emitToBuffer()
    }
}
