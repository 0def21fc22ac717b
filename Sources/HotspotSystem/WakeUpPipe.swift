#if canImport(Glibc)
import Glibc
#endif
import Spawning
import Locking

/// Wakes a thread blocked in `poll` from another thread: closing a descriptor under a
/// blocked thread is not safe (the number may be reused), writing a byte to a pipe is.
/// Waking after the waiting thread closed the pipe does nothing.
final class WakeUpPipe: Sendable {
    /// Polled by the waiting thread; readable once `wake()` was called.
    let readEnd: Int32
    private let writeEnd: PlainLock<Int32?>

    init() {
        let ends = closeOnExecPipe() ?? (readEnd: -1, writeEnd: -1)
        readEnd = ends.readEnd
        writeEnd = PlainLock(ends.writeEnd)
    }

    func wake() {
        writeEnd.withLock { end in
            guard let end else { return }
            var byte: UInt8 = 1
            _ = write(end, &byte, 1)
        }
    }

    /// Empties the pipe, for a waiting thread that is woken more than once (the wake-ups
    /// since it last looked count as one).
    func drain() {
        _ = fcntl(readEnd, F_SETFL, fcntl(readEnd, F_GETFL) | O_NONBLOCK)
        var bytes = [UInt8](repeating: 0, count: 64)
        while read(readEnd, &bytes, bytes.count) > 0 {}
    }

    /// Called by the waiting thread once it is done.
    func close() {
        writeEnd.withLock { end in
            guard let open = end else { return }
            _ = Glibc.close(open)
            _ = Glibc.close(readEnd)
            end = nil
        }
    }
}
