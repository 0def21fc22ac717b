import Foundation
import LuaSandbox
import Testing
import TestSupport

let aroma = """
    return {
      name = "Aroma Wi-Fi",
      hosts = { "portal.aroma.example" },
      evaluate = function(cmd)
        cmd.network:set_confidence(cmd.network.ssid == "Aroma-Guest" and "high" or "none")
        local response = cmd:create_response("success")
        response:set_network(cmd.network)
        response:deliver()
      end,
      authenticate = function(cmd)
        cmd.store.logins = tostring((tonumber(cmd.store.logins) or 0) + 1)
        return "success"
      end,
      maintain = function(cmd)
        cmd.store.maintained = tostring((tonumber(cmd.store.maintained) or 0) + 1)
        cmd.store.just_joined = tostring(cmd.network.did_just_join)
        return "success"
      end,
    }
    """

@Suite struct ConnectTests {
    @Test func connectPrintsTheContractsJSONLines() async throws {
        let scripts = try CLI.temporaryDirectory(scripts: ["aroma.lua": aroma])
        let run = try await CLI.run(["connect", "--scripts", scripts, "--ssid", "Aroma-Guest", "--json"])
        #expect(run.status == 0, "\(run.errors)")
        let lines = run.linesWithoutTime
        #expect(lines.count == run.events.count)  // JSON and nothing else
        #expect(lines.first == #"{"event":"state","network":"Aroma-Guest","from":"inactive","to":"evaluating","helper":null}"#)
        let evaluate = try #require(run.events.first { $0.command == "evaluate" })
        #expect(evaluate.keys == ["event", "command", "helper", "network", "result", "confidence", "ms", "error", "time"])
        // Every event says when it was written: RFC 3339 in UTC with milliseconds, last.
        let now = Date()
        let format = ISO8601DateFormatter()
        format.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        for event in run.events {
            let time = try #require(event.time)
            #expect(time.count == 24 && time.hasSuffix("Z") && time.dropFirst(19).hasPrefix("."), "\(time)")
            let parsed = try #require(format.date(from: time), "\(time)")
            #expect(abs(parsed.timeIntervalSince(now)) < 60)
        }
        #expect(run.output.split(separator: "\n").allSatisfy { $0.hasSuffix("Z\"}") })
        #expect(evaluate.helper == "aroma")
        #expect(evaluate.confidence == "high")
        #expect(evaluate.ms != nil)
        #expect(lines.last == #"{"event":"done","network":"Aroma-Guest","state":"authenticated","helper":"aroma"}"#)
    }

    @Test func aNetworkNobodyClaimsIsAuthenticatedWithANullHelper() async throws {
        let scripts = try CLI.temporaryDirectory(scripts: ["aroma.lua": aroma])
        let run = try await CLI.run(["connect", "--scripts", scripts, "--ssid", "Airport-Free", "--json"])
        #expect(run.status == 0)
        #expect(run.linesWithoutTime.last == #"{"event":"done","network":"Airport-Free","state":"authenticated","helper":null}"#)
        // For CI, a network no helper claims can be a failure of its own.
        let required = try await CLI.run(["connect", "--scripts", scripts, "--ssid", "Airport-Free", "--require-helper"])
        #expect(required.status == 3, "\(required.errors)")
        let claimed = try await CLI.run(["connect", "--scripts", scripts, "--ssid", "Aroma-Guest", "--require-helper"])
        #expect(claimed.status == 0, "\(claimed.errors)")
    }

    @Test func aSecondRunWithTheSameStateDirectoryUsesTheCachedHelper() async throws {
        let scripts = try CLI.temporaryDirectory(scripts: ["aroma.lua": aroma])
        let state = try CLI.temporaryDirectory()
        let arguments = ["connect", "--scripts", scripts, "--ssid", "Aroma-Guest", "--state-dir", state, "--json"]
        #expect(try await CLI.run(arguments).status == 0)
        let second = try await CLI.run(arguments)
        #expect(second.status == 0)
        let commands = second.events.compactMap { $0.command }
        #expect(commands == ["maintain"])
        let store = try String(contentsOfFile: state + "/store/aroma.json", encoding: .utf8)
        #expect(store.contains(#""just_joined" : "true""#))
    }

