import Foundation
import Testing

@Suite("hotspot-helper demo")
struct DemoTests {
    /// What `make demo` runs, from the repository root with the bundled scripts.
    @Test func everyVenueEndsAsExpected() async throws {
        let scripts = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../Scripts").standardized.path
        let run = try await CLI.run(["demo", "--scripts", scripts])
        #expect(run.status == 0, "\(run.output)\(run.errors)")
        #expect(run.output.contains("every venue ended as expected"))
        #expect(!run.output.contains("✗"))
        for line in ["Campus-WiFi: Campus Wi-Fi (campus), password supplied",
                     "[City-Library] authenticating ⇒ presenting_ui (library)",
                     "[Grand-Hotel] maintain → hotel: success",
                     "[Airport-Free-WiFi] authenticate → airport: success",
                     "[Aroma-Guest] logging_off ⇒ inactive (aroma)",
                     "[Museum-Guest] authenticate → capport: success",
                     "[Museum-Guest] maintain → capport: success"] {
            #expect(run.output.contains(line))
        }
        #expect(!run.output.contains("campus-pass-4417") && !run.output.contains("airport-2026-fly"))
    }

    @Test func jsonLinesOnly() async throws {
        let scripts = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../Scripts").standardized.path
        let run = try await CLI.run(["demo", "--scripts", scripts, "--json", "--answer", "email=reader@example.org"])
        #expect(run.status == 0)
        let lines = run.output.split(separator: "\n")
        #expect(run.events.count == lines.count)
        #expect(run.events.last?["event"] as? String == "demo")
        #expect(run.events.last?["failed"] as? Int == 0)
    }

    /// The bundled helpers and the example venue scripts load without a problem.
    @Test func bundledAndExampleScriptsPassCheck() async throws {
        let scripts = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../Scripts").standardized.path
        let run = try await CLI.run(["check", scripts, scripts + "/examples"])
        #expect(run.status == 0, "\(run.output)\(run.errors)")
        #expect(run.output == "10 scripts OK\n")
    }

    @Test func aScriptsDirectoryThatIsNotThereIsAUsageError() async throws {
        let run = try await CLI.run(["demo", "--scripts", "/nonexistent/scripts"])
        #expect(run.status == 2)
        #expect(run.errors.contains("/nonexistent/scripts"))
    }
}
