#if canImport(Glibc)
import Glibc
#endif

/// Runs a short-lived program and collects what it writes: what the daemon asks of the
/// platform's tools (nmcli). Built on posix_spawn, so the daemon needs no Foundation
/// `Process`.
package enum Subprocess {
    package struct Finished {
        /// Its exit status, or nil when a signal ended it.
        package let exitStatus: Int32?
        package let output: [UInt8]
    }

    /// Runs `executable` with `arguments`, its standard input and error on /dev/null, reads
    /// its standard output to the end and waits for it; nil when it cannot be started.
    /// Blocks the calling thread until the program ends.
    package static func run(_ executable: String, _ arguments: [String]) -> Finished? {
        guard let (readEnd, writeEnd) = closeOnExecPipe() else { return nil }
        defer { close(readEnd) }
        let pid = try? spawnProcess(
            executable, arguments: arguments,
            descriptors: [.open("/dev/null", flags: O_RDONLY, as: STDIN_FILENO), .duplicate(writeEnd, as: STDOUT_FILENO),
                          .open("/dev/null", flags: O_WRONLY, as: STDERR_FILENO)],
            // Not one of the daemon's sockets or pipes leaks into the program, CLOEXEC or not.
            closingFrom: STDERR_FILENO + 1,
            // The daemon's signal handling (blocked or ignored signals) is not the program's.
            resettingSignals: true)
        // Only the program holds the write end now: reading ends when it exits.
        close(writeEnd)
        guard let pid else { return nil }

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
