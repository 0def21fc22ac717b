import ArgumentParser
import Foundation
import HotspotNetwork

struct ProbeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "probe",
        abstract: "Tells whether a network is open, captive or not connected.",
        discussion: """
            The probes run in parallel over --interface (default: the default route's), and the \
            verdict comes as soon as it is certain: connected when --threshold percent of them \
            pass, captive when a probe was redirected or intercepted (with the portal's URL when \
            one was given), not_connected otherwise. Without --url, the well-known Apple, Google \
            and Firefox endpoints are used; a URL of your own passes with 204, or with a 200 \
            whose body says "success".

            Example:
              hotspot-helper probe --interface wlan0
              hotspot-helper probe --url http://127.0.0.1:8080/generate_204

            Exit status: 0 when connected, 1 when captive or not connected, 2 for usage errors.
            """)

    @OptionGroup var network: NetworkOptions

    @Option(name: .customLong("url"), help: ArgumentHelp("A probe URL, replacing the defaults; repeatable.", valueName: "url"))
    var urls: [String] = []

    @Option(help: ArgumentHelp("The percentage of probes that must pass.", valueName: "percent"))
    var threshold = 75.0

    @Option(help: ArgumentHelp("Seconds each probe may take.", valueName: "seconds"))
    var timeout = 5.0

    @Flag(help: "Print the verdict as one JSON object.")
    var json = false

    func validate() throws {
        try NetworkOptions.validateProbeURLs(urls, flag: "--url")
        guard (1...100).contains(threshold) else { throw ValidationError("--threshold must be a percentage from 1 to 100") }
        guard timeout > 0 else { throw ValidationError("--timeout must be a positive number of seconds") }
    }

    func run() throws {
        let verdict = ConnectivityProbe.run(urls.map(Probe.init(url:)),
                                            binding: NetworkBinding(interface: network.interface, resolvers: network.resolvers),
                                            threshold: threshold / 100, timeout: .milliseconds(Int64(timeout * 1000)))
        if json {
            let object: [String: Any] = ["state": verdict.state.rawValue, "portal_url": verdict.portalURL ?? NSNull(),
                                         "details": verdict.details]
            let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
            print(String(decoding: data, as: UTF8.self))
        } else {
            print(verdict.state.rawValue + (verdict.portalURL.map { ": the portal is at \($0)" } ?? ""))
            verdict.details.forEach { print("  \($0)") }
        }
        if verdict.state != .connected { throw ExitCode(1) }
    }
}
