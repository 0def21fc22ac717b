import Foundation
import HotspotCore
import HotspotNetwork
import Synchronization
import Testing
import TestSupport

@Suite("Connectivity probes against local servers")
struct ConnectivityProbeTests {
    /// A sysfs of made-up interfaces: `wlan9` up with a carrier, `wwan9` down, `eth9` up.
    static func fakeLinks() throws -> NetworkLink {
        let root = scratchPath("sysfs")
        func write(_ path: String, _ text: String) throws {
            try FileManager.default.createDirectory(atPath: (root + "/" + path as NSString).deletingLastPathComponent,
                                                    withIntermediateDirectories: true)
            try text.write(toFile: root + "/" + path, atomically: true, encoding: .utf8)
        }
        try write("wlan9/flags", "0x1003\n")
        try write("wlan9/carrier", "1\n")
        try write("wlan9/uevent", "DEVTYPE=wlan\nINTERFACE=wlan9\n")
        try write("wwan9/flags", "0x1002\n")
        try write("wwan9/uevent", "DEVTYPE=wwan\nINTERFACE=wwan9\n")
        try write("eth9/flags", "0x1003\n")
        try write("eth9/carrier", "1\n")
        try write("eth9/uevent", "INTERFACE=eth9\n")
        try write("eth9/device/uevent", "DRIVER=virtio_net\n")
        try write("veth9/flags", "0x1003\n")
        try write("veth9/carrier", "1\n")
        try write("veth9/uevent", "INTERFACE=veth9\n")
        try write("route", "Iface\tDestination\tGateway\tFlags\neth9\t00000000\t010200C0\t0003\neth9\t000200C0\t00000000\t0001\n")
        return NetworkLink(classDirectory: root, routeTable: root + "/route")
    }

    func check(_ specs: [String], threshold: Double = 0.75, timeout: Duration = .seconds(5), interface: String? = nil,
               link: NetworkLink = .system, caFile: String? = nil, deadline: Duration? = nil) async throws -> ConnectivityVerdict {
        let set = try ProbeSet.parse(specs, threshold: threshold, timeout: timeout).get()
        return try await onOwnThread {
            ConnectivityProbe.run(set, binding: NetworkBinding(interface: interface, caFile: caFile),
                                  deadline: deadline.map { ContinuousClock.now + $0 }, link: link)
        }
    }

    @Test func connectedCaptiveAndTheirPortals() async throws {
        let server = try await TestHTTPServer.start()
        defer { server.stop() }
        let base = "http://127.0.0.1:\(server.port)/probe"
        let open = try await check(["\(base)/generate_204 status=204", "\(base)/success", "\(base)/nm header=X-NetworkManager-Status:online"])
        #expect(open.state == .connected)
        #expect(open.results.count == 3 && open.results.allSatisfy { $0.outcome == .open })

        let redirected = try await check(["\(base)/portal status=204", "\(base)/page contains=success", "\(base)/generate_204"])
        #expect(redirected.state == .captive, "\(redirected.details)")
        #expect(redirected.portalURL == "http://127.0.0.1:\(server.port)/login?from=probe")
        #expect(redirected.portalURLSource == .location)

        let intercepted = try await check(["\(base)/page contains=success"])
        #expect(intercepted.state == .captive)
        #expect(intercepted.portalURL == nil)
        #expect(intercepted.details == ["\(base)/page: intercepted (200)"])

        let told = try await check(["\(base)/511 status=204"])
        #expect(told.state == .captive)
        #expect(told.portalURL == nil)
    }

    @Test func expectationsOnBodiesAndHeaders() async throws {
        let server = try await TestHTTPServer.start()
        defer { server.stop() }
        let base = "http://127.0.0.1:\(server.port)"
        let passing = [
            "\(base)/probe/success equals=success", "\(base)/probe/success matches=^succ(ess|eed)$",
            "\(base)/probe/nm header=x-networkmanager-status:Online", "\(base)/probe/nm contains=is ONLINE",
            "\(base)/echo +X-Test:yes matches=^GET\\|yes$", "POST \(base)/echo +Content-Type:text/plain matches=^POST\\|text/plain\\|$",
        ]
        for spec in passing {
            let verdict = try await check([spec], threshold: 1)
            #expect(verdict.state == .connected, "\(spec): \(verdict.details)")
        }
        let failing = [
            "\(base)/probe/success equals=succ", "\(base)/probe/success matches=^fail",
            "\(base)/probe/nm header=X-NetworkManager-Status:offline", "\(base)/echo matches=^GET\\|yes$",
        ]
        for spec in failing {
            #expect(try await check([spec], threshold: 1).state == .captive, "\(spec)")
        }
        // An error status says nothing about a portal.
        let missing = try await check(["\(base)/probe/missing"], threshold: 1, link: Self.fakeLinks())
        #expect(missing.state == .connectedWithoutInternet)
        #expect(missing.details == ["\(base)/probe/missing: answered 404, neither open nor a portal"])
    }

