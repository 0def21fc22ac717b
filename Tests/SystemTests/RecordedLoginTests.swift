#if canImport(Glibc)
import Glibc
#endif
import Foundation
import PortalSimulator
import Testing
import TestSupport

/// From a Chromium recording of a login through a simulator scenario, to a generated
/// script that logs in unmodified against the recording's replay and the live scenario.
@Suite("Recorded logins", .serialized)
struct RecordedLoginTests {
    /// What the person typed: the simulator's credentials, an address, a name.
    static let typed = ["username": "guest", "password": "aroma-2026", "voucher": ScenarioSettings().unifiVoucher, "email": "reader@example.org", "name": "Reader"]

    /// The secrets every generated script gets: the person's values under the names the
    /// scenarios' fields have.
    static func secretsFile(for script: String) throws -> String {
        let name = ((script as NSString).lastPathComponent as NSString).deletingPathExtension
        let path = (script as NSString).deletingLastPathComponent + "/secrets.ini"
        var lines = ["[\(name)]"]
        for (field, value) in ["username": "guest", "password": "aroma-2026", "auth_user": "guest", "auth_pass": "aroma-2026", "user": "guest",
                               "UserName": "guest", "Password": "aroma-2026", "voucher": ScenarioSettings().unifiVoucher,
                               "email": "reader@example.org", "name": "Reader"] {
            lines.append("\(field) = \(value)")
        }
        try (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o600)
        return path
    }

    /// Records a person's login through `scenario` with Chromium: the HAR's path, and the
    /// kinds of what the person typed (`typed`'s keys).
    static func record(_ scenario: Scenario, in directory: String) async throws -> (har: String, typed: Set<String>) {
        var settings = ScenarioSettings()
        settings.portalHost = "portal.example"
        let portal = try await SimulatedPortal.start(scenario, settings: settings)
        let probe = "http://connectivitycheck.dev.example:\(portal.port)/generate_204"
        let path = directory + "/\(scenario.name).har"
        let typed: Set<String>
        do {
            typed = try await onOwnThread {
                var typed: Set<String> = []
                let recorder = try ChromiumRecorder(resolvingEveryNameTo: "127.0.0.1")
                try recorder.open(probe)
                for _ in 0..<5 {
                    guard let kinds = try recorder.submitAsAPerson(Self.typed) else {
                        // A page with nothing to submit (busy, too many requests): the person
                        // waits a moment, goes back and tries again (real time is the point:
                        // the simulated portal times the wait).
                        usleep(1_200_000)
                        _ = try? recorder.browser.evaluate("window.__before = true; history.back()")
                        try recorder.waitForNextPage()
                        continue
                    }
                    typed.formUnion(kinds)
                    try recorder.waitForNextPage()
                    if try probeStatus(probe) == 204 { break }
                }
                // The check the person's system makes once logged in, answered 204.
                let probesBefore = recorder.responses(to: probe)
                try recorder.browser.send("Page.navigate", ["url": probe])
                try recorder.waitForResponse(to: probe, beyond: probesBefore)
                try recorder.har().write(to: URL(fileURLWithPath: path))
                return typed
            }
        } catch {
            await portal.stop()
            throw error
        }
        await portal.stop()
        return (path, typed)
    }

    /// The scenarios whose recording does not yet yield a script that logs in: their pages
    /// compute a CHAP response in JavaScript from the password the person typed (which the
    /// recording never holds) and a challenge the page was served, which a generated script
    /// cannot reproduce from what was sent; coovachilli's page is built by a ChilliLibrary.js
    /// the simulator does not serve, so a browser cannot log in there at all.
    static let notYet: Set<Scenario> = [.mikrotik, .coovachilli]

