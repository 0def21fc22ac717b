import Foundation
import Testing
import TestSupport
import TestbedRecipes

/// A real network manager other than NetworkManager (systemd-networkd, ConnMan) in the client
/// namespace of the NetworkManager testbed's namespaces, on a private system bus, managing
/// the client's end of the veth pair with DHCP from the venue's dnsmasq; the portal
/// simulator answers at 198.18.0.1:80. Set up, stopped and torn down on a thread of its own.
final class ManagerTestbed: @unchecked Sendable {  // set up in init, torn down once by tearDown
    let venue: NetworkManagerRecipe
    var client: String { venue.client }
    var interface: String { venue.interface }
    let bus: PrivateBus
    /// `sh -c` in the client namespace that runs the manager in the foreground.
    private let managerScript: String
    private var services: [BackgroundProcess] = []
    private var manager: BackgroundProcess?
    private var tornDown = false

    /// Why a manager that needs `tools` (path: Debian package) cannot run here, or nil.
    static func unavailableReason(_ manager: String, tools: [String: String]) -> String? {
        guard getuid() == 0 else { return "a real \(manager) needs root (network namespaces, mounts); CI runs these tests as root" }
        let all = tools.merging(["/usr/sbin/dnsmasq": "dnsmasq-base", "/usr/bin/dbus-daemon": "dbus", "/usr/bin/busctl": "systemd"]) { $1 }
        for (tool, package) in all.sorted(by: { $0.key < $1.key }) where !FileManager.default.isExecutableFile(atPath: tool) {
            return "needs \(tool) (Debian's \(package); `make test` installs it)"
        }
        return TwoNetworks.unavailableReason
    }

    /// - Parameters:
    ///   - files: what the manager reads, written before anything starts.
    ///   - venueScript: `sh -c` run in the venue's namespace once dnsmasq runs, if any.
    init(_ venue: NetworkManagerRecipe, folders: [String], files: [(path: String, text: String)], managerScript: String,
         venueScript: String? = nil) throws {
        self.venue = venue
        self.managerScript = managerScript
        bus = try PrivateBus()
        for folder in folders { try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true) }
        for file in files { try file.text.write(toFile: file.path, atomically: true, encoding: .utf8) }
        services = try NetworkManagerTestbed.startVenue(venue, portalScenario: "click-through")
        if let venueScript, try shellStatus("ip netns exec \(venue.venue) sh -c '\(venueScript)'") != 0 {
            tearDown()
            throw CocoaError(.featureUnsupported, userInfo: [NSLocalizedDescriptionKey: "failed in the venue's namespace: \(venueScript)"])
        }
    }

    func startManager() throws {
        manager = try BackgroundProcess("/usr/sbin/ip", ["netns", "exec", client, "/bin/sh", "-c", managerScript],
                                        environment: ["DBUS_SYSTEM_BUS_ADDRESS=\(bus.address)"])
    }

    /// Stops the manager with SIGTERM, as a service manager does.
    func stopManager() {
        manager?.stop()
        manager = nil
    }

    /// The venue's end of the veth up or down: the client's end gains or loses its carrier.
    func setVenueLink(up: Bool) throws -> Int32 {
        try shellStatus("ip -n \(venue.venue) link set \(venue.venueInterface) \(up ? "up" : "down")")
    }

    /// `busctl --system` on the testbed's bus.
    func busctl(_ arguments: [String]) async throws -> CLI.Run {
        try await CLI.run(["DBUS_SYSTEM_BUS_ADDRESS=\(bus.address)", "/usr/bin/busctl", "--system"] + arguments, executable: "/usr/bin/env")
    }

    /// `hotspot-helper run --json --source SOURCE` in the client namespace, on the testbed's bus,
    /// with the bundled click-through script and a state directory of its own.
    func daemon(source: String) throws -> RunningCLI {
        let scripts = try CLI.temporaryDirectory()
        try FileManager.default.copyItem(atPath: CLI.bundledScripts + "/click-through.lua", toPath: scripts + "/click-through.lua")
        return try RunningCLI(["DBUS_SYSTEM_BUS_ADDRESS=\(bus.address)", "/usr/sbin/ip", "netns", "exec", client, CLI.path, "run", "--json",
                               "--source", source, "--scripts", scripts, "--state-dir", try CLI.temporaryDirectory(),
                               "--probe-url", "http://198.18.0.1/generate_204"], executable: "/usr/bin/env")
    }

    func tearDown() {
        guard !tornDown else { return }
        tornDown = true
        stopManager()
        services.forEach { $0.stop() }
        services = []
        _ = try? shellStatus(venue.removalScript)
    }

    deinit { tearDown() }
}
