#if canImport(Glibc)
import Glibc
#endif
package import ArgumentParser
import Dispatch

/// How both executables start: usage errors exit with status 2, as the commands document.
package enum CommandLineEntry {
    package static func run(_ root: any AsyncParsableCommand.Type) async {
        unblockStopSignals()
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

    /// `run` from a synchronous `main`, whose thread waits for it instead of serving
    /// Dispatch's main queue, which nothing here uses: an async `main` hands its thread to
    /// `dispatch_main`, which ends it with pthread_exit, and that unwinding maps the
    /// executable's unwind tables (0.8 MiB, resident for a daemon's life).
    package static func runWaiting(_ root: any AsyncParsableCommand.Type) {
        // Before any thread starts, so that every thread inherits it.
        unblockStopSignals()
        let finished = DispatchSemaphore(value: 0)
        // Detached: the main actor's thread is the one waiting.
        Task.detached {
            await run(root)
            finished.signal()
        }
        finished.wait()
    }

    /// A parent that spawned us from a thread blocking these signals passed the block on:
    /// unblocked, `run`, `dev` and `simulate` still hear SIGTERM, SIGINT and SIGHUP.
    private static func unblockStopSignals() {
        var handled = sigset_t()
        sigemptyset(&handled)
        for number in [SIGTERM, SIGINT, SIGHUP] { sigaddset(&handled, number) }
        sigprocmask(SIG_UNBLOCK, &handled, nil)
    }
}
