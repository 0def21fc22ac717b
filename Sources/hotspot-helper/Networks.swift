import ArgumentParser
import HotspotCommandLine
import FoundationEssentials
import HotspotNetwork
import HotspotRuntime
import HotspotCore
import LinuxFiles
import NetworkSources
import JSON
import Locking

struct Networks: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "networks",
        abstract: "Shows which helper claims which network of a scan list.",
        discussion: """
            Runs filter_scan_list of every script over the scan list and prints each network \
            with the helper that claims it (by display name) and whether it supplies a password. \
            The scan list is a JSON array of networks, as scripts see them:

              [{"ssid": "Aroma-Guest", "bssid": "02:00:00:00:00:01", "signal_strength": 0.8, "is_secure": false}]

            Only "ssid" is required. With --source networkmanager (or networkmanager:IFACE), the \
            scan list is NetworkManager's Wi-Fi access points instead, read from the system bus \
            (DBUS_SYSTEM_BUS_ADDRESS, else the standard one). With --watch, the scan list is read \
            and filtered again every 5 seconds (as a watched scan list is), and the table \
            printed when it changes.

            A network that a script's `networks` declares by SSID or BSSID gets a DECLARED \
            column: the script evaluate would choose without running any code, and the entry \
            that matched. Declared portal hosts and gateway families match only at a join, once \
            its probe has found the portal, so a scan list shows none.

            Exit status: 0, 1 when NetworkManager gives no scan list within 5 seconds, or 2 for \
            usage errors, an unreadable scan list and scripts that fail to load.
            """)

    @Option(name: .long, help: ArgumentHelp("A venue script, or a directory of *.lua scripts.", valueName: "path"))
    var scripts = "VenueHelpers"

    @Option(name: .customLong("scan-list"), help: ArgumentHelp("The scan list, a JSON file.", valueName: "file"))
    var scanList: String?

    @Option(name: .customLong("source"),
            help: ArgumentHelp("Where the scan list comes from instead: NetworkManager's Wi-Fi access points.", valueName: "networkmanager[:IFACE]"),
            transform: { text in
                do throws(NetworkSourceError) { return try NetworkSourceArgument.parse(text) } catch { throw ValidationError(error.description) }
            })
    var source: NetworkSourceArgument?

    @Option(help: ArgumentHelp("Venue credentials for cmd:secret: one [helper] section each, mode 0600.", valueName: "file"))
    var secrets: String?

    @Flag(help: "Filter the scan list again every 5 seconds until interrupted.")
    var watch = false

    func validate() throws {
        switch (scanList, source) {
        case (nil, nil): throw ValidationError("give --scan-list FILE or --source networkmanager")
        case (.some, .some): throw ValidationError("give --scan-list or --source, not both")
        case (nil, let source?) where !source.sameManager(as: .networkManager(interface: nil)):
            throw ValidationError("--source: only networkmanager (or networkmanager:IFACE) lists networks in range")
        default: break
        }
    }

    func run() async throws {
        let output = EventOutput(json: false)
        let first: [NetworkDescription]
        let current: @Sendable () async -> [NetworkDescription]
        var following: NetworkManagerScanList?
        if case .networkManager(let interface)? = source {
            let scanned = NetworkManagerScanList(interface: interface, output: output)
            guard let list = await scanned.first(within: watch ? nil : .seconds(5)) else {
                output.fail("NetworkManager gave no scan list within 5 seconds")
                throw ExitCode(1)
            }
            (first, current, following) = (list, { scanned.latest }, scanned)
        } else {
            let path = scanList ?? ""
            let list = try readScanList(path, output)
            (first, current) = (list, { (try? readScanList(path, nil)) ?? list })
        }
        defer { following?.stop() }
        let loaded = try await LoadedHelpers.load(scripts, output: output)
        defer { loaded.engine.shutdown() }
        let loadedSecrets = try LoadedHelpers.secrets(at: secrets, output: output)
        // Only failures are worth showing here; the table says the rest.
        let runtime = HotspotRuntime(engine: loaded.engine, helpers: loaded.helpers, persistence: try StateDirectory(path: nil),
                                     configuration: .init(secrets: loadedSecrets)) { event in
            if case .command(let answered) = event, answered.result == .failure { output.write(event) }
        }
        guard watch else {
            output.line(table(first, await runtime.filterScanList(first), declared: await declarations(first, runtime)))
            return
        }
        var shown: String?
        for await claims in runtime.watchScanList(scanList: current) {
            let networks = await current()
            let text = table(networks, claims, declared: await declarations(networks, runtime))
            if text != shown { output.line(text + "\n") }
            shown = text
        }
    }

    /// For each network, the helper whose declaration matches it and how; nil where none does.
    func declarations(_ networks: [NetworkDescription], _ runtime: HotspotRuntime) async -> [String?] {
        var declared: [String?] = []
        for network in networks {
            declared.append(await runtime.declaredHelper(for: network).map { "\($0.helper.displayName) (\($0.helper.id)): \($0.match)" })
        }
        return declared
    }

    func table(_ networks: [NetworkDescription], _ claims: [NetworkClaim], declared: [String?]) -> String {
        // An SSID with a newline or an escape sequence would forge a line or repaint the terminal.
        let names = networks.map { $0.ssid.escapingControlCharacters() }
        let width = max(4, names.map(\.count).max() ?? 0)
        let helpers = networks.map { network in
            let claim = claims.first { $0.ssid.utf8.elementsEqual(network.ssid.utf8) && ($0.bssid == nil || $0.bssid == network.bssid) }
            return (claim.map { "\($0.displayName) (\($0.helper))" + ($0.password == nil ? "" : ", password supplied") } ?? "-")
                .escapingControlCharacters()
        }
        // The column only when a declaration matched, as most scripts evaluate.
        let helperWidth = declared.contains { $0 != nil } ? max(6, helpers.map(\.count).max() ?? 0) + 2 : 0
        func row(_ name: String, _ helper: String, _ declared: String?) -> String {
            helperWidth == 0 ? name.padded(to: width + 2) + helper
                : name.padded(to: width + 2) + helper.padded(to: helperWidth) + (declared ?? "-").escapingControlCharacters()
        }
        var lines = [row("SSID", "HELPER", "DECLARED")]
        for (index, name) in names.enumerated() {
            lines.append(row(name, helpers[index], declared[index]))
        }
        return lines.joined(separator: "\n")
    }

    /// The scan list, or (with an output to report to) exit 2 saying what is wrong with it.
    func readScanList(_ scanList: String, _ output: EventOutput?) throws -> [NetworkDescription] {
        func fail(_ problem: String) -> any Error {
            output?.fail("--scan-list \(scanList): \(problem)")
            return ExitCode(2)
        }
        let bytes: [UInt8]
        do {
            // A scan list of a thousand access points is about 200 KiB.
            bytes = try BoundedFile.read(scanList, limit: 4 * BoundedFile.mebibyte)
        } catch {
            throw fail("\(error)")
        }
        let document: JSONValue
        do {
            document = try JSONValue.parse(bytes, maximumDepth: 16)
        } catch {
            throw fail("not JSON: \(error)")
        }
        guard case .array(let entries) = document else { throw fail("not a JSON array of networks") }
        return try entries.enumerated().map { index, entry in
            guard case .string(let ssid)? = entry["ssid"], !ssid.isEmpty else {
                throw fail("network \(index + 1) has no \"ssid\" string")
            }
            // 802.11 gives an SSID at most 32 bytes; a longer one is no network's.
            guard ssid.count <= 32 else {
                throw fail("network \(index + 1)'s \"ssid\" is \(ssid.count) bytes; an SSID has at most 32")
            }
            let bssid: [UInt8] = if case .string(let bytes)? = entry["bssid"] { bytes } else { [] }
            let signalStrength: Double = switch entry["signal_strength"] {
            case .number(let value)?: value
            case .integer(let value)?: Double(value)
            default: 1
            }
            let isSecure = if case .boolean(let flag)? = entry["is_secure"] { flag } else { false }
            // Written as NetworkManager's SSIDs are: two SSIDs that are not UTF-8 stay two.
            return NetworkDescription(ssid: String.ssid(ssid).text, bssid: String(decoding: bssid, as: UTF8.self),
                                      signalStrength: signalStrength, isSecure: isSecure)
        }
    }
}

