#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import Dispatch
import PersonPage
import Spawning

/// `hotspot-helper web`, which `hotspot-helper` runs as this executable (as it runs the
/// developer tools), so the daemon's executable and memory stay free of a web server.
@main
enum HotspotHelperWebMain {
    /// The main thread waits for the command instead of serving Dispatch's main queue, which
    /// nothing here uses, as `hotspot-helper`'s does (`CommandLineEntry.runWaiting` says why).
    static func main() {
        let finished = DispatchSemaphore(value: 0)
        // Detached: a task made here would inherit `main`'s main actor, whose thread waits.
        Task.detached {
            await HotspotHelperWeb.runCommandLine()
            finished.signal()
        }
        finished.wait()
    }
}

struct HotspotHelperWeb: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hotspot-helper web",
        abstract: "Serves a page on loopback to see the running daemon and answer what its helpers ask of a person.",
        discussion: """
            Run it as the person at the device (not as root): it talks to the daemon over the \
            control socket in --state-dir (or at --control-socket), which lets in the daemon's \
            owner and, when the daemon runs with --control-group GROUP, that group's members.

            It prints an address with a token, and opens it in the browser when there is one: the \
            token admits you, so keep the address to yourself. The page shows every network, its \
            state, helper, connectivity and last commands, and what happens as it happens; a \
            network waiting for a person shows the helper's questions as a form. You can log off \
            a network, join it again, and switch helpers off and on.

            Example:
              hotspot-helper web --state-dir /var/lib/hotspot-helper
            """)

    @Option(name: .customLong("state-dir"), help: ArgumentHelp("The daemon's --state-dir.", valueName: "dir"))
    var stateDirectory = "/var/lib/hotspot-helper"

    @Option(name: .customLong("control-socket"),
            help: ArgumentHelp("The daemon's --control-socket (default: STATE-DIR/control.sock).", valueName: "path"))
    var controlSocket: String?

    @Option(help: ArgumentHelp("Where to listen: a loopback address and a port (0 picks a free one).", valueName: "address:port"))
    var listen = "127.0.0.1:0"

    @Flag(name: .customLong("no-open"), help: "Print the address without opening a browser.")
    var noOpen = false

    func validate() throws {
        _ = try listenAddress()
    }

    /// `--listen` as host and port; the host must be loopback.
    func listenAddress() throws -> (host: String, port: Int) {
        guard let colon = listen.lastIndex(of: ":"), let port = Int(listen[listen.index(after: colon)...]), (0...65535).contains(port) else {
            throw ValidationError("--listen \(listen) must be address:port, such as 127.0.0.1:8080")
        }
        var host = String(listen[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard PersonPage.loopbackHosts.contains(host) else {
            throw ValidationError("--listen \(listen): the page listens on loopback only (127.0.0.1, [::1] or localhost)")
        }
        return (host, port)
    }

    static func runCommandLine() async {
        // `hotspot-helper web ARGS` runs this executable with `web ARGS`.
        var arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.first == "web" { arguments.removeFirst() }
        do {
            var command = try parseAsRoot(arguments)
            if var command = command as? any AsyncParsableCommand { try await command.run() } else { try command.run() }
        } catch {
            exit(withError: error)
        }
    }

    func run() async throws {
        let (host, port) = try listenAddress()
        let page: PersonPage
        do {
            page = try await PersonPage.start(controlSocket: controlSocket ?? stateDirectory + "/control.sock", host: host, port: port,
                                              open: Self.openInBrowser)
        } catch {
            FileHandleStandardError.write("hotspot-helper web: \(error)\n")
            throw ExitCode(2)
        }
        print("Open \(page.url)")
        print("(the token in it admits you: keep the address to yourself; Ctrl-C stops the page)")
        fflush(nil)  // a pipe or a file would hold the address back
        if !noOpen { Self.openInBrowser(page.url) }
        let signals = [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number)
            source.setEventHandler { Task { await page.stop() } }
            source.activate()
            return source
        }
        defer { signals.forEach { $0.cancel() } }
        try await page.wait()
    }

    /// Hands the address to the desktop's browser (xdg-open) when there is a desktop.
    static func openInBrowser(_ url: String) {
        guard getenv("DISPLAY") != nil || getenv("WAYLAND_DISPLAY") != nil else { return }
        for directory in (String(cString: getenv("PATH") ?? strdup("/usr/bin")!)).split(separator: ":") {
            let opener = "\(directory)/xdg-open"
            guard access(opener, X_OK) == 0 else { continue }
            _ = try? spawnProcess(opener, arguments: [url], descriptors: [.open("/dev/null", flags: O_RDWR, as: 0),
                                                                       .open("/dev/null", flags: O_RDWR, as: 1)])
            return
        }
    }
}

/// Standard error, unbuffered, without Foundation.
enum FileHandleStandardError {
    static func write(_ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { Glibc.write(STDERR_FILENO, $0.baseAddress, $0.count) }
    }
}
