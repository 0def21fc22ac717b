#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Locking
internal import Spawning

/// One running worker process and the supervisor's end of its socket.
final class WorkerProcess: Sendable {
    let pid: pid_t
    private let descriptor: Int32
    /// Set once the process is reaped and the socket closed. From then on the system may
    /// give both numbers to something else (a test's HTTP connection, another process), so
    /// writes and kills check it under the lock instead of reaching a stranger.
    private let ended = PlainLock(false)

    private init(pid: pid_t, descriptor: Int32) {
        self.pid = pid
        self.descriptor = descriptor
    }

    /// Starts `executable` as a worker of this process, its end of a socket pair on fd 3.
    ///
    /// A worker dies with its parent through PR_SET_PDEATHSIG, which Linux fires when the
    /// *thread* that spawned it exits, not only the process: workers are spawned from one
    /// thread that lives as long as the process, never from a pool thread that may retire.
    static func spawn(executable: String) throws(LuaEngineError) -> WorkerProcess {
        if let started = startedAhead.withLock({ $0[executable]?.popLast() }) { return started }
        return try SpawningThread.shared.run { () -> Result<WorkerProcess, LuaEngineError> in
            do throws(LuaEngineError) { return .success(try spawnHere(executable: executable)) } catch { return .failure(error) }
        }.get()
    }

    /// Workers started before an engine asked for them (`LuaEngine.startWorkerAhead`), by
    /// executable, for the next spawns of that executable to take.
    private static let startedAhead = PlainLock<[String: [WorkerProcess]]>([:])

    /// Spawned from the calling thread, which must live as long as the process (see `spawn`),
    /// not through the spawning thread: waiting for that thread cost the caller up to 2 ms, as
    /// it was woken when the new process executed and then often waited for the core that
    /// process had taken, while another core idled.
    static func startAhead(executable: String) {
        // A worker that cannot start now will not start for the engine either, which says why.
        guard let process = try? spawnHere(executable: executable) else { return }
        startedAhead.withLock { $0[executable, default: []].append(process) }
    }

