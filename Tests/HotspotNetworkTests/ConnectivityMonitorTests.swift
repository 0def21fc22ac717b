import HotspotCore
import HotspotNetwork
import Locking
import Testing
import TestSupport

@Suite("Connectivity monitor")
struct ConnectivityMonitorTests {
    /// The states a monitor reported, collected while a test runs.
    final class Seen: Sendable {
        let states = PlainLock<[ConnectivityVerdict.State]>([])
        var all: [ConnectivityVerdict.State] { states.withLock { $0 } }

        func collect(_ monitor: ConnectivityMonitor) -> Task<Void, Never> {
            Task { for await verdict in monitor.changes() { states.withLock { $0.append(verdict.state) } } }
        }
    }

    func monitor(_ server: TestHTTPServer, interval: Duration, onlyWhileNotConnected: Bool = false,
                 clock: any HotspotClock = SystemClock()) -> ConnectivityMonitor {
        let probe = Probe(url: "http://127.0.0.1:\(server.port)/probe/switch", expectation: .status(204))
        return ConnectivityMonitor(binding: NetworkBinding(), settings: .init(
            probes: ProbeSet([probe]), interval: interval, onlyWhileNotConnected: onlyWhileNotConnected,
            firstBackoff: .milliseconds(100), settleDelay: .milliseconds(10)), clock: clock)
    }

    @Test func changesAreReportedAndALossIsRecheckedWithBackoff() async throws {
        let server = try await TestHTTPServer.start()
        defer { server.stop() }
        let monitor = monitor(server, interval: .seconds(60))
        let seen = Seen()
        let watching = seen.collect(monitor)
        defer { watching.cancel() }
        try await eventually("the first verdict, connected") { seen.all == [.determining, .connected] }
        #expect(seen.all == [.determining, .connected])

        server.probeSwitch.isOpen.withLock { $0 = false }
        let before = server.probeSwitch.asked.withLock { $0.count }
        monitor.recheck()
        try await eventually("the recheck's verdict, captive") { seen.all.last == .captive }
        #expect(seen.all == [.determining, .connected, .captive])
        // Without the backoff, the next check would come after the 60 s interval.
        try await eventually("four probes since the loss, on the backoff") {
            server.probeSwitch.asked.withLock { $0.count } >= before + 4
        }
        let asked = server.probeSwitch.asked.withLock { Array($0[before...]) }
        #expect(asked.count >= 4)
        let gaps = zip(asked.dropFirst(), asked).map { $0.0 - $0.1 }
        // The backoff doubles from 100 ms: each gap is at least its step (a loaded machine only
        // makes gaps longer, so lower bounds hold where comparing neighbours would not).
        let steps: [Duration] = [.milliseconds(95), .milliseconds(195), .milliseconds(395)]
        #expect(gaps.count >= 3 && zip(gaps, steps).allSatisfy { $0 >= $1 }, "\(gaps)")
        #expect(seen.all.count == 3)  // the same verdict again is no change

        server.probeSwitch.isOpen.withLock { $0 = true }
        try await eventually("connected again once the probe passes") { seen.all.last == .connected }
        #expect(seen.all == [.determining, .connected, .captive, .connected])
    }

    @Test func pollingOnlyWhileNotConnected() async throws {
        let server = try await TestHTTPServer.start()
        defer { server.stop() }
        server.probeSwitch.isOpen.withLock { $0 = false }
        let clock = TestClock()
        let monitor = monitor(server, interval: .seconds(10), onlyWhileNotConnected: true, clock: clock)
        let seen = Seen()
        let watching = seen.collect(monitor)
        defer { watching.cancel() }
        // The settle delay, then an interval after each check: three checks while captive.
        for _ in 0..<3 {
            await clock.waitForSleeper()
            clock.advance(by: .seconds(10))
        }
        try await eventually("three polls while captive") { server.probeSwitch.asked.withLock { $0.count } == 3 }
        #expect(seen.all == [.determining, .captive])

        server.probeSwitch.isOpen.withLock { $0 = true }
        await clock.waitForSleeper()
        clock.advance(by: .seconds(10))
        try await eventually("connected once the probe passes") { seen.all.last == .connected }
        let settled = server.probeSwitch.asked.withLock { $0.count }
        // Five intervals pass without a poll while connected: the monitor sleeps on, where a
        // pause of one interval would wake, check, and sleep again.
        await clock.waitForSleeper()
        clock.advance(by: .seconds(50))
        await clock.waitForSleeper()
        #expect(server.probeSwitch.asked.withLock { $0.count } == settled)
        monitor.recheck()
        try await eventually("the probe the recheck asks for") { server.probeSwitch.asked.withLock { $0.count } > settled }
        #expect(server.probeSwitch.asked.withLock { $0.count } == settled + 1)
    }
}