    @Test func partialWhenEveryHTTPSProbeFailsWhileHTTPPasses() async throws {
        let server = try await TestHTTPServer.start()
        defer { server.stop() }
        let tls = try await TestTLSServer.start()
        defer { tls.stop() }
        let base = "http://127.0.0.1:\(server.port)/probe"
        let https = "https://localhost:\(tls.port)/ status=200"
        // Trusted, the TLS server passes: the set is connected once it listens.
        try await eventually("the trusted TLS server to pass the probe") { (try? await check([https], threshold: 1, caFile: tls.caFile).state) == .connected }
        #expect(try await check([https], threshold: 1, caFile: tls.caFile).state == .connected)

        // Not trusted (as behind a middlebox that breaks TLS): partial.
        let verdict = try await check(["\(base)/generate_204", "\(base)/success", https])
        #expect(verdict.state == .partial, "\(verdict.details)")
        // The handshake fails on the untrusted certificate (`tls: ...`); on a loaded machine the
        // single-threaded s_server may be slow enough for a timeout instead: HTTPS failed either way.
        let httpsDetail = verdict.details.first { $0.hasPrefix("https://localhost:\(tls.port)/: ") }
        #expect(httpsDetail.map { $0.contains(": tls: localhost") || $0.contains(": timeout") } == true, "\(verdict.details)")
        // Without an HTTPS probe that failed, the same failure is not partial.
        let plain = try await check(["\(base)/generate_204", "http://127.0.0.1:1/"], threshold: 1, link: Self.fakeLinks())
        #expect(plain.state == .connectedWithoutInternet)
    }

    @Test func withoutInternetOrNotConnectedByTheLink() async throws {
        let link = try Self.fakeLinks()
        let refused = "http://127.0.0.1:1/generate_204"
        let wifi = try await check([refused], interface: "wlan9", link: link)
        #expect(wifi.state == .connectedWithoutInternet)
        #expect(wifi.interfaceKind == .wifi)
        let down = try await check([refused], interface: "wwan9", link: link)
        #expect(down.state == .notConnected)
        #expect(down.interfaceKind == .cellular)
        // No interface given: the default route's.
        let byRoute = try await check([refused], link: link)
        #expect(byRoute.state == .connectedWithoutInternet)
        #expect(byRoute.interfaceKind == .ethernet)
        let noRoute = try await check([refused], link: NetworkLink(classDirectory: link.classDirectory, routeTable: "/nonexistent"))
        #expect(noRoute.state == .notConnected)
        #expect(noRoute.interfaceKind == nil)
        // A link with no device under it is virtual, not ethernet.
        #expect(try await check([refused], interface: "veth9", link: link).interfaceKind == .virtual)
        // The real loopback is up with a carrier, and is loopback.
        let loopback = try await check([refused], interface: "lo")
        #expect(loopback.state == .connectedWithoutInternet)
        #expect(loopback.interfaceKind == .loopback)
    }

    @Test func aProbeThatNeverAnswersDoesNotDelayACertainVerdict() async throws {
        let server = try await TestHTTPServer.start()
        defer { server.stop() }
        let silent = silentListener()
        defer { close(silent.socket) }
        let base = "http://127.0.0.1:\(server.port)/probe"
        let hanging = "http://127.0.0.1:\(silent.port)/generate_204"
        // Three of four meet 75%: the fourth, given a minute, is not waited for.
        let open = try await check([hanging, "\(base)/generate_204", "\(base)/slow/50 status=204", "\(base)/success"], timeout: .seconds(60))
        #expect(open.state == .connected, "\(open.details)")
        #expect(open.results.count == 3)
        #expect(!open.details.contains { $0.hasPrefix(hanging) })
        // Two portals of four: 75% is out of reach and a portal was seen, so captive at once.
        let captive = try await check([hanging, "\(base)/portal", "\(base)/page", "\(base)/generate_204"], timeout: .seconds(60))
        #expect(captive.state == .captive)
        #expect(!captive.details.contains { $0.hasPrefix(hanging) })
    }

    /// What asked whether to stop: from which threads.
    final class Askers: Sendable {
        private let threads = Mutex<Set<UInt>>([])
        var all: Set<UInt> { threads.withLock { $0 } }
        func record() { threads.withLock { _ = $0.insert(UInt(pthread_self())) } }
    }

