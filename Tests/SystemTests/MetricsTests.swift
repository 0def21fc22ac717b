import Foundation
import Testing
import TestSupport

/// `run --metrics-listen`: a real Prometheus (Debian's) scrapes the daemon on loopback, and
/// its query API answers with what the test's commands produced; promtool checks the
/// exposition and the example alerting rules.
@Suite("metrics for Prometheus", .serialized)
struct MetricsTests {
    static let helper = """
        return {
          name = "Instant",
          hosts = {},
          evaluate = function(cmd) return "high" end,
          authenticate = function(cmd) return "success" end,
          maintain = function(cmd) return "success" end,
          logoff = function(cmd) return "success" end,
        }
        """

    static func curl(_ url: String) async throws -> String {
        let run = try await CLI.run(["-sS", "--max-time", "5", url], executable: "/usr/bin/curl")
        try #require(run.status == 0, "curl \(url): \(run.errors)")
        return run.output
    }

    /// What `url` answers, or nil (not a failure: a server may not listen yet).
    static func fetch(_ url: String) async throws -> String? {
        let run = try await CLI.run(["-sS", "--max-time", "5", url], executable: "/usr/bin/curl")
        return run.status == 0 ? run.output : nil
    }

    /// A loopback port free a moment ago, for a program that takes no port 0.
    static func freePort() throws -> UInt16 {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) == 0 ? getsockname(descriptor, $0, &length) : -1 }
        }
        return UInt16(bigEndian: address.sin_port)
    }

    @Test func prometheusScrapesTheCommandsTheDaemonRan() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: "/usr/bin/prometheus"), "Debian's prometheus is missing: make deps installs it")
        let scripts = try CLI.temporaryDirectory(scripts: ["instant.lua": Self.helper])
        // The control socket apart from the state, as the unit has it.
        let controlSocket = try CLI.temporaryDirectory() + "/control.sock"
        let daemon = try RunningCLI(["run", "--json", "--scripts", scripts, "--source", "interface:lo:Instant-Guest",
                                     "--state-dir", try CLI.temporaryDirectory(), "--control-socket", controlSocket,
                                     "--probe-interval", "0", "--metrics-listen", "127.0.0.1:0"])
        let running = try await daemon.waitForEvent { $0.message?.contains("metrics at http://") == true }
        let message = try #require(running.message)
        let metricsURL = String(message[message.range(of: "http://")!.lowerBound...])
        try await daemon.waitForEvent(EventLine.isState("authenticated", "Instant-Guest"))
        // More commands: a logoff and a join, through the control socket.
        #expect(try await CLI.run(["logoff", "Instant-Guest", "--control-socket", controlSocket]).status == 0)
        #expect(try await CLI.run(["join", "Instant-Guest", "--control-socket", controlSocket]).status == 0)
        try await daemon.waitForEvent(count: 2, EventLine.isState("authenticated", "Instant-Guest"))

        var expected: [String: Int] = [:]
        for event in daemon.events where event.event == "command" {
            expected["\(event.helper ?? "") \(event.command ?? "") \(event.result ?? "")", default: 0] += 1
        }
        // The join after the logoff maintains the network with its chosen helper.
        #expect(expected == ["instant evaluate success": 1, "instant authenticate success": 1, "instant logoff success": 1,
                             "instant maintain success": 1])

        // The exposition passes promtool's checks (format and lint: help, names, units).
        let exposition = try await Self.curl(metricsURL)
        #expect(exposition.contains(#"hotspot_helper_commands_total{helper="instant",command="logoff",result="success"} 1"#))
        #expect(exposition.contains(#"hotspot_helper_networks{state="authenticated"} 1"#))
        #expect(exposition.contains(#"hotspot_helper_worker_resident_bytes{worker="0"} "#))
        let file = try CLI.temporaryDirectory() + "/exposition.txt"
        try exposition.write(toFile: file, atomically: true, encoding: .utf8)
        let check = try await CLI.run(["-c", "promtool check metrics < \(file)"], executable: "/bin/sh")
        #expect(check.status == 0 && check.output.isEmpty && check.errors.isEmpty, "promtool check metrics: \(check.output)\(check.errors)")

        // Prometheus itself, scraping every second.
        let directory = try CLI.temporaryDirectory()
        let target = metricsURL.dropFirst("http://".count).split(separator: "/").first!
        try """
            global:
              scrape_interval: 1s
            scrape_configs:
              - job_name: hotspot-helper
                static_configs:
                  - targets: ["\(target)"]
            """.write(toFile: directory + "/prometheus.yml", atomically: true, encoding: .utf8)
        let port = try Self.freePort()
        let prometheus = try RunningCLI(["--config.file=\(directory)/prometheus.yml", "--storage.tsdb.path=\(directory)/data",
                                         "--web.listen-address=127.0.0.1:\(port)"], executable: "/usr/bin/prometheus")
        var answered: [String: Int] = [:]
        _ = try await holds(within: .seconds(60)) {
            // Prometheus takes a while to listen on a busy machine: refused connections are retried.
            guard let text = try await Self.fetch("http://127.0.0.1:\(port)/api/v1/query?query=hotspot_helper_commands_total"),
                  let reply = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
                  let results = (reply["data"] as? [String: Any])?["result"] as? [[String: Any]] else { return false }
            answered = [:]
            for result in results {
                guard let labels = result["metric"] as? [String: String], let value = (result["value"] as? [Any])?.last as? String else { continue }
                #expect(labels["job"] == "hotspot-helper")
                answered["\(labels["helper"] ?? "") \(labels["command"] ?? "") \(labels["result"] ?? "")"] = Int(Double(value) ?? -1)
            }
            return answered == expected
        }
        #expect(answered == expected, "Prometheus's answer; its log:\n\(prometheus.standardError.suffix(2000))")
        prometheus.signal(SIGTERM)
        _ = try await prometheus.waitForExit(timeout: .seconds(20))
        daemon.signal(SIGTERM)
        #expect(try await daemon.waitForExit() == 0)
    }

    @Test func theExampleAlertingRulesPassPromtool() async throws {
        let rules = UnitHardeningTests.repository + "/docs/prometheus/alerts.yml"
        let check = try await CLI.run(["check", "rules", rules], executable: "/usr/bin/promtool")
        #expect(check.status == 0, "\(check.output)\(check.errors)")
        #expect(check.output.contains("SUCCESS"))
    }

    @Test func theExampleDashboardIsJSONOnTheseMetrics() throws {
        let path = UnitHardeningTests.repository + "/docs/grafana/hotspot-helper-dashboard.json"
        let dashboard = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
        let panels = try #require(dashboard["panels"] as? [[String: Any]])
        let expressions = panels.flatMap { ($0["targets"] as? [[String: Any]] ?? []).compactMap { $0["expr"] as? String } }
        #expect(expressions.contains { $0.contains("hotspot_helper_commands_total") })
        #expect(expressions.allSatisfy { $0.contains("hotspot_helper_") || $0.contains(#"job="hotspot-helper""#) })
    }
}
