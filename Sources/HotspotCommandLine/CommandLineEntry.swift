#if canImport(Glibc)
import Glibc
#endif
package import ArgumentParser

/// How both executables start: usage errors exit with status 2, as the commands document.
package enum CommandLineEntry {
    package static func run(_ root: any AsyncParsableCommand.Type) async {
        // A parent that spawned us from a thread blocking these signals passed the block on:
        // unblocked here, `run`, `dev` and `simulate` still hear SIGTERM, SIGINT and SIGHUP.
        var handled = sigset_t()
        sigemptyset(&handled)
        for number in [SIGTERM, SIGINT, SIGHUP] { sigaddset(&handled, number) }
        sigprocmask(SIG_UNBLOCK, &handled, nil)
        do {
            var command = try root.parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            guard root.exitCode(for: error) == .validationFailure else { root.exit(withError: error) }
            writeUnbuffered(root.fullMessage(for: error) + "\n", to: STDERR_FILENO)
            Glibc.exit(2)
        }
    }
}
