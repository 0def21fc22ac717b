#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import LuaSandbox
import Spawning
import TestbedRecipes

/// A real NetworkManager for the NetworkManager rows, run as the tests run theirs, by the
/// recipe they share (`NetworkManagerRecipe`): in a network namespace of its own (the client),
/// on a private system bus, managing one end of a veth pair whose other end's namespace (the
/// venue) has dnsmasq for DHCP and DNS (every name is 198.18.0.1) and the portal simulator's
/// click-through venue at 198.18.0.1:80, which also answers NetworkManager's connectivity
/// check (204 once logged in, a redirect before). NetworkManager's own DHCP client is enough
/// here: the rows need no DHCP option 114.
///
/// Its names carry the bench's process id and the row's tag; `stop()` ends every process it
/// started by its id, deletes the namespaces and its directory, whether the row measured or
/// failed.
final class NetworkManagerTestbed {
    /// The connection profile NetworkManager activates on the client's end.
    static let profile = "Aroma-Guest"
    /// The portal simulator's probe, for the daemon (no probe leaves the two namespaces).
    static let probeURL = "http://198.18.0.1/generate_204"

    let busAddress: String
    /// The device NetworkManager manages, in the client namespace.
    var interface: String { recipe.interface }
    private let recipe: NetworkManagerRecipe
    private let scratch: ScratchDirectory
    /// In the order they started; stopped the other way round.
    private var services: [BackgroundService] = []

    /// Why the rows cannot run here; nil when they can.
    static let unavailableReason: String? = {
        guard getuid() == 0 else { return "needs root (network namespaces, mounts)" }
        let tools = [("/usr/sbin/NetworkManager", "network-manager"), ("/usr/bin/nmcli", "network-manager"), ("/usr/bin/nm-online", "network-manager"),
                     ("/usr/sbin/dnsmasq", "dnsmasq-base"), ("/usr/bin/dbus-daemon", "dbus"), ("/usr/sbin/ip", "iproute2"), ("/usr/bin/curl", "curl")]
        for (tool, package) in tools where access(tool, X_OK) != 0 {
            return "needs \(tool) (Debian's \(package); `make test-deps` installs it)"
        }
        return nil
    }()

    /// - Parameters:
    ///   - tag: a letter of the row's own, so that no two testbeds share a name.
    ///   - checksConnectivity: whether NetworkManager checks connectivity (against the portal,
    ///     only when asked or once an hour: nothing it does by itself falls in a measurement).
    init(tag: String, checksConnectivity: Bool) throws {
        if let reason = Self.unavailableReason { throw BenchError(reason) }
        scratch = try ScratchDirectory()
        recipe = NetworkManagerRecipe(prefix: "hb\(getpid() % 100_000)\(tag)", directory: scratch.path)
        busAddress = "unix:path=\(scratch.path)/bus.sock"
        do {
            try setUp(checksConnectivity: checksConnectivity)
        } catch {
            stop()
            throw error
        }
    }

    private func setUp(checksConnectivity: Bool) throws {
        let directory = scratch.path
        for folder in recipe.folders {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        }
        try scratch.write("""
            <busconfig><type>system</type><listen>\(busAddress)</listen><auth>EXTERNAL</auth>
            <policy context="default"><allow user="*"/><allow own="*"/><allow send_destination="*"/>
            <allow receive_sender="*"/></policy></busconfig>
            """, to: "bus.conf")
        try scratch.write(recipe.networkManagerConfiguration(dhcp: "internal", connectivityCheck: checksConnectivity ? (Self.probeURL, 3600) : nil),
                          to: "NetworkManager.conf")
        try scratch.write(recipe.profile(named: Self.profile), to: "connections/venue.nmconnection", private: true)
        // Hour-long leases, as venues give: a renewal would be NetworkManager saying something.
        try scratch.write(recipe.dnsmasqConfiguration(leaseTime: "1h", captivePortalAPI: nil), to: "dnsmasq.conf")
        try runProcess(["/bin/sh", "-c", recipe.namespacesScript])
        let bus = try start("bus", ["/usr/bin/dbus-daemon", "--config-file=\(directory)/bus.conf", "--nofork", "--nopidfile"])
        try waitFor("the private bus", startedBy: bus) { access("\(directory)/bus.sock", F_OK) == 0 }
        // The portal before NetworkManager: a connectivity check that finds nothing listening says LIMITED.
        let portal = try start("portal", ["/usr/sbin/ip", "netns", "exec", recipe.venue, HelperCommand.path, "simulate", "--scenario", "click-through",
                                          "--host", NetworkManagerRecipe.venueAddress, "--port", "80"])
        try waitFor("the portal simulator", startedBy: portal) { portal.output.contains("http://198.18.0.1:80/") }
        _ = try start("dnsmasq", ["/usr/sbin/ip", "netns", "exec", recipe.venue, "/usr/sbin/dnsmasq", "--keep-in-foreground",
                                  "--conf-file=\(directory)/dnsmasq.conf", "--pid-file=\(directory)/dnsmasq.pid"])
        _ = try start("NetworkManager", ["/usr/sbin/ip", "netns", "exec", recipe.client, "/bin/sh", "-c", recipe.networkManagerScript],
                      environment: ["DBUS_SYSTEM_BUS_ADDRESS=\(busAddress)"])
        // It activates the profile as it starts; the rows begin once it has.
        try runProcess(["/usr/bin/env", "DBUS_SYSTEM_BUS_ADDRESS=\(busAddress)", "/usr/bin/nm-online", "--wait-for-startup", "--quiet", "--timeout=30"])
    }