    @Test func aFailingHelperExitsOne() async throws {
        let scripts = try CLI.temporaryDirectory(scripts: ["aroma.lua": aroma.replacingOccurrences(
            of: "return \"success\"\n  end,\n  maintain", with: "return \"failure\"\n  end,\n  maintain")])
        let run = try await CLI.run(["connect", "--scripts", scripts, "--ssid", "Aroma-Guest"])
        #expect(run.status == 1)
        #expect(run.output.contains("done: failure"))
        // What the person at the terminal can do about it.
        #expect(run.output.contains("a daemon (hotspot-helper run) tries Aroma-Guest again by itself, after a failure on a long backoff (5 min, doubling up to an hour); "
                                    + "hotspot-helper join Aroma-Guest or the person's page's Join again button tries it at once"), "\(run.output)")
    }

    @Test func aHelperThatAsksAPersonIsAnsweredWithAnswer() async throws {
        let scripts = try CLI.temporaryDirectory(scripts: ["desk.lua": """
            return {
              name = "Front desk",
              hosts = { "desk.example" },
              ui = { title = "Front desk", fields = { { name = "room", label = "Room" } } },
              evaluate = function(cmd)
                cmd.network:set_confidence("high")
                local response = cmd:create_response("success")
                response:set_network(cmd.network)
                response:deliver()
              end,
              authenticate = function(cmd) return "ui_required" end,
              present_ui = function(cmd)
                cmd.store.room = cmd.answers.room
                return cmd.answers.room == "214" and "success" or "failure"
              end,
            }
            """])
        // Unanswered, the run ends waiting for the person and says how to answer.
        let asked = try await CLI.run(["connect", "--scripts", scripts, "--ssid", "Desk"])
        #expect(asked.status == 1)
        #expect(asked.output.contains("asks a person: run again with --answer name=value"), "\(asked.output)")
        let state = try CLI.temporaryDirectory()
        let answered = try await CLI.run(["connect", "--scripts", scripts, "--ssid", "Desk", "--answer", "room=214", "--state-dir", state, "--json"])
        #expect(answered.status == 0, "\(answered.errors)")
        #expect(answered.events.compactMap(\.command) == ["evaluate", "authenticate", "present_ui"])
        #expect(try String(contentsOfFile: state + "/store/desk.json", encoding: .utf8).contains(#""room" : "214""#))
        let wrong = try await CLI.run(["connect", "--scripts", scripts, "--ssid", "Desk", "--answer", "room=999"])
        #expect(wrong.status == 1)
    }

    @Test func usageErrorsAndBrokenScriptsExitTwo() async throws {
        let scripts = try CLI.temporaryDirectory(scripts: ["broken.lua": "return {\n  name = \n"])
        let broken = try await CLI.run(["connect", "--scripts", scripts, "--json"])
        #expect(broken.status == 2)
        #expect(broken.output.isEmpty)
        #expect(broken.errors.contains("broken.lua:3:"))
        let usage = try await CLI.run(["connect", "--scripts", scripts, "--signal", "3"])
        #expect(usage.status == 2)
        #expect(usage.errors.contains("--signal must be between 0.0 and 1.0"))
        // 33 bytes in 11 characters: an SSID is bytes, and 802.11 gives it at most 32.
        let long = try await CLI.run(["connect", "--scripts", scripts, "--ssid", String(repeating: "€", count: 11)])
        #expect(long.status == 2)
        #expect(long.errors.contains("--ssid: the SSID \"\(String(repeating: "€", count: 11))\" is 33 bytes; a Wi-Fi network's name has 1 to 32"),
                "\(long.errors)")
        let empty = try await CLI.run(["connect", "--scripts", scripts, "--ssid", ""])
        #expect(empty.status == 2)
        #expect(empty.errors.contains("--ssid: the SSID \"\" is 0 bytes"), "\(empty.errors)")
        let missing = try await CLI.run(["connect", "--scripts", "/nonexistent/scripts"])
        #expect(missing.status == 2)
        #expect(missing.errors.contains("/nonexistent/scripts: no such file or directory"))
    }

    /// A missing or non-PEM --ca-file was taken, and every HTTPS request then failed naming
    /// no file; it is checked before anything runs, as a FIFO given as one is refused.
    @Test func aCAFileThatIsMissingOrNotPEMIsAUsageError() async throws {
        let directory = try CLI.temporaryDirectory(scripts: ["open.lua": #"return { name = "Open", hosts = {} }"#])
        try "not a certificate\n".write(toFile: directory + "/ca.der", atomically: true, encoding: .utf8)
        #expect(mkfifo(directory + "/ca.fifo", 0o600) == 0)
        for (file, expected) in [("/nonexistent/ca.pem", "--ca-file /nonexistent/ca.pem: cannot read the file: No such file or directory"),
                                 (directory + "/ca.der", "--ca-file \(directory)/ca.der: no PEM certificate in it"),
                                 (directory + "/ca.fifo", "--ca-file \(directory)/ca.fifo: cannot read the file: it is a FIFO")] {
            let run = try await CLI.run(["connect", "--scripts", directory, "--ssid", "Open-Venue", "--ca-file", file])
            #expect(run.status == 2)
            #expect(run.errors.contains(expected), "\(run.errors)")
        }
    }

    /// `kill -9` in the middle of maintaining loses nothing that was written: the next run
    /// sees at least every count the killed one had saved, and the files are whole.
    @Test func stateSurvivesKillNine() async throws {
        let scripts = try CLI.temporaryDirectory(scripts: ["aroma.lua": aroma])
        let state = try CLI.temporaryDirectory()
        let (process, _, _) = try CLI.start(["connect", "--scripts", scripts, "--ssid", "Aroma-Guest",
                                              "--state-dir", state, "--stay", "30", "--maintain-interval", "0.05", "--json"])
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        try await eventually("five maintain counts saved") { (Self.maintainedCount(in: state) ?? 0) >= 5 }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        let atKill = try #require(Self.maintainedCount(in: state))
        #expect(atKill >= 5)
        let stateFile = try Data(contentsOf: URL(fileURLWithPath: state + "/state.json"))
        #expect((try JSONSerialization.jsonObject(with: stateFile) as? [String: Any])?["chosenHelpers"] != nil)
        let next = try await CLI.run(["connect", "--scripts", scripts, "--ssid", "Aroma-Guest", "--state-dir", state, "--json"])
        #expect(next.status == 0)
        #expect(next.events.compactMap { $0.command } == ["maintain"])
        #expect((Self.maintainedCount(in: state) ?? 0) == atKill + 1)
    }

    /// A store file is a list of networks' entries, each `{ssid, ssidHex, value}`.
    static func maintainedCount(in state: String) -> Int? {
        guard let data = FileManager.default.contents(atPath: state + "/store/aroma.json"),
              let entries = try? JSONSerialization.jsonObject(with: data) as? [[String: Any]],
              let entry = entries.first(where: { $0["ssid"] as? String == "Aroma-Guest" }) else { return nil }
        return ((entry["value"] as? [String: String])?["maintained"]).flatMap { Int($0) }
    }
}

@Suite struct CheckTests {
    @Test func checkReportsEveryProblemWithItsLine() async throws {
        let scripts = try CLI.temporaryDirectory(scripts: [
            "good.lua": aroma,
            "bad.lua": "return {\n  name = \"Far too long a display name\",\n  hosts = { \"*.*.example\" },\n  evaluate = 1,\n}",
            "syntax.lua": "return {",
            "nothing.lua": "local x = 1",
        ])
        let run = try await CLI.run(["check", scripts])
        #expect(run.status == 1)
        #expect(run.output.contains("bad.lua:2: the display name"))
        #expect(run.output.contains("bad.lua:3: host pattern \"*.*.example\""))
        #expect(run.output.contains("bad.lua:4: the handler `evaluate` must be a function"))
        #expect(run.output.contains("syntax.lua:1:"))
        #expect(run.output.contains("nothing.lua: the script must return a table of handlers, not nothing"))
        #expect(!run.output.contains("good.lua"))
        #expect(run.output.contains("docs/lua/hotspot-helper.lua"), "check points to the language-server definitions")
        let good = try await CLI.run(["check", scripts + "/good.lua"])
        #expect(good.status == 0)
        #expect(good.output == "1 script OK\n")
    }
}
