import Foundation
import PortalSimulator
import Testing
import TestSupport

/// `hotspot-helper simulate`, run from the built executable as a user would.
@Suite(.serialized) struct SimulateCommandTests {
    /// The executable built beside this test binary.
    static let executable: String = {
        let current = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return URL(fileURLWithPath: current).deletingLastPathComponent().appendingPathComponent("hotspot-helper").path
    }()

    @Test func listPrintsEveryScenarioWithItsSummary() async throws {
        let run = try await runProcess(Self.executable, ["simulate", "--list"])
        #expect(run.status == 0, "\(run.errors)")
        let lines = run.text.split(separator: "\n")
        #expect(lines.count == Scenario.all.count)
        for (line, scenario) in zip(lines, Scenario.all) {
            #expect(line.hasPrefix(scenario.name + " ") && line.hasSuffix(scenario.summary))
        }
    }

    @Test func anUnknownScenarioNamesTheValidOnesAndExits2() async throws {
        let run = try await runProcess(Self.executable, ["simulate", "--scenario", "captive"])
        #expect(run.status == 2)
        #expect(run.errors.contains(#"unknown scenario "captive""#))
        for scenario in Scenario.all { #expect(run.errors.contains(scenario.name)) }
    }

    @Test func runsUntilSIGTERMAndThenExits0() async throws {
        let output = scratchPath("simulate-out")
        _ = FileManager.default.createFile(atPath: output, contents: nil)
        defer { try? FileManager.default.removeItem(atPath: output) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.executable)
        process.arguments = ["simulate", "--scenario", "click-through", "--port", "0", "--dns-port", "0"]
        process.standardOutput = FileHandle(forWritingAtPath: output)
        process.standardError = FileHandle.nullDevice
        let exit = AsyncStream.makeStream(of: Int32.self)
        process.terminationHandler = { exit.continuation.yield($0.terminationStatus) }
        try process.run()
        defer { if process.isRunning { process.terminate() } }

        var lines: [Substring] = []
        try await eventually("the simulator to print its two addresses") {
            lines = String(decoding: FileManager.default.contents(atPath: output) ?? Data(), as: UTF8.self).split(separator: "\n")
            return lines.count >= 2
        }
        try #require(lines.count == 2, "\(lines)")
        #expect(lines[0].hasPrefix("click-through"))
        #expect(lines[1].hasPrefix("dns") && lines[1].contains("answers 127.0.0.1"))
        let url = try #require(lines[0].split(separator: " ").last)
        let probe = try await runProcess("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "\(url)generate_204"])
        #expect(probe.text == "302")

        process.terminate()  // SIGTERM
        var statuses = exit.stream.makeAsyncIterator()
        #expect(await statuses.next() == 0)
    }
}
