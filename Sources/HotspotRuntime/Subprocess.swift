#if canImport(Glibc)
import Glibc
#endif
internal import CLuaSandbox

/// Runs a short-lived program and collects what it writes: what the runtime asks of the
/// platform's tools (nmcli). Built on posix_spawn, so the daemon needs no Foundation
/// `Process`.
enum Subprocess {
    struct Finished {
        /// Its exit status, or nil when a signal ended it.
        let exitStatus: Int32?
        let output: [UInt8]
    }

    /// Runs `executable` with `arguments`, its standard input and error on /dev/null, reads
    /// its standard output to the end and waits for it; nil when it cannot be started.
    /// Blocks the calling thread until the program ends.
    static func run(_ executable: String, _ arguments: [String]) -> Finished? {
        var pipeEnds: [Int32] = [-1, -1]
        guard pipe(&pipeEnds) == 0 else { return nil }
        for end in pipeEnds { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        let (readEnd, writeEnd) = (pipeEnds[0], pipeEnds[1])
        defer { close(readEnd) }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, writeEnd, STDOUT_FILENO)
        posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0)
        // Not one of the daemon's sockets or pipes leaks into the program, CLOEXEC or not.
        sbx_spawn_close_from(&actions, STDERR_FILENO + 1)

        // The daemon's signal handling (blocked or ignored signals) is not the program's.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var signals = sigset_t()
        sigemptyset(&signals)
        posix_spawnattr_setsigmask(&attributes, &signals)
        sigfillset(&signals)
        posix_spawnattr_setsigdefault(&attributes, &signals)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        var argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, &attributes, &argv, environ)
        // Only the program holds the write end now: reading ends when it exits.
        close(writeEnd)
        guard spawned == 0 else { return nil }

        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(readEnd, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            output += chunk[0..<count]
        }

        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { return nil }
        }
        let signal = status & 0x7f
        return Finished(exitStatus: signal == 0 ? (status >> 8) & 0xff : nil, output: output)
    }
}
