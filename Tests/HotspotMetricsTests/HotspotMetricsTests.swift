import HotspotCore
import HotspotMetrics
import Testing

@Suite struct HotspotMetricsTests {
    static func text(_ metrics: HotspotMetrics, _ levels: HotspotMetrics.Levels = .init(
        networkStates: [:], workerResidentBytes: [], workerReplacements: [:])) -> String {
        String(decoding: metrics.exposition(levels), as: UTF8.self)
    }

    static func lines(_ text: String, _ prefix: String) -> [String] {
        text.split(separator: "\n").map(String.init).filter { $0.hasPrefix(prefix) }
    }

    @Test func commandsAreCountedByHelperCommandAndResultAndTimedInSeconds() {
        let metrics = HotspotMetrics(version: "1.2.3")
        for result in [CommandResult.success, .success, .failure] {
            metrics.record(.command(CommandEvent(network: "Grand-Hotel", command: .authenticate, helper: "grand", result: result,
                                                 milliseconds: 120)))
        }
        let text = Self.text(metrics)
        #expect(text.contains(#"hotspot_helper_commands_total{helper="grand",command="authenticate",result="success"} 2"#))
        #expect(text.contains(#"hotspot_helper_commands_total{helper="grand",command="authenticate",result="failure"} 1"#))
        #expect(text.contains(#"hotspot_helper_command_duration_seconds_bucket{helper="grand",command="authenticate",le="0.1"} 0"#))
        #expect(text.contains(#"hotspot_helper_command_duration_seconds_bucket{helper="grand",command="authenticate",le="0.25"} 3"#))
        #expect(text.contains(#"hotspot_helper_build_info{version="1.2.3"} 1"#))
        #expect(!text.contains("Grand-Hotel"), "an SSID is a label only when the operator asks")
        #expect(text.contains("# HELP hotspot_helper_commands_total "))
    }

    @Test func networksAreLabelledOnlyWhenAsked() {
        let metrics = HotspotMetrics(version: "1", labelsNetworks: true)
        let unlabelled = HotspotMetrics(version: "1")
        for network in ["Grand-Hotel", "Cafe", "Cafe"] {
            let event = HotspotEvent.command(CommandEvent(network: network, command: .maintain, helper: "grand", result: .success, milliseconds: 1))
            metrics.record(event)
            unlabelled.record(event)
        }
        let text = Self.text(metrics, .init(networkStates: ["Grand-Hotel": .authenticated], workerResidentBytes: [], workerReplacements: [:]))
        #expect(text.contains(#"hotspot_helper_commands_total{helper="grand",command="maintain",result="success",network="Grand-Hotel"} 1"#))
        #expect(text.contains(#"hotspot_helper_commands_total{helper="grand",command="maintain",result="success",network="Cafe"} 2"#))
        #expect(Self.text(unlabelled).contains(#"hotspot_helper_commands_total{helper="grand",command="maintain",result="success"} 3"#))
        #expect(text.contains(#"hotspot_helper_network_state{network="Grand-Hotel",state="authenticated"} 1"#))
    }

    @Test func levelsAreReadAtEachScrapeAndReplacementsAddUp() {
        let metrics = HotspotMetrics(version: "1")
        let first = Self.text(metrics, .init(networkStates: ["A": .authenticated, "B": .presentingUI, "C": .authenticated],
                                             workerResidentBytes: [7_000_000, nil], workerReplacements: ["deadline": 1]))
        #expect(first.contains(#"hotspot_helper_networks{state="authenticated"} 2"#))
        #expect(first.contains(#"hotspot_helper_networks{state="presenting_ui"} 1"#))
        #expect(first.contains(#"hotspot_helper_networks{state="failure"} 0"#))
        #expect(first.contains(#"hotspot_helper_worker_resident_bytes{worker="0"} 7000000"#))
        #expect(first.contains(#"hotspot_helper_worker_restarts_total{cause="deadline"} 1"#))
        #expect(first.contains(#"hotspot_helper_worker_restarts_total{cause="memory"} 0"#))
        let second = Self.text(metrics, .init(networkStates: [:], workerResidentBytes: [], workerReplacements: ["deadline": 3, "memory": 1]))
        #expect(second.contains(#"hotspot_helper_worker_restarts_total{cause="deadline"} 3"#))
        #expect(second.contains(#"hotspot_helper_worker_restarts_total{cause="memory"} 1"#))
        #expect(second.contains(#"hotspot_helper_networks{state="authenticated"} 0"#))
    }

    @Test func reloadsLoadErrorsVerdictsAndArbitrationAreCounted() {
        let metrics = HotspotMetrics(version: "1")
        metrics.record(.reload(ReloadEvent(reason: "SIGHUP", reloaded: ["a"], problems: ["a.lua:3: oops", "b.lua:1: no"])))
        metrics.record(.connectivity(ConnectivityEvent(network: "A", verdict: .captive)))
        metrics.record(.state(StateEvent(network: "A", from: .inactive, to: .evaluating, helper: nil)))
        metrics.record(.state(StateEvent(network: "A", from: .evaluating, to: .authenticating, helper: "a")))
        let text = Self.text(metrics)
        #expect(text.contains("hotspot_helper_script_reloads_total 1"))
        #expect(text.contains("hotspot_helper_script_load_errors_total 2"))
        #expect(text.contains(#"hotspot_helper_connectivity_verdicts_total{verdict="captive"} 1"#))
        #expect(text.contains("hotspot_helper_arbitration_duration_seconds_count 1"))
    }

    /// One series for the signed catalog running: a reload that takes another version replaces it.
    @Test func theRunningCatalogsVersionIsALabel() {
        let metrics = HotspotMetrics(version: "1")
        #expect(!Self.text(metrics).contains("hotspot_helper_catalog_info"))
        metrics.record(.reload(ReloadEvent(reason: "started", added: ["a"], catalogVersion: "2026.11.1")))
        #expect(Self.text(metrics).contains(#"hotspot_helper_catalog_info{version="2026.11.1"} 1"#))
        metrics.record(.reload(ReloadEvent(reason: "SIGHUP", problems: ["refused"])))
        metrics.record(.reload(ReloadEvent(reason: "SIGHUP", reloaded: ["a"], catalogVersion: "2026.11.2")))
        let text = Self.text(metrics)
        #expect(text.contains(#"hotspot_helper_catalog_info{version="2026.11.2"} 1"#))
        #expect(!text.contains("2026.11.1"))
    }
}
