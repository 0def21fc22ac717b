import ArgumentParser
import Foundation
import HotspotNetwork
import HotspotRuntime
import LuaSandbox

struct Connect: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Joins one network once with every script as a helper, and reports how it went.",
        discussion: """
            The state machine runs: evaluate goes to every helper, the winner authenticates, \
            and the network is kept --stay seconds with maintain every --maintain-interval. \
            With the same --state-dir, a second run uses the cached helper (no evaluate; \
            maintain with did_just_join).

            Exit status: 0 when the network is authenticated at the end, 1 when it is not, \
            2 for usage errors and scripts that fail to load.
            """)

    @Option(name: .long, help: ArgumentHelp("A venue script, or a directory of *.lua scripts.", valueName: "path"))
    var scripts: String

    @Option(help: "The network's SSID.")
    var ssid = "hotspot-helper"

    @Option(help: "The network's BSSID.")
    var bssid = ""

    @Option(help: ArgumentHelp("Signal strength, 0.0 to 1.0.", valueName: "0.0-1.0"))
    var signal = 1.0

    @Flag(help: "The network is secured (WPA).")
    var secure = false

    @Option(help: ArgumentHelp("The interface the network's traffic leaves by (default: the default route's).", valueName: "iface"))
    var interface: String?

    @Option(name: .customLong("resolver"),
            help: ArgumentHelp("The network's DNS resolver, asked through --interface; repeatable (default: the system's).",
                               valueName: "address[:port]"))
    var resolvers: [String] = []

    @Option(name: .customLong("probe-url"),
            help: ArgumentHelp("A connectivity probe for cmd:probe(), replacing the defaults; repeatable. Open means 204, or 200 saying \"success\".",
                               valueName: "url"))
    var probeURLs: [String] = []

    @Option(help: ArgumentHelp("Venue credentials for cmd:secret: one [helper] section each, mode 0600.", valueName: "file"))
    var secrets: String?

    @Option(name: .customLong("ca-file"), help: ArgumentHelp("Extra trusted CA certificates (PEM) for portals' HTTPS.", valueName: "file"))
    var caFile: String?

    @Option(name: .customLong("state-dir"),
            help: ArgumentHelp("Where the chosen helper, exclusions and cmd.store are kept (default: nothing is kept).", valueName: "dir"))
    var stateDirectory: String?

    @Option(help: ArgumentHelp("Deadline of each command in seconds (present_ui has none).", valueName: "seconds"))
    var deadline = 45.0

    @Option(name: .customLong("maintain-interval"), help: ArgumentHelp("Seconds between maintain commands.", valueName: "seconds"))
    var maintainInterval = 300.0

    @Option(help: ArgumentHelp("Seconds to keep the network after joining.", valueName: "seconds"))
    var stay = 0.0

    @Flag(help: "Write JSON lines to standard output, and nothing else.")
    var json = false

    func validate() throws {
        guard (0...1).contains(signal) else { throw ValidationError("--signal must be between 0.0 and 1.0, not \(signal)") }
        guard deadline > 0 else { throw ValidationError("--deadline must be a positive number of seconds") }
        guard maintainInterval > 0 else { throw ValidationError("--maintain-interval must be a positive number of seconds") }
        guard stay >= 0 else { throw ValidationError("--stay must be 0 or more seconds") }
        for resolver in resolvers where !NetworkBinding.isResolverAddress(resolver) {
            throw ValidationError("--resolver \(resolver) is not an IPv4 address with an optional port, such as 192.0.2.53 or 127.0.0.1:5353")
        }
        for url in probeURLs where !(url.hasPrefix("http://") || url.hasPrefix("https://")) {
            throw ValidationError("--probe-url \(url) is not an http:// or https:// URL")
        }
        if let interface, if_nametoindex(interface) == 0 {
            throw ValidationError("--interface \(interface): no such network interface (see `ip link`)")
        }
    }

    func run() async throws {
        let output = EventOutput(json: json)
        let engine: LuaEngine
        do {
            engine = try LuaEngine(HotspotRuntime.engineConfiguration())
        } catch {
            output.fail("cannot start the script engine: \(error)")
            throw ExitCode(2)
        }
        defer { engine.shutdown() }
        let (helpers, problems) = await HotspotRuntime.loadHelpers(at: scripts, into: engine)
        guard problems.isEmpty else {
            problems.forEach { output.fail($0.description) }
            output.fail("fix the script\(problems.count == 1 ? "" : "s") above; `hotspot-helper check` lists every problem")
            throw ExitCode(2)
        }
        let persistence: StateDirectory
        var loadedSecrets = Secrets()
        do {
            persistence = try StateDirectory(path: stateDirectory)
            if let secrets { loadedSecrets = try Secrets.load(path: secrets) }
        } catch {
            output.fail("\(error)")
            throw ExitCode(2)
        }
        let runtime = HotspotRuntime(
            engine: engine, helpers: helpers, persistence: persistence,
            configuration: .init(commandDeadline: .seconds(deadline), maintainInterval: .seconds(maintainInterval),
                                 secrets: loadedSecrets, caFile: caFile),
            events: output.write)
        let network = NetworkDescription(ssid: ssid, bssid: bssid, signalStrength: signal, isSecure: secure,
                                         interface: interface, resolvers: resolvers, probeURLs: probeURLs)
        await runtime.join(network)
        if stay > 0 { try? await Task.sleep(for: .seconds(stay)) }
        let state = await runtime.state(of: ssid)
        output.write(HotspotEvent(event: .done, network: ssid, helper: await runtime.chosenHelper(of: ssid), state: state))
        if state != .authenticated { throw ExitCode(1) }
    }
}