    private static func spawnHere(executable: String) throws(LuaEngineError) -> WorkerProcess {
        guard access(executable, X_OK) == 0 else {
            throw LuaEngineError("the worker executable \(executable) is missing or not executable; build it with `swift build`")
        }
        var pair: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
            throw LuaEngineError("cannot create a socket pair for a worker: \(String(cString: strerror(errno)))")
        }
        // Above the standard descriptors, so the dup2 onto 3 below is a real duplicate.
        let childEnd = fcntl(pair[1], F_DUPFD_CLOEXEC, 10)
        close(pair[1])
        var bufferSize: Int32 = 1 << 20
        for fd in [pair[0], childEnd] {
            setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bufferSize, socklen_t(MemoryLayout<Int32>.size))
        }
        // The worker's own copy is the only one to stay open once it is started.
        defer { close(childEnd) }
        let pid: pid_t
        do {
            pid = try spawnProcess(
                executable, arguments: [SandboxWorker.launchArgument, String(getpid())],
                descriptors: [.duplicate(childEnd, as: SandboxWorker.descriptor)],
                // Nothing else of the supervisor's leaks into a worker: not its sockets, and not
                // the write ends of pipes that others wait on for end of file.
                closingFrom: SandboxWorker.descriptor + 1,
                // Swift's crash backtracer takes seconds; the supervisor reports the signal itself.
                environmentOverrides: ["SWIFT_BACKTRACE=enable=no"])
        } catch {
            close(pair[0])
            throw LuaEngineError("cannot start the worker \(executable): \(error)")
        }
        _ = fcntl(pair[0], F_SETFL, fcntl(pair[0], F_GETFL) | O_NONBLOCK)
        return WorkerProcess(pid: pid, descriptor: pair[0])
    }

    /// Sends a frame without ever waiting long on the worker: false when it has not taken
    /// the bytes within `patience` (a worker that stops reading is treated as hung).
    func write(_ frame: [UInt8], patience: Duration = .milliseconds(100)) -> Bool {
        let deadline = Deadline.after(patience)
        return ended.withLock { ended in
            guard !ended else { return false }
            return frame.withUnsafeBytes { bytes in
                var offset = 0
                while offset < bytes.count {
                    // MSG_NOSIGNAL: a worker that died is an error to handle, not a SIGPIPE that ends the process.
                    let written = Glibc.send(descriptor, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
                    if written > 0 {
                        offset += written
                    } else if written < 0, errno == EINTR {
                        continue
                    } else if written < 0, errno == EAGAIN, !deadline.hasPassed {
                        var poller = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
                        _ = poll(&poller, 1, Int32(max(1, deadline.remaining / .milliseconds(1))))
                    } else {
                        return false
                    }
                }
                return true
            }
        }
    }

    /// Calls `body` with the frames the worker sent, those of each read together, until the
    /// socket closes, a frame is malformed (the frames before it still reach `body`), or
    /// `body` returns false. Runs on the caller's thread, which it blocks; the same thread
    /// then calls `reap`.
    func readFrames(_ body: ([[UInt8]]) -> Bool) {
        var assembler = FrameAssembler()
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = receive(descriptor, into: &chunk)
            guard count > 0 else { return }
            chunk.withUnsafeBytes { assembler.append(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
            var frames: [[UInt8]] = []
            var malformed = false
            do {
                while let frame = try assembler.next() { frames.append(frame) }
            } catch {
                malformed = true
            }
            guard frames.isEmpty || body(frames), !malformed else { return }
        }
    }

    /// Whether the process is stopped (SIGSTOP, a debugger): it answers nothing until it is
    /// continued, so its calls would wait for their deadlines (state `T` or `t` in /proc).
    var isStopped: Bool {
        let descriptor = open("/proc/\(pid)/stat", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 512)
        let count = read(descriptor, &buffer, buffer.count)
        // "pid (name) S ...": the state follows the name's last ')', which may hold anything.
        guard count > 0, let close = buffer[..<count].lastIndex(of: UInt8(ascii: ")")), close + 2 < count else { return false }
        return buffer[close + 2] == UInt8(ascii: "T") || buffer[close + 2] == UInt8(ascii: "t")
    }

    /// Its resident memory (the second field of /proc/PID/statm, in pages); nil once gone.
    var residentBytes: Int? {
        let descriptor = open("/proc/\(pid)/statm", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 128)
        let count = read(descriptor, &buffer, buffer.count)
        guard count > 0 else { return nil }
        let fields = buffer[..<count].split(separator: UInt8(ascii: " "))
        guard fields.count > 1, let pages = Int(String(decoding: fields[1], as: UTF8.self)) else { return nil }
        return pages * sysconf(Int32(_SC_PAGESIZE))
    }

    /// How a worker that ended itself over a call it could not stop (one that used up its
    /// CPU time in a C function, `SandboxWorker`) exits; that call has been answered.
    static let stoppedARunawayCallStatus: Int32 = 4

    /// How a worker process ended.
    struct Ending {
        let description: String
        /// It ended itself over a call it answered (`stoppedARunawayCallStatus`).
        var stoppedARunawayCall = false
    }

    func kill() {
        ended.withLock { ended in
            if !ended { _ = Glibc.kill(pid, SIGKILL) }
        }
    }

    /// Waits for the process to end (killing it if it lingers), closes the socket, and says
    /// how the process ended.
    func reap() -> Ending {
        var status: Int32 = 0
        func reaped(_ options: Int32) -> pid_t {
            ended.withLock { ended in
                let waited = waitpid(pid, &status, options)
                if waited != 0, !ended {
                    close(descriptor)
                    ended = true
                }
                return waited
            }
        }
        var waited = reaped(WNOHANG)
        for _ in 0..<50 where waited == 0 {
            usleep(1000)
            waited = reaped(WNOHANG)
        }
        if waited == 0 {
            kill()
            // Waits for the end without reaping, so the pid stays the worker's, and without
            // the lock, so no write waits on a process slow to die.
            var info = siginfo_t()
            _ = waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT)
            waited = reaped(WNOHANG)
        }
        guard waited == pid else { return Ending(description: "ended") }
        let signal = status & 0x7f
        let code = (status >> 8) & 0xff
        if signal == 0, code == Self.stoppedARunawayCallStatus {
            return Ending(description: "ended itself, as a call there used up its CPU time in a C function",
                          stoppedARunawayCall: true)
        }
        if signal == 0 { return Ending(description: "exited with status \(code)") }
        let name = signal == SIGKILL ? "SIGKILL, perhaps out of memory" : String(cString: strsignal(signal))
        return Ending(description: "was killed by signal \(signal) (\(name))")
    }
}

/// The engine cannot start or reach its worker processes.
public struct LuaEngineError: Error, Sendable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

/// The one thread workers are spawned from: it waits for work and never exits.
private final class SpawningThread: Sendable {
    static let shared = SpawningThread()

    private let pending = PlainLock<[@Sendable () -> Void]>([])
    private let workArrived = DispatchSemaphore(value: 0)

    private init() {
        var thread = pthread_t()
        let retained = Unmanaged.passRetained(self).toOpaque()
        let created = pthread_create(&thread, nil, { context in
            Unmanaged<SpawningThread>.fromOpaque(context!).takeRetainedValue().serve()
        }, retained)
        precondition(created == 0, "cannot start the thread that spawns workers")
        pthread_detach(thread)
    }

    private func serve() -> Never {
        while true {
            workArrived.wait()
            let work = pending.withLock { $0.removeFirst() }
            work()
        }
    }

    /// Runs `body` on the spawning thread and waits for its result.
    func run<Value: Sendable>(_ body: @escaping @Sendable () -> Value) -> Value {
        let result = PlainLock<Value?>(nil)
        let done = DispatchSemaphore(value: 0)
        pending.withLock {
            $0.append {
                let value = body()
                result.withLock { $0 = value }
                done.signal()
            }
        }
        workArrived.signal()
        done.wait()
        return result.withLock { $0! }
    }
}
