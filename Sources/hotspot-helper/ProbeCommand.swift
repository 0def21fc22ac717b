import ArgumentParser
import HotspotCommandLine
import FoundationEssentials
import HotspotCore
import HotspotNetwork
import ScriptLibraries

struct ProbeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "probe",
        abstract: "Tells whether a network is open, captive or not connected.",
        discussion: """
            The probes run in parallel over --interface (default: the default route's), and the \
            verdict comes as soon as it is certain: connected when --threshold percent of them \
            pass; captive when that can no longer be and a probe was redirected or intercepted \
            (with the portal's URL when one was given); partial when HTTP probes pass but every \
            HTTPS probe fails; connected_without_internet when the interface is up with a \
            carrier (its kind: wifi, ethernet or cellular); not_connected otherwise.

            Without --url, the well-known Apple, Google and Firefox endpoints are used. A probe \
            is a line: [METHOD] URL [+Name:value]... [EXPECTATION], the expectation one of \
            status=CODE, contains=TEXT, equals=TEXT, matches=REGEX (POSIX extended) or \
            header=Name:value; a bare URL passes with 204 when it ends in generate_204, else \
            with a 200 whose body says "success".

            Example:
              hotspot-helper probe --interface wlan0
              hotspot-helper probe --url http://127.0.0.1:8080/generate_204
              hotspot-helper probe --url 'http://nmcheck.gnome.org/check_network_status.txt header=X-NetworkManager-Status:online'
              hotspot-helper probe --watch --interval 30 --json

            Exit status: 0 when connected, 1 otherwise, 2 for usage errors. With --watch, a \
            line for every change until interrupted.
            """)

    @OptionGroup var network: NetworkOptions

    @Option(name: .customLong("url"), help: ArgumentHelp("A probe (a URL, or the line above), replacing the defaults; repeatable.", valueName: "probe"),
            transform: ProbeArgument.parse)
    var probes: [ProbeArgument] = []

    @Option(help: ArgumentHelp("The percentage of probes that must pass.", valueName: "percent"))
    var threshold = 75.0

    @Option(parsing: .unconditional, help: ArgumentHelp("Seconds each probe may take, 0.01 to 3600.", valueName: "seconds"),
            transform: Seconds.within(0.01...3600))
    var timeout = Seconds(5)

    @Flag(help: "Keep checking, and print every change of the verdict.")
    var watch = false

    @Option(parsing: .unconditional,
            help: ArgumentHelp("Seconds between checks with --watch, 0.01 to 86400 (sooner after connectivity is lost).", valueName: "seconds"),
            transform: Seconds.within(0.01...Seconds.day))
    var interval = Seconds(10)

    @Flag(help: "Print the verdict as one JSON object.")
    var json = false

    func validate() throws {
        guard (1...100).contains(threshold) else { throw ValidationError("--threshold must be a percentage from 1 to 100") }
    }

    func run() async throws {
        let set = ProbeSet(probes.map(\.probe), threshold: threshold / 100, timeout: timeout.duration)
        let binding = NetworkBinding(interface: network.interface, resolvers: network.resolvers)
        if watch {
            let monitor = ConnectivityMonitor(binding: binding, settings: .init(probes: set, interval: interval.duration),
                                              findPortalURL: WISPrLibrary.portalURL(in:))
            for await verdict in monitor.changes() { try show(verdict) }
            return
        }
        // The portal's URL from a WISPr message where a page has one, as `cmd:probe()` finds it.
        let verdict = await ConnectivityProbe.verdict(of: set, binding: binding, findPortalURL: WISPrLibrary.portalURL(in:))
        try show(verdict)
        if verdict.state != .connected { throw ExitCode(1) }
    }

    func show(_ verdict: ConnectivityVerdict) throws {
        var text: String
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            text = String(decoding: try encoder.encode(VerdictJSON(verdict: verdict)), as: UTF8.self)
        } else {
            text = verdict.state.rawValue
            if verdict.state == .connectedWithoutInternet, let kind = verdict.interfaceKind { text += " over \(kind.rawValue)" }
            // The portal's URL and the details quote what the network sent: escaped, so a
            // `Location` header cannot retitle or clear the terminal.
            if let portal = verdict.portalURL { text += ": the portal is at \(portal.escapingControlCharacters())" }
            text += verdict.details.map { "\n  \($0.escapingControlCharacters())" }.joined()
        }
        // Written at once, so a reader of --watch sees each verdict as it comes.
        writeUnbuffered(text + "\n")
    }
}

/// The verdict as `--json` prints it: every key, null where there is no value.
private struct VerdictJSON: Encodable {
    let verdict: ConnectivityVerdict

    enum CodingKeys: String, CodingKey {
        case state, details
        case portalURL = "portal_url", portalURLSource = "portal_url_source", interfaceKind = "interface_kind"
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(verdict.state.rawValue, forKey: .state)
        try container.encode(verdict.portalURL, forKey: .portalURL)
        try container.encode(verdict.portalURLSource?.rawValue, forKey: .portalURLSource)
        try container.encode(verdict.interfaceKind?.rawValue, forKey: .interfaceKind)
        try container.encode(verdict.details, forKey: .details)
    }
}
