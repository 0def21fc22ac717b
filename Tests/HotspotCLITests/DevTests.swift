import Foundation
import Testing
import TestSupport

/// `hotspot-helper dev`: a script's lifecycle against a simulated portal, again on every save.
@Suite("hotspot-helper dev", .serialized)
struct DevTests {
    static func aromaCopy() throws -> String {
        let directory = try CLI.temporaryDirectory()
        let path = directory + "/aroma.lua"
        try FileManager.default.copyItem(atPath: CLI.bundledScripts + "/aroma.lua", toPath: path)
        return path
    }

    static func isDone(_ state: String = "authenticated") -> (EventLine) -> Bool {
        { $0.event == "done" && $0.state == state }
    }

    @Test func onceRunsTheWholeLifecycleAndExitsZero() async throws {
        let run = try await CLI.run(["dev", try Self.aromaCopy(), "--scenario", "click-through", "--ssid", "Aroma-Guest", "--once", "--json"])
        #expect(run.status == 0, "\(run.errors)")
        let commands = run.events.compactMap { event -> String? in
            guard event.event == "command" else { return nil }
            return "\(event.command ?? "") \(event.result ?? "")"
        }
        #expect(commands == ["evaluate success", "authenticate success", "maintain success", "logoff success"])
        #expect(run.linesWithoutTime.last == #"{"event":"done","network":"Aroma-Guest","state":"authenticated","helper":"aroma"}"#)
    }

    @Test func aScriptThatDoesNotClaimTheNetworkSaysWhichSSIDToGive() async throws {
        let run = try await CLI.run(["dev", try Self.aromaCopy(), "--scenario", "click-through", "--once"])
        #expect(run.status == 0)
        #expect(run.output.contains("did not claim hotspot-helper-dev (evaluate answered none); give the SSID it expects with --ssid"))
        let required = try await CLI.run(["dev", try Self.aromaCopy(), "--scenario", "click-through", "--once", "--require-helper"])
        #expect(required.status == 3, "\(required.errors)")
    }

    /// Save a good version, a broken one, a good one again: each good save runs again; the
    /// broken one is reported with file:line and nothing runs.
    @Test func hotReloadRunsEachGoodSaveAndReportsABrokenOne() async throws {
        let script = try Self.aromaCopy()
        let good = try String(contentsOfFile: script, encoding: .utf8)
        let dev = try RunningCLI(["dev", script, "--scenario", "click-through", "--ssid", "Aroma-Guest", "--json"])
        try await dev.waitForEvent(Self.isDone())

        try good.replacingOccurrences(of: "\"Aroma Wi-Fi\"", with: "\"Aroma Wi-Fi 2\"").write(toFile: script, atomically: true, encoding: .utf8)
        let reloaded = try await dev.waitForEvent { $0.event == "reload" && $0.reason == "saved" }
        #expect(reloaded.reloaded == ["aroma"])
        try await dev.waitForEvent(count: 2, Self.isDone())

        // Written in place (truncated and written, not renamed over), as some editors do.
        let file = try #require(fopen(script, "w"))
        fputs("return {\n  name = \"Aroma\",\n  evaluate = function(cmd)\n    return \"high\"\n  end end,\n}\n", file)
        fclose(file)
        let broken = try await dev.waitForEvent(count: 2) { $0.event == "reload" && $0.reason == "saved" }
        #expect(broken.problems?.first?.hasPrefix(script + ":5:") == true, "\(broken)")

        try good.write(toFile: script, atomically: true, encoding: .utf8)
        try await dev.waitForEvent(count: 3, Self.isDone())
        dev.signal(SIGINT)
        #expect(try await dev.waitForExit() == 0)
        // Counted once everything is written: a run after the broken save would be one more.
        #expect(dev.events.filter(Self.isDone()).count == 3, "a broken save runs nothing")
        #expect(dev.events.filter { $0.command == "evaluate" }.count == 3, "a broken save runs nothing")
    }

    @Test func aCommandLongerThanASecondShowsAProgressLine() async throws {
        let run = try await CLI.run(["dev", try Self.aromaCopy(), "--scenario", "slow", "--ssid", "Aroma-Guest", "--once"])
        #expect(run.status == 0, "\(run.errors)")
        #expect(run.errors.contains("… authenticating (aroma): still running after 1 s"))
        #expect(!run.output.contains("still running"), "progress stays off standard output")
    }

    @Test func usageErrorsNameWhatIsMissing() async throws {
        let script = try Self.aromaCopy()
        let neither = try await CLI.run(["dev", script])
        #expect(neither.status == 2)
        #expect(neither.errors.contains("give either --scenario NAME (a simulated portal) or --portal URL (a real one)"))
        let unknown = try await CLI.run(["dev", script, "--scenario", "nowhere"])
        #expect(unknown.status == 2)
        #expect(unknown.errors.contains("no such scenario; the scenarios are click-through, credentials"))
        let broken = try CLI.temporaryDirectory(scripts: ["broken.lua": "return {\n  name = \n"]) + "/broken.lua"
        let notLoading = try await CLI.run(["dev", broken, "--scenario", "click-through", "--once"])
        #expect(notLoading.status == 2)
        #expect(notLoading.output.contains("broken.lua:3:"))
    }
}
