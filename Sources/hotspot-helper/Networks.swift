import ArgumentParser
import HotspotCommandLine
import FoundationEssentials
import HotspotNetwork
import HotspotRuntime
import HotspotCore
import HotspotSystem

struct Networks: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "networks",
        abstract: "Shows which helper claims which network of a scan list.",
        discussion: """
            Runs filter_scan_list of every script over the scan list and prints each network \
            with the helper that claims it (by display name) and whether it supplies a password. \
            The scan list is a JSON array of networks, as scripts see them:

              [{"ssid": "Aroma-Guest", "bssid": "02:00:00:00:00:01", "signal_strength": 0.8, "is_secure": false}]

            Only "ssid" is required. With --watch, the scan list is read and filtered again \
            every 5 seconds (as a watched scan list is), and the table printed when it changes.

            Exit status: 0, or 2 for usage errors, an unreadable scan list and scripts that fail to load.
            """)

    @Option(name: .long, help: ArgumentHelp("A venue script, or a directory of *.lua scripts.", valueName: "path"))
    var scripts = "Scripts"

    @Option(name: .customLong("scan-list"), help: ArgumentHelp("The scan list, a JSON file.", valueName: "file"))
    var scanList: String

    @Option(help: ArgumentHelp("Venue credentials for cmd:secret: one [helper] section each, mode 0600.", valueName: "file"))
    var secrets: String?

    @Flag(help: "Filter the scan list again every 5 seconds until interrupted.")
    var watch = false

    func run() async throws {
        let output = EventOutput(json: false)
        var networks = try readScanList(output)
        let loaded = try await LoadedHelpers.load(scripts, output: output)
        defer { loaded.engine.shutdown() }
        let loadedSecrets = try LoadedHelpers.secrets(at: secrets, output: output)
        // Only failures are worth showing here; the table says the rest.
        let runtime = HotspotRuntime(engine: loaded.engine, helpers: loaded.helpers, persistence: try StateDirectory(path: nil),
                                     configuration: .init(secrets: loadedSecrets)) { event in
            if case .command(let answered) = event, answered.result == .failure { output.write(event) }
        }
        guard watch else {
            output.line(table(networks, await runtime.filterScanList(networks)))
            return
        }
        var shown: String?
        let first = networks
        for await claims in runtime.watchScanList(scanList: { (try? readScanList(nil)) ?? first }) {
            networks = (try? readScanList(nil)) ?? networks
            let text = table(networks, claims)
            if text != shown { output.line(text + "\n") }
            shown = text
        }
    }

    func table(_ networks: [NetworkDescription], _ claims: [NetworkClaim]) -> String {
        let width = max(4, networks.map(\.ssid.count).max() ?? 0)
        var lines = ["SSID".padded(to: width + 2) + "HELPER"]
        for network in networks {
            let claim = claims.first { $0.ssid == network.ssid && ($0.bssid == nil || $0.bssid == network.bssid) }
            let helper = claim.map { "\($0.displayName) (\($0.helper))" + ($0.password == nil ? "" : ", password supplied") } ?? "-"
            lines.append(network.ssid.padded(to: width + 2) + helper)
        }
        return lines.joined(separator: "\n")
    }

    /// The scan list, or (with an output to report to) exit 2 saying what is wrong with it.
    func readScanList(_ output: EventOutput?) throws -> [NetworkDescription] {
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
            let bssid: [UInt8] = if case .string(let bytes)? = entry["bssid"] { bytes } else { [] }
            let signalStrength: Double = switch entry["signal_strength"] {
            case .number(let value)?: value
            case .integer(let value)?: Double(value)
            default: 1
            }
            let isSecure = if case .boolean(let flag)? = entry["is_secure"] { flag } else { false }
            return NetworkDescription(ssid: String(decoding: ssid, as: UTF8.self), bssid: String(decoding: bssid, as: UTF8.self),
                                      signalStrength: signalStrength, isSecure: isSecure)
        }
    }
}
