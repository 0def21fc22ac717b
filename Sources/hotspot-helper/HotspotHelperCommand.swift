#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser

@main
struct HotspotHelperCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hotspot-helper",
        abstract: "Runs venue scripts that get a device through Wi-Fi captive portals.",
        discussion: """
            A venue script is a Lua file that returns a table of handlers (evaluate, \
            authenticate, maintain, ...), run in a sandbox under deadlines and a memory cap.
            """,
        subcommands: [
            Demo.self, Connect.self, Run.self, Dev.self, Check.self, ProbeCommand.self, Networks.self, Simulate.self,
            UI.self, Logoff.self, Disable.self, Enable.self,
        ])

    /// As the default, except that usage errors exit with status 2, as the commands document.
    static func main() async {
        // A parent that spawned us from a thread blocking these signals passed the block on:
        // unblocked here, `run`, `dev` and `simulate` still hear SIGTERM, SIGINT and SIGHUP.
        var handled = sigset_t()
        sigemptyset(&handled)
        for number in [SIGTERM, SIGINT, SIGHUP] { sigaddset(&handled, number) }
        sigprocmask(SIG_UNBLOCK, &handled, nil)
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            guard exitCode(for: error) == .validationFailure else { exit(withError: error) }
            writeUnbuffered(fullMessage(for: error) + "\n", to: STDERR_FILENO)
            Glibc.exit(2)
        }
    }
}
