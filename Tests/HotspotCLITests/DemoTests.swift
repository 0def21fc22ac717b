import Foundation
import Testing
import TestSupport

@Suite("hotspot-helper demo")
struct DemoTests {
    /// What `make demo` runs, from the repository root with the bundled scripts.
    @Test func everyVenueEndsAsExpected() async throws {
        let scripts = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../VenueHelpers").standardized.path
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
            .appendingPathComponent("../../VenueHelpers").standardized.path
        let run = try await CLI.run(["demo", "--scripts", scripts, "--json", "--answer", "email=reader@example.org"])
        #expect(run.status == 0)
        let lines = run.output.split(separator: "\n")
        #expect(run.events.count == lines.count)
        #expect(run.events.last?.event == "demo")
        #expect(run.events.last?.failed == 0)
    }

    /// The bundled helpers and the example venue scripts load without a problem.
    @Test func bundledAndExampleScriptsPassCheck() async throws {
        let scripts = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../VenueHelpers").standardized.path
        let run = try await CLI.run(["check", scripts, scripts + "/examples"])
        #expect(run.status == 0, "\(run.output)\(run.errors)")
        #expect(run.output == "18 scripts OK\n")
    }

    /// demo, dev and simulate live in hotspot-helper-devtools, with the simulator a device
    /// has no use for: hotspot-helper alone (as installed on a device) says what is missing.
    @Test func theSimulatorsCommandsNeedTheDevtoolsExecutable() async throws {
        let alone = try CLI.temporaryDirectory() + "/hotspot-helper"
        try copyExecutable(CLI.path, to: alone)
        let run = try await CLI.run(["simulate", "--list"], executable: alone)
        #expect(run.status == 2)
        #expect(run.errors.contains("hotspot-helper-devtools"))
        #expect(run.errors.contains("a device needs only hotspot-helper"))
        let beside = try await CLI.run(["simulate", "--list"])
        #expect(beside.status == 0)
        #expect(beside.output.hasPrefix("click-through"))
    }

    @Test func aScriptsDirectoryThatIsNotThereIsAUsageError() async throws {
        let run = try await CLI.run(["demo", "--scripts", "/nonexistent/scripts"])
        #expect(run.status == 2)
        #expect(run.errors.contains("/nonexistent/scripts"))
    }
}

/// Copies an executable with its descriptor closed on exec: a process another test starts
/// meanwhile must not inherit it open for writing, or running the copy fails with
/// "Text file busy" (as FileManager's copy did, now and then, with the suites in parallel).
private func copyExecutable(_ source: String, to destination: String) throws {
    let bytes = try Data(contentsOf: URL(fileURLWithPath: source))
    let descriptor = open(destination, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o755)
    guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    defer { close(descriptor) }
    try bytes.withUnsafeBytes { buffer in
        var offset = 0
        while offset < buffer.count {
            let written = write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
            if written < 0, errno == EINTR { continue }
            guard written > 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            offset += written
        }
    }
}
