import Foundation
import Testing
import TestSupport

/// `run --source interface:IFACE:SSID` follows the kernel's link news (rtnetlink), so a link
/// that is down for one second, which a check every 2 s could miss, is a leave and a join.
@Suite("Sources of networks")
struct LinkSourceTests {
    @Test(.enabled(if: TwoNetworks.unavailableReason == nil, "needs root and network namespaces"))
    func aLinkDownIsALeaveAndUpAgainAJoin() async throws {
        let namespace = "hh\(getpid() % 100_000)f"
        #expect(try shellStatus("ip netns add \(namespace) && ip -n \(namespace) link add flap0 type veth peer name flap1 "
                                      + "&& ip -n \(namespace) link set flap1 up && ip -n \(namespace) link set flap0 up") == 0)
        defer { _ = try? shellStatus("ip netns del \(namespace)") }
        let scripts = try CLI.temporaryDirectory(scripts: ["quick.lua": CLI.helperClaimingNothing])
        let daemon = try RunningCLI(["ip", "netns", "exec", namespace, CLI.path, "run", "--json", "--scripts", scripts,
                                     "--source", "interface:flap0:Flap-Cafe", "--state-dir", try CLI.temporaryDirectory(),
                                     "--probe-interval", "0"],
                                    executable: "/usr/bin/env")
        try await daemon.waitForEvent(EventLine.isState("authenticated", "Flap-Cafe"))
        #expect(try await onOwnThread { try shellStatus("ip -n \(namespace) link set flap0 down") } == 0)
        try await daemon.waitForEvent(EventLine.isState("inactive", "Flap-Cafe"))
        #expect(try await onOwnThread { try shellStatus("ip -n \(namespace) link set flap0 up") } == 0)
        try await daemon.waitForEvent(count: 2, EventLine.isState("authenticated", "Flap-Cafe"))
        let story = daemon.events.compactMap { event -> String? in
            if event.event == "state" { return "state \(event.to ?? "")" }
            return event.network == "Flap-Cafe" ? event.message : nil
        }
        #expect(story == ["flap0 is up", "state evaluating", "state authenticated", "flap0 is down: leaving", "state inactive",
                          "flap0 is up: joining", "state evaluating", "state authenticated"])
        daemon.signal(SIGTERM)
        #expect(try await daemon.waitForExit() == 0)
    }

    @Test func sourcesThatOverlapAreRefused() async throws {
        let scripts = try CLI.temporaryDirectory(scripts: ["quick.lua": CLI.helperClaimingNothing])
        let refusals = [
            (["--source", "networkmanager", "--source", "networkmanager:wlan0"],
             "--source networkmanager follows every device already; give it alone, or networkmanager:IFACE for each"),
            (["--source", "interface:lo:Cafe", "--source", "networkmanager:lo"], "--source: the interface lo is given twice"),
            (["--source", "interface:lo:Cafe", "--source", "interface:lo:Other"], "--source: the interface lo is given twice"),
            (["--source", "networkmanager:"], "networkmanager:IFACE needs the interface, such as networkmanager:wlan0"),
        ]
        for (sources, message) in refusals {
            let run = try await CLI.run(["run", "--scripts", scripts] + sources)
            #expect(run.status == 2)
            #expect(run.errors.contains(message), "\(run.errors)")
        }
    }
}
