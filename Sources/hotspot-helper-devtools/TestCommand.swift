import ArgumentParser
import FoundationEssentials
import HotspotCommandLine
import HotspotCore
import HotspotRuntime
import PortalRecording
import PortalSimulator

/// `test SCRIPT... --scenario NAME... --har FILE...`: each script's lifecycle against each
/// portal, with the outcome checked, for an operator's CI.
struct TestScripts: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "test",
        abstract: DevTools.testAbstract,
        discussion: """
            Each case joins a network with one script as its only helper, against one portal: \
            a simulator scenario (--scenario) or a recorded login replayed (--har, as \
            `simulate --har` serves it). A case passes when the script claims the network, \
            logs in (after present_ui with the --answer values when it asks the person), \
            maintain keeps the session, and logoff, when the script has one, succeeds. Each \
            case's timeline is printed, then one line per case, PASS or FAIL and why.

            Examples:
              hotspot-helper test aroma.lua --har login.har --ssid Aroma-Guest --secrets secrets.ini
              hotspot-helper test VenueHelpers/click-through.lua --scenario click-through --scenario opennds --junit report.xml

            Exit status: 0 when every case passed, 1 when one failed, 2 for usage errors and \
            a script that does not load or a recording that cannot be read.
            """)

    @Argument(help: ArgumentHelp("Venue scripts.", valueName: "script"))
    var scripts: [String]

    @Option(name: .customLong("scenario"), help: ArgumentHelp("A simulator scenario to run every script against; repeatable.", valueName: "name"))
    var scenarios: [String] = []

    @Option(name: .customLong("har"), help: ArgumentHelp("A recorded login to replay and run every script against; repeatable.", valueName: "file"))
    var recordings: [String] = []

    @Option(help: "The SSID of the network the scripts are given.")
    var ssid = "hotspot-helper-test"

    @Option(help: ArgumentHelp("Also write the results as JUnit XML to this file.", valueName: "file"))
    var junit: String?

    @OptionGroup var network: NetworkOptions

    @OptionGroup var runtimeOptions: RuntimeOptions

    @OptionGroup var answerOptions: AnswerOptions

    func validate() throws {
        guard !scenarios.isEmpty || !recordings.isEmpty else {
            throw ValidationError("give the portals to test against: --scenario NAME or --har FILE, each repeatable")
        }
        for scenario in scenarios where Scenario.named(scenario) == nil {
            throw ValidationError("--scenario \(scenario): no such scenario; the scenarios are \(Scenario.all.map(\.name).joined(separator: ", "))")
        }
    }

    /// One script against one portal, and what went wrong, if anything.
    struct Case {
        let script: String
        let portal: String
        let failures: [String]
        let seconds: Double
    }

    func run() async throws {
        let output = EventOutput(json: false)
        var configuration = try runtimeOptions.configuration(maintainInterval: .seconds(3600), output: output)
        configuration.policy.verifyAuthentication = true
        let answers = try answerOptions.answers()
        var logins: [PortalLogin] = []
        for file in recordings {
            do {
                logins.append(try PortalLogin.read(file))
            } catch {
                output.fail("\(error)")
                throw ExitCode(2)
            }
        }
        let engine = try LoadedHelpers.engine(workers: runtimeOptions.workers, output: output)
        defer { engine.shutdown() }
        var cases: [Case] = []
        for script in scripts {
            let catalog = HelperCatalog(path: script, engine: engine, retirementDelay: configuration.policy.commandDeadline)
            let loaded = await catalog.refresh()
            guard let helper = await catalog.helpers.first else {
                LoadedHelpers.report(loaded.problems, output: output)
                throw ExitCode(2)
            }
            let portals: [(name: String, scenario: Scenario?, login: PortalLogin?)] =
                scenarios.compactMap(Scenario.named).map { ($0.name, $0, nil) } + logins.map { ("har:" + $0.source, nil, $0) }
            for portal in portals {
                var caseConfiguration = configuration
                caseConfiguration.allowsPlainHTTPCaptivePortalAPI = portal.scenario == .capport
                let session = DevSession(
                    engine: engine, output: output, progress: ProgressLine(enabled: false), configuration: caseConfiguration, answers: answers,
                    ssid: ssid, scenario: portal.scenario, portalURL: nil, recording: portal.login, network: network)
                let started = ContinuousClock.now
                let failures: [String]
                do {
                    failures = Self.failures(of: try await session.run(helper), answers: answers)
                } catch {
                    failures = ["the portal did not start: \(error)"]
                }
                await session.stop()
                cases.append(Case(script: script, portal: portal.name, failures: failures,
                                  seconds: Double((ContinuousClock.now - started) / .milliseconds(1)) / 1000))
            }
        }
        for item in cases {
            output.line((item.failures.isEmpty ? "PASS  " : "FAIL  ") + "\(item.script) against \(item.portal)"
                + (item.failures.isEmpty ? "" : ": " + item.failures.joined(separator: "; ")))
        }
        let failed = cases.filter { !$0.failures.isEmpty }.count
        output.line("\(cases.count - failed) of \(cases.count) passed")
        if let junit {
            do {
                try Data(Self.junitXML(cases).utf8).write(to: URL(fileURLWithPath: junit), options: .atomic)
            } catch {
                output.fail("cannot write \(junit): \(error)")
                throw ExitCode(2)
            }
        }
        if failed > 0 { throw ExitCode(1) }
    }

    /// What a run did that a working script does not.
    static func failures(of run: DevRun, answers: [String: String]) -> [String] {
        var failures: [String] = []
        let results = { (command: HotspotCommand) in run.commands.filter { $0.command == command } }
        if run.claimedBy == nil { failures.append("evaluate did not claim the network (give the SSID it expects with --ssid)") }
        if run.askedPerson, answers.isEmpty {
            failures.append("authenticate asked the person (ui_required); give what they would enter with --answer name=value")
        }
        if run.reached != .authenticated {
            let last = (results(.presentUI) + results(.authenticate)).last
            failures.append("the login ended \(run.reached.rawValue)" + (last.map { ": \($0.command.rawValue) answered \($0.result.rawValue)" } ?? "")
                + (last?.error.map { " (\($0))" } ?? ""))
        } else {
            if let maintain = results(.maintain).last, maintain.result != .success {
                failures.append("maintain answered \(maintain.result.rawValue)")
            }
            if let logoff = results(.logoff).last, logoff.result != .success, logoff.result != .commandNotRecognized {
                failures.append("logoff answered \(logoff.result.rawValue)")
            }
        }
        return failures
    }

    /// The cases as JUnit XML, one test suite per script, as CI systems read it.
    static func junitXML(_ cases: [Case]) -> String {
        func escape(_ text: String) -> String {
            text.replacing("&", with: "&amp;").replacing("<", with: "&lt;").replacing(">", with: "&gt;").replacing("\"", with: "&quot;")
        }
        var xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        let failures = cases.filter { !$0.failures.isEmpty }.count
        xml += "<testsuites name=\"hotspot-helper test\" tests=\"\(cases.count)\" failures=\"\(failures)\">\n"
        var scripts: [String] = []
        for item in cases where !scripts.contains(item.script) { scripts.append(item.script) }
        for script in scripts {
            let own = cases.filter { $0.script == script }
            xml += "  <testsuite name=\"\(escape(script))\" tests=\"\(own.count)\" failures=\"\(own.filter { !$0.failures.isEmpty }.count)\">\n"
            for item in own {
                xml += "    <testcase classname=\"\(escape(script))\" name=\"\(escape(item.portal))\" time=\"\(item.seconds)\""
                if item.failures.isEmpty {
                    xml += "/>\n"
                } else {
                    let message = item.failures.joined(separator: "; ")
                    xml += ">\n      <failure message=\"\(escape(message))\">\(escape(message))</failure>\n    </testcase>\n"
                }
            }
            xml += "  </testsuite>\n"
        }
        return xml + "</testsuites>\n"
    }
}