    @Test func aProbeAloneRunsOnTheCallersThreadAndSeveralInParallel() async throws {
        let server = try await TestHTTPServer.start()
        defer { server.stop() }
        let base = "http://127.0.0.1:\(server.port)/probe"
        for (specs, ownThread) in [(["\(base)/generate_204"], true), (["\(base)/generate_204", "\(base)/success"], false)] {
            let set = try ProbeSet.parse(specs, threshold: 1, timeout: .seconds(5)).get()
            let askers = Askers()
            let (verdict, caller) = try await onOwnThread {
                let verdict = ConnectivityProbe.run(set, binding: NetworkBinding(), isCancelled: { askers.record(); return false })
                return (verdict, UInt(pthread_self()))
            }
            #expect(verdict.state == .connected)
            #expect(!askers.all.isEmpty)
            #expect(askers.all.contains(caller) == ownThread, "\(specs.count) probes")
        }
    }

    @Test func aCheckCutShortIsStillDetermining() async throws {
        let silent = silentListener()
        defer { close(silent.socket) }
        let verdict = try await check(["http://127.0.0.1:\(silent.port)/generate_204"], timeout: .seconds(60),
                                      deadline: .milliseconds(300))
        #expect(verdict.state == .determining)
        #expect(verdict.results.isEmpty)
    }

    @Test func aBetterSourceGivesThePortalURL() async throws {
        let server = try await TestHTTPServer.start()
        defer { server.stop() }
        let set = try ProbeSet.parse(["http://127.0.0.1:\(server.port)/probe/portal"]).get()
        let found = try await onOwnThread {
            ConnectivityProbe.run(set, binding: NetworkBinding(), findPortalURL: { response in
                response.status == 302 ? ("https://gateway.test/wispr-login", .wispr) : nil
            })
        }
        #expect(found.portalURL == "https://gateway.test/wispr-login")
        #expect(found.portalURLSource == .wispr)
        var verdict = found
        verdict.offerPortalURL("http://worse.test/", from: .location)
        #expect(verdict.portalURL == "https://gateway.test/wispr-login")
        verdict.offerPortalURL("https://portal.test/capport", from: .captivePortalAPI)
        #expect(verdict.portalURL == "https://portal.test/capport")
        #expect(verdict.portalURLSource == .captivePortalAPI)
    }

    @Test(arguments: [
        ("ftp://example.org/", "'ftp://example.org/' is not an http:// or https:// URL with a host"),
        ("http://x/ status=99", "status=99 is not an HTTP status from 100 to 599"),
        ("http://x/ matches=(a", "matches=(a:"),
        ("http://x/ matches=(a)\\1", "matches=(a)\\1: back-references are not allowed"),
        ("http://x/ header=online", "header= is written header=Name:value"),
        ("http://x/ expect 204", "'expect 204' is not an expectation"),
        ("http://x/ +X-A", "a request header is written +Name:value, not '+X-A'"),
        ("http://x/ contains=", "contains= needs a text"),
    ])
    func probeLinesThatDoNotParseSayWhy(_ spec: String, _ problem: String) {
        guard case .failure(let error) = Probe.parse(spec) else {
            Issue.record("\(spec) parsed")
            return
        }
        #expect(error.problem.hasPrefix(problem), "\(error.problem)")
    }

    @Test func probeLinesParse() throws {
        let probe = try Probe.parse("POST https://probe.test/ping +X-Client:hh +X-Other:a:b matches=^ok (yes|no)$").get()
        #expect(probe.method == "POST")
        #expect(probe.url == "https://probe.test/ping")
        #expect(probe.headers == [.init(name: "X-Client", value: "hh"), .init(name: "X-Other", value: "a:b")])
        #expect(probe.expectation == .bodyMatches("^ok (yes|no)$"))
        #expect(probe.isHTTPS)
        #expect(try Probe.parse("http://g.test/generate_204").get() == Probe(url: "http://g.test/generate_204", expectation: .status(204)))
        #expect(try Probe.parse("http://a.test/ok").get().expectation == .bodyContains("success"))
    }

    @Test(arguments: [
        "http://g.test/generate_204",
        "http://a.test/ok",
        "POST https://probe.test/ping +X-Client:hh +X-Other:a:b matches=^ok (yes|no)$",
        "HEAD https://p.test/ +X-Empty: header=X-Status:online",
        "  http://e.test/   equals=  two words  ",
        "http://c.test/ contains=a=b status=200",
    ])
    func theCompactTextReadsBackToTheSameProbe(_ spec: String) throws {
        let probe = try Probe.parse(spec).get()
        #expect(try Probe.parse(probe.compactText).get() == probe)
    }
}
