import Foundation
import Testing
import TestSupport

/// `hotspot-helper simulate` as a separate process, the way an operator runs it.
final class SimulatorProcess: Sendable {
    let process: Process
    let url: String
    /// `ADDRESS:PORT` of its DNS responder, when started with one.
    let dns: String?
    private let errors: Pipe

    init(scenario: String, dns withDNS: Bool = false) throws {
        let (process, output, errors) = try CLI.start(["simulate", "--scenario", scenario, "--port", "0"]
                                                          + (withDNS ? ["--dns-port", "0"] : []))
        self.process = process
        self.errors = errors
        var text = ""
        while text.count(where: { $0 == "\n" }) < (withDNS ? 2 : 1) {
            let chunk = output.fileHandleForReading.availableData
            guard !chunk.isEmpty else { break }
            text += String(decoding: chunk, as: UTF8.self)
        }
        // "click-through  http://127.0.0.1:PORT/", then "dns  udp://127.0.0.1:PORT answers 127.0.0.1"
        let lines = text.split(separator: "\n").map { $0.split(separator: " ") }
        url = lines.first?.last.map(String.init) ?? ""
        dns = lines.dropFirst().first { $0.first == "dns" }.flatMap { $0.dropFirst().first }.map { String($0.dropFirst("udp://".count)) }
    }

    /// Stops the simulator and returns its request log, one `scenario: client METHOD path -> status` line each.
    func stop() -> [String] {
        process.terminate()
        let log = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: log, as: UTF8.self).split(separator: "\n").map(String.init)
    }

    deinit {
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
    }
}

@Suite("hotspot-helper probe")
struct ProbeTests {
    @Test func captiveThenConnectedAfterTheLogin() async throws {
        let simulator = try await onOwnThread { try SimulatorProcess(scenario: "click-through") }
        #expect(simulator.url.hasPrefix("http://127.0.0.1:"))
        let probeURL = simulator.url + "generate_204"
        let captive = try await CLI.run(["probe", "--url", probeURL])
        #expect(captive.status == 1)
        #expect(captive.output.hasPrefix("captive: the portal is at \(simulator.url)login"))

        let login = try await CLI.run(["-s", "-o", "/dev/null", "-w", "%{http_code}", "-d", "accept_terms=yes", simulator.url + "login"],
                                      executable: "/usr/bin/curl")
        #expect(login.output == "200")
        let open = try await CLI.run(["probe", "--url", probeURL, "--json"])
        #expect(open.status == 0)
        #expect(open.events.first?.state == "connected")
    }

    /// On a WISPr gateway's page the portal is its LoginURL, as `cmd:probe()` says, not the
    /// redirect's Location.
    @Test func aWISPrPageNamesThePortalByItsLoginURL() async throws {
        let simulator = try await onOwnThread { try SimulatorProcess(scenario: "wispr") }
        let captive = try await CLI.run(["probe", "--url", simulator.url + "generate_204", "--json"])
        #expect(captive.status == 1)
        #expect(captive.events.first?.portalURLSource == "wispr", "\(captive.output)")
    }

    @Test func watchPrintsEveryChange() async throws {
        let simulator = try await onOwnThread { try SimulatorProcess(scenario: "click-through") }
        let (process, output, _) = try CLI.start(["probe", "--url", simulator.url + "generate_204", "--watch", "--interval", "0.2", "--json"])
        defer { process.terminate() }
        let seen = try await onOwnThread {
            var text = ""
            var loggedIn = false
            while !text.contains(#""state":"connected""#) {
                let chunk = output.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                text += String(decoding: chunk, as: UTF8.self)
                if !loggedIn, text.contains(#""state":"captive""#) {
                    let curl = Process()
                    curl.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
                    curl.arguments = ["-s", "-o", "/dev/null", "-d", "accept_terms=yes", simulator.url + "login"]
                    try curl.run()
                    curl.waitUntilExit()
                    loggedIn = true
                }
            }
            return text
        }
        let states = EventLine.lines(in: seen).compactMap(\.state)
        #expect(states == ["determining", "captive", "connected"])
    }

    @Test func nothingAnsweringOverALinkThatIsUpIsConnectedWithoutInternet() async throws {
        let run = try await CLI.run(["probe", "--interface", "lo", "--url", "http://127.0.0.1:1/generate_204", "--json"])
        #expect(run.status == 1)
        #expect(run.events.first?.state == "connected_without_internet")
        #expect(run.events.first?.interfaceKind == "loopback")
        let details = run.events.first?.details ?? []
        #expect(details.first?.contains("connect: 127.0.0.1: Connection refused") == true)
    }

    @Test func usageErrors() async throws {
        let run = try await CLI.run(["probe", "--url", "ftp://example.org/"])
        #expect(run.status == 2)
        #expect(run.errors.contains("The value 'ftp://example.org/' is invalid for '--url <probe>': 'ftp://example.org/' is not an http:// or https:// URL with a host"))
        let expectation = try await CLI.run(["probe", "--url", "http://127.0.0.1/ matches=(open"])
        #expect(expectation.status == 2)
        #expect(expectation.errors.contains("The value 'http://127.0.0.1/ matches=(open' is invalid for '--url <probe>': matches=(open: "))
        let interface = try await CLI.run(["probe", "--interface", "no-such-if0"])
        #expect(interface.status == 2)
        #expect(interface.errors.contains("no such network interface"))
    }
}
