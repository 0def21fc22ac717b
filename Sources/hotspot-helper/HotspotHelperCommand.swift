import ArgumentParser
import HotspotCommandLine
import HotspotNetwork
import HotspotRuntime
import LuaSandbox
import ScriptLibraries
import HotspotDaemon

@main
enum HotspotHelperMain {
    static func main() {
        // The engine runs venue scripts in worker processes of this same executable, so a
        // device installs one file, and a statically linked build shares its pages
        // between the daemon and its workers.
        if SandboxWorker.isLaunchedAsWorker {
            SandboxWorker.run(modules: ScriptLibraries.modules, expectedPrelude: HotspotRuntime.prelude,
                              started: BoundHTTPClient.loadLibraryInBackground)
        }
        let arguments = Array(CommandLine.arguments.dropFirst())
        let devToolsCommands = [Demo.configuration, Dev.configuration, Simulate.configuration, TestScripts.configuration, Har.configuration]
            .compactMap(\.commandName)
        if let name = arguments.first, devToolsCommands.contains(name) {
            DevTools.replaceProcess(running: arguments)
        }
        if arguments.first == Web.configuration.commandName {
            DevTools.replaceProcess(running: arguments, executable: DevTools.webExecutableName)
        }
        // The daemon idles for hours between maintains: its tasks run on an executor that
        // sleeps as long (see DaemonExecutor).
        if arguments.first == Run.configuration.commandName {
            DaemonExecutor.install()
        }
        // The commands that run scripts: their worker starts while they parse and read scripts.
        let scriptCommands = [Connect.configuration, Run.configuration, Check.configuration, Networks.configuration].compactMap(\.commandName)
        if let name = arguments.first, scriptCommands.contains(name) {
            LuaEngine.startWorkerAhead(executable: HotspotRuntime.workerExecutable)
        }
        if Connect.checksSuccess(arguments) { BoundHTTPClient.loadLibraryInBackground() }
        CommandLineEntry.runWaiting(HotspotHelperCommand.self)
    }
}

struct HotspotHelperCommand: AsyncParsableCommand {
    /// `--version`, and the metrics' build info.
    static let version = "0.1.0"

    static let configuration = CommandConfiguration(
        commandName: "hotspot-helper",
        abstract: "Runs venue scripts that get a device through Wi-Fi captive portals.",
        discussion: """
            A venue script is a Lua file that returns a table of handlers (evaluate, \
            authenticate, maintain, ...), run in a sandbox under deadlines and a memory cap.
            """,
        version: version,
        subcommands: [
            Demo.self, Connect.self, Run.self, Dev.self, Check.self, ProbeCommand.self, Networks.self, Simulate.self, TestScripts.self, Har.self,
            UI.self, Status.self, Web.self, Logoff.self, Join.self, Disable.self, Enable.self,
        ])
}

// The commands hotspot-helper-devtools runs (see `DevTools`): here for the command list
// and `help`; `hotspot-helper NAME ...` never parses them, it runs that executable.
struct Demo: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "demo", abstract: DevTools.demoAbstract)
    func run() { DevTools.replaceProcess(running: ["demo"]) }
}

struct Dev: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "dev", abstract: DevTools.devAbstract)
    func run() { DevTools.replaceProcess(running: ["dev"]) }
}

struct Web: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "web", abstract: DevTools.webAbstract)
    func run() { DevTools.replaceProcess(running: ["web"], executable: DevTools.webExecutableName) }
}

struct Simulate: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "simulate", abstract: DevTools.simulateAbstract)
    func run() { DevTools.replaceProcess(running: ["simulate"]) }
}

struct TestScripts: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "test", abstract: DevTools.testAbstract)
    func run() { DevTools.replaceProcess(running: ["test"]) }
}

struct Har: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "har", abstract: DevTools.harAbstract)
    func run() { DevTools.replaceProcess(running: ["har"]) }
}