    private func start(_ name: String, _ arguments: [String], environment: [String] = []) throws -> BackgroundService {
        let service = try BackgroundService(arguments, log: scratch.path + "/\(name).log", environment: environment)
        services.append(service)
        return service
    }

    /// Waits up to 20 s for `condition`; throws, with what `service` wrote, when it never holds.
    private func waitFor(_ what: String, startedBy service: BackgroundService, _ condition: () -> Bool) throws {
        let end = fromNow(seconds: 20)
        while !condition() {
            guard Deadline.now.nanoseconds < end, service.isRunning else {
                throw BenchError("\(what) did not start: \(service.output.suffix(400))")
            }
            usleep(10_000)
        }
    }

    /// Ends everything it started, by process id, and deletes the namespaces and its directory.
    func stop() {
        for service in services.reversed() { service.stop() }
        services = []
        _ = try? runProcess(["/bin/sh", "-c", recipe.removalScript])
        scratch.remove()
    }

    /// `nmcli ARGUMENTS` on the testbed's bus, as a command line to run.
    func nmcli(_ arguments: [String]) -> [String] {
        ["/usr/bin/env", "DBUS_SYSTEM_BUS_ADDRESS=\(busAddress)", "/usr/bin/nmcli"] + arguments
    }

    /// `hotspot-helper run --json` with `arguments`, in the client namespace and on the
    /// testbed's bus, read up to its first `authenticated` (NetworkManager activates the
    /// profile as it starts).
    func daemon(_ arguments: [String]) throws -> ChildProcess {
        let daemon = try ChildProcess(["/usr/bin/env", "DBUS_SYSTEM_BUS_ADDRESS=\(busAddress)", "/usr/sbin/ip", "netns", "exec", recipe.client,
                                       HelperCommand.path, "run", "--json", "--deadline", "10"] + arguments)
        daemon.closeInput()
        do {
            _ = try daemon.readLine(containing: #""to":"authenticated""#, before: fromNow(seconds: 30))
        } catch {
            _ = daemon.terminate()
            throw BenchError("the daemon never authenticated \(Self.profile): \(error)")
        }
        return daemon
    }

    /// The bench's witness of NetworkManager's signals on the testbed's bus, listening.
    func signalWitness() throws -> SignalWitness {
        try SignalWitness(busAddress: busAddress, interface: interface)
    }

    /// Logs the client out at the portal, so NetworkManager's next check finds the portal.
    func logOut() throws {
        try runProcess(["/usr/sbin/ip", "netns", "exec", recipe.client, "/usr/bin/curl", "--silent", "--show-error", "--max-time", "5",
                        "--output", "/dev/null", "http://198.18.0.1/logout"])
    }

    /// Has NetworkManager check connectivity now until it says `expected` (a login just made
    /// may take a moment to show); throws after 5 tries.
    func checkConnectivity(expecting expected: String) throws {
        var said = ""
        for _ in 0..<5 {
            said = try runProcess(nmcli(["networking", "connectivity", "check"])).filter { !$0.isWhitespace }
            if said == expected { return }
            usleep(200_000)
        }
        throw BenchError("NetworkManager's connectivity stayed \(said), not \(expected)")
    }
}

/// A program the bench keeps running in the background (the bus, DHCP, NetworkManager, the
/// portal simulator), its output in a log file. It starts with no signal blocked (the bench's
/// threads block SIGTERM, which a child would inherit) and is ended by its id.
final class BackgroundService {
    let pid: pid_t
    let log: String
    private var exited = false

    init(_ arguments: [String], log: String, environment: [String] = []) throws {
        self.log = log
        guard FileManager.default.createFile(atPath: log, contents: nil) else { throw BenchError("cannot create \(log)") }
        do {
            pid = try spawnProcess(arguments[0], arguments: Array(arguments.dropFirst()), descriptors: [
                .open("/dev/null", flags: O_RDONLY, as: STDIN_FILENO),
                .open(log, flags: O_WRONLY | O_APPEND, as: STDOUT_FILENO), .open(log, flags: O_WRONLY | O_APPEND, as: STDERR_FILENO),
            ], closingFrom: 3, environmentOverrides: environment, resettingSignals: true)
        } catch {
            throw BenchError("cannot start \(arguments[0]): \(error)")
        }
    }

    /// What it wrote so far.
    var output: String { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }

    var isRunning: Bool { !reaped(waiting: false) }

    /// SIGTERM, then SIGKILL if it is still running 5 s later; returns once it has ended.
    func stop() {
        guard isRunning else { return }
        kill(pid, SIGTERM)
        let end = fromNow(seconds: 5)
        while isRunning, Deadline.now.nanoseconds < end { usleep(10_000) }
        if isRunning { kill(pid, SIGKILL) }
        _ = reaped(waiting: true)
    }

    /// Whether it has ended and been reaped, reaping it now if it has.
    private func reaped(waiting: Bool) -> Bool {
        if !exited {
            var status: Int32 = 0
            exited = waitpid(pid, &status, waiting ? 0 : WNOHANG) == pid
        }
        return exited
    }
}