/// NetworkManager's Wi-Fi access points, followed as they change.
private final class NetworkManagerScanList: Sendable {
    private struct State {
        var latest: [NetworkDescription]?
        /// Waiting for the first list.
        var waiting: CheckedContinuation<[NetworkDescription]?, Never>?
    }

    private let source: NetworkManagerSource
    private let state = PlainLock(State())

    init(interface: String?, output: EventOutput) {
        source = NetworkManagerSource(interface: interface, isSecretAgent: false)
        let events = source.start()
        Task {
            for await event in events {
                switch event {
                case .scanList(let list):
                    self.state.withLock { state in
                        state.latest = list
                        return state.waiting.take()
                    }?.resume(returning: list)
                case .note(let level, let message) where level == .warn || level == .error:
                    output.write(.log(level, message))
                default:
                    break
                }
            }
            self.state.withLock { $0.waiting.take() }?.resume(returning: nil)  // stopped before any came
        }
    }

    var latest: [NetworkDescription] { state.withLock { $0.latest ?? [] } }

    /// The first scan list; nil when none came within `timeout` (nil: as long as it takes).
    func first(within timeout: Duration?) async -> [NetworkDescription]? {
        let source = source
        let giveUp = timeout.map { timeout in Task { try? await Task.sleep(for: timeout); if !Task.isCancelled { source.stop() } } }
        defer { giveUp?.cancel() }
        return await withCheckedContinuation { continuation in
            let arrived: [NetworkDescription]? = state.withLock { state in
                if state.latest == nil { state.waiting = continuation }
                return state.latest
            }
            if let arrived { continuation.resume(returning: arrived) }
        }
    }

    func stop() { source.stop() }
}
