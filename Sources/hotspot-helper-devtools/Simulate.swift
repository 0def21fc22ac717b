#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import HotspotCommandLine
import FoundationEssentials
import PortalRecording
import PortalSimulator

struct Simulate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: DevTools.simulateAbstract,
        discussion: """
            Each scenario is a real HTTP server on its own port with per-client sessions (keyed \
            by the client's IP address): its probe URLs (/generate_204, /hotspot-detect.html) \
            answer 204 or 200 once the client is logged in and a 302 to the login page before, \
            and /logout ends the session. Without --scenario every scenario runs, on \
            consecutive ports from --port. With --dns-port a DNS responder answers every A \
            query with the listening address, so scripts can use names such as \
            portal.aroma.example. Each request is logged on standard error. Runs until \
            interrupted (SIGINT or SIGTERM), then stops cleanly.

            With --har, a browser's recording of one portal login (`hotspot-helper har \
            import` describes what it finds in one) is served instead, on a port of its own: \
            its probe captive until the recorded steps were sent and open after, every other \
            request answered as recorded. The tokens and cookies the recorded pages handed \
            out are fresh for each client, so a submission passes with the values of the page \
            served, never the recording's; what the person typed may be any value of its \
            kind. A refused submission answers 400 with, in its page and on standard error, \
            what differed.

            Example:
              hotspot-helper simulate --scenario credentials --port 8080 --dns-port 5353
              curl -i http://127.0.0.1:8080/generate_204
              dig @127.0.0.1 -p 5353 portal.aroma.example
              hotspot-helper simulate --har login.har --port 8080 --dns-port 5353

            Exit status: 0 after a clean stop, 1 when a server cannot start, 2 for usage \
            errors such as an unknown scenario. See docs/SIMULATOR.md for every scenario.
            """)

    @Option(help: ArgumentHelp("The scenario to run (default: all of them, or none with --har).", valueName: "name"))
    var scenario: String?

    @Option(name: .customLong("har"), help: ArgumentHelp("Replay the portal login recorded in this HAR file; repeatable.", valueName: "file"))
    var recordings: [String] = []

    @Option(help: ArgumentHelp("The address to listen on.", valueName: "address"))
    var host = "127.0.0.1"

    @Option(help: ArgumentHelp("The HTTP port of the first scenario; 0 picks free ports.", valueName: "port"))
    var port = 8080

    @Option(name: .customLong("dns-port"), help: ArgumentHelp("Also answer DNS on this UDP port; 0 picks a free one.", valueName: "port"))
    var dnsPort: Int?

    @Flag(help: "Print the scenarios and what each does, and exit.")
    var list = false

    func validate() throws {
        if let scenario, Scenario.named(scenario) == nil {
            throw ValidationError(
                "unknown scenario \"\(scenario)\"; the scenarios are: \(Scenario.all.map(\.name).joined(separator: ", "))")
        }
        let count = scenarios.count + recordings.count
        guard port == 0 || (1...65536 - count).contains(port) else {
            throw ValidationError("--port must be 0, or leave room for \(count) consecutive ports below 65536")
        }
        if let dnsPort, !(0...65535).contains(dnsPort) {
            throw ValidationError("--dns-port must be between 0 and 65535")
        }
    }

    func run() async throws {
        if list {
            let width = Scenario.all.map(\.name.count).max() ?? 0
            for scenario in Scenario.all {
                print(scenario.name.padded(to: width + 2) + scenario.summary)
            }
            return
        }
        var logins: [PortalLogin] = []
        for file in recordings {
            do {
                logins.append(try PortalLogin.read(file))
            } catch {
                Self.writeError("cannot replay \(error)")
                throw ExitCode(1)
            }
        }
        let termination = SignalEvents([SIGINT, SIGTERM])
        var portals: [SimulatedPortal] = []
        var dns: DNSResponder?
        var starting = ""
        do {
            for (index, scenario) in scenarios.enumerated() {
                starting = scenario.name
                portals.append(try await SimulatedPortal.start(
                    scenario, host: host, port: port == 0 ? 0 : port + index, requestLog: { Self.writeError($0) }))
            }
            for (index, login) in logins.enumerated() {
                starting = "the replay of \(login.source)"
                portals.append(try await SimulatedPortal.start(
                    replaying: login, host: host, port: port == 0 ? 0 : port + scenarios.count + index, requestLog: { Self.writeError($0) }))
            }
            starting = "the DNS responder"
            if let dnsPort { dns = try await DNSResponder.start(host: host, port: dnsPort) }
        } catch {
            await stop(portals, dns)
            Self.writeError("cannot start \(starting): \(error)")
            throw ExitCode(1)
        }
        let width = portals.map(\.scenario.name.count).max() ?? 0
        for portal in portals {
            Self.writeOutput(portal.scenario.name.padded(to: width + 2) + portal.url)
        }
        if let dns {
            Self.writeOutput(
                "dns".padded(to: width + 2) + "udp://\(host):\(dns.port) answers \(dns.answer)")
        }
        for await _ in termination.received { break }
        await stop(portals, dns)
    }

    /// The scenarios to run: the one named, else all of them unless recordings are replayed.
    private var scenarios: [Scenario] {
        scenario.flatMap(Scenario.named).map { [$0] } ?? (recordings.isEmpty ? Scenario.all : [])
    }

    private func stop(_ portals: [SimulatedPortal], _ dns: DNSResponder?) async {
        await withTaskGroup(of: Void.self) { group in
            for portal in portals { group.addTask { await portal.stop() } }
            if let dns { group.addTask { await dns.stop() } }
        }
    }

    /// Written at once, unbuffered: whoever started the simulator reads the URLs as they come.
    private static func writeOutput(_ line: String) {
        writeUnbuffered(line + "\n")
    }

    private static func writeError(_ line: String) {
        writeUnbuffered(line + "\n", to: STDERR_FILENO)
    }
}
