#if canImport(Glibc)
package import Glibc
#endif
import Spawning
import Locking

/// Wakes a thread blocked in `poll` from another thread: closing a descriptor under a
/// blocked thread is not safe (the number may be reused), writing a byte to a pipe is.
/// Waking after the waiting thread closed the pipe does nothing.
package final class WakeUpPipe: Sendable {
    /// Polled by the waiting thread; readable once `wake()` was called.
    package let readEnd: Int32
    private let writeEnd: PlainLock<Int32?>

    package init() {
        let ends = closeOnExecPipe() ?? (readEnd: -1, writeEnd: -1)
        readEnd = ends.readEnd
        writeEnd = PlainLock(ends.writeEnd)
    }

    package func wake() {
        writeEnd.withLock { end in
            guard let end else { return }
            var byte: UInt8 = 1
            _ = write(end, &byte, 1)
        }
    }

    /// Empties the pipe, for a waiting thread that is woken more than once (the wake-ups
    /// since it last looked count as one).
    package func drain() {
        _ = fcntl(readEnd, F_SETFL, fcntl(readEnd, F_GETFL) | O_NONBLOCK)
        var bytes = [UInt8](repeating: 0, count: 64)
        while read(readEnd, &bytes, bytes.count) > 0 {}
    }

    package enum Waited {
        case ready, timedOut, woken
        /// `poll` itself failed (not interrupted): the thread cannot wait any more.
        case failed
    }

    /// Waits in `poll` for `descriptors` (their `revents` set on return) or a wake-up,
    /// whichever comes first; -1 waits without a timeout.
    package func wait(for descriptors: inout [pollfd], timeoutMilliseconds: Int32) -> Waited {
        var all = descriptors + [pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)]
        while true {
            let ready = poll(&all, nfds_t(all.count), timeoutMilliseconds)
            if ready < 0, errno == EINTR { continue }
            guard ready >= 0 else { return .failed }
            descriptors = Array(all.dropLast())
            if all[all.count - 1].revents != 0 { return .woken }
            return ready == 0 ? .timedOut : .ready
        }
    }

    /// Called by the waiting thread once it is done.
    package func close() {
        writeEnd.withLock { end in
            guard let open = end else { return }
            _ = Glibc.close(open)
            _ = Glibc.close(readEnd)
            end = nil
        }
    }
}