    /// The issue's goal: at least 9 in 10 of the simulator's scenarios log in from a recording
    /// (each is a row of the test below, the rows of `notYet` known to fail).
    @Test func nineInTenScenariosLogInFromARecording() {
        #expect((Scenario.all.count - Self.notYet.count) * 10 >= Scenario.all.count * 9,
                "\(Scenario.all.count - Self.notYet.count) of \(Scenario.all.count)")
    }

    @Test(.enabled(if: HeadlessBrowser.isInstalled), arguments: Scenario.all)
    func aChromiumRecordingYieldsAScriptThatLogsIn(_ scenario: Scenario) async throws {
        if Self.notYet.contains(scenario) {
            await withKnownIssue { try await Self.recordGenerateAndLogIn(scenario) }
        } else {
            try await Self.recordGenerateAndLogIn(scenario)
        }
    }

    /// Records a login through `scenario`, imports it, and logs in with the generated script
    /// against the replay and the live scenario, the person asked only what they typed.
    static func recordGenerateAndLogIn(_ scenario: Scenario) async throws {
        let directory = try CLI.temporaryDirectory()
        let (har, typed) = try await Self.record(scenario, in: directory)
        let script = directory + "/venue.lua"
        let imported = try await CLI.run(["har", "import", har, "--ssid", "Venue-Guest", "--output", script])
        #expect(imported.status == 0, "\(imported.errors)\n\(imported.output)")
        let checked = try await CLI.run(["check", script])
        #expect(checked.status == 0, "\(checked.output)")
        let secrets = try Self.secretsFile(for: script)
        // The script's questions: one for each kind of thing the person typed, and no other.
        let questions = (try String(contentsOfFile: script, encoding: .utf8)).components(separatedBy: "\n")
            .filter { $0.hasPrefix("      { name = \"") }
            .map { line in (name: line.components(separatedBy: "\"")[1], label: line.components(separatedBy: "label = \"")[1].components(separatedBy: "\"")[0]) }
        let labels = ["email": "Email address", "password": "Password", "voucher": "Voucher code", "username": "User name", "name": "Name"]
        #expect(Set(questions.map(\.label)) == Set(typed.compactMap { labels[$0] }), "asked \(questions), typed \(typed.sorted())")
        // The person answers the script's questions as they typed in the recording.
        let answers = questions.flatMap { question in ["--answer", "\(question.name)=\(question.name.contains("mail") ? "reader@example.org" : "Reader")"] }
        let tested = try await CLI.run(["test", script, "--har", har, "--scenario", scenario.name, "--ssid", "Venue-Guest", "--secrets", secrets]
                                       + answers)
        let generated = (try? String(contentsOfFile: script, encoding: .utf8)) ?? ""
        #expect(tested.status == 0, "\(tested.output)\n\(tested.errors)\n\(imported.output)\n\(generated)")
        // Nothing written carries what the person typed or the portal's cookies and tokens.
        let written = (try String(contentsOfFile: script, encoding: .utf8)) + imported.output + imported.errors
        for secret in ["aroma-2026", "reader@example.org"] { #expect(!written.contains(secret), "\(secret) in what was written") }
    }

    /// `test`: one line per case, exit 1 when one failed, and JUnit XML that says which and why.
    @Test func testReportsEachCaseAndWritesJUnit() async throws {
        let directory = try CLI.temporaryDirectory()
        let junit = directory + "/report.xml"
        let run = try await CLI.run(["test", CLI.bundledScripts + "/click-through.lua", "--scenario", "click-through",
                                     "--scenario", "credentials", "--junit", junit])
        #expect(run.status == 1, "\(run.output)\n\(run.errors)")
        #expect(run.output.contains("PASS  \(CLI.bundledScripts)/click-through.lua against click-through"))
        #expect(run.output.contains("FAIL  \(CLI.bundledScripts)/click-through.lua against credentials: authenticate asked the person"))
        #expect(run.output.contains("1 of 2 passed"))
        let xml = try String(contentsOfFile: junit, encoding: .utf8)
        #expect(xml.contains(#"<testsuites name="hotspot-helper test" tests="2" failures="1">"#))
        #expect(xml.contains(#"name="credentials""#) && xml.contains("<failure message=\"authenticate asked the person (ui_required)"))
        let usage = try await CLI.run(["test", CLI.bundledScripts + "/click-through.lua"])
        #expect(usage.status == 2 && usage.errors.contains("--scenario NAME or --har FILE"))
    }
}
