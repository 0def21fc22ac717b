#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import Locking
import Synchronization
import LinuxFiles

/// The control socket's connections, served by one thread polling them all (see
/// `ControlServer`). A connection waits for its request line until its deadline, its
/// request runs as a task, and its reply is written when the task is done, whole, however
/// large, as fast as the client reads it within `replyDeadline`. A `ui` request
/// whose client hangs up first is cancelled: the person gave up (the helper's `present_ui`
/// ends); other requests run to their end, so a client going away leaves no half-done change.
/// A `watch` request keeps its connection: every line `publish` is given is written to it,
/// as far as it reads (a watcher already `watcherBacklog` bytes behind when a line comes is
/// closed; one line is never too large, whatever its size).
final class ConnectionLoop: Sendable {
    private let listener: Int32
    private let limits: ControlServer.Limits
    private let admits: @Sendable (Int32) -> Bool
    private let handler: @Sendable (ControlRequest) async -> ControlReply
    private let wakeUp = WakeUpPipe()
    private let stopped = Atomic<Bool>(false)
    /// Replies the handler's tasks finished, for the loop to write.
    private let finished = PlainLock<[(connection: Int32, reply: [UInt8])]>([])
    /// Lines published and not yet queued to the watchers; none are kept while none watch.
    private let published = PlainLock<[[UInt8]]>([])
    private let watcherCount = Atomic<Int>(0)

    static let watcherBacklog = 1 << 20

    init(listener: Int32, limits: ControlServer.Limits, admits: @escaping @Sendable (Int32) -> Bool,
         handler: @escaping @Sendable (ControlRequest) async -> ControlReply) {
        self.listener = listener
        self.limits = limits
        self.admits = admits
        self.handler = handler
    }

    /// Queues a line for every watcher, from any thread; costs an atomic load when none watch.
    func publish(_ line: [UInt8]) {
        guard watcherCount.load(ordering: .relaxed) > 0 else { return }
        published.withLock { $0.append(line) }
        wakeUp.wake()
    }

    /// Ends the loop (its thread closes everything); false when it was already asked to.
    func stop() -> Bool {
        guard !stopped.exchange(true, ordering: .relaxed) else { return false }
        wakeUp.wake()
        return true
    }

    /// A connection whose request line is still coming.
    private struct Arriving {
        var bytes: [UInt8] = []
        let deadline: ContinuousClock.Instant
    }

    /// A reply larger than the socket took at once, and when its client must have read it by.
    private struct Replying {
        var bytes: [UInt8]
        let deadline: ContinuousClock.Instant
    }

    /// Runs on the server's thread until `stop()`.
    func run() {
        var arriving: [Int32: Arriving] = [:]
        var answering = 0  // requests whose handler runs
        // Of those, the ones cancelled when their client hangs up, until it does.
        var cancellable: [Int32: Task<Void, Never>] = [:]
        // Watching connections and the bytes waiting to be written to each.
        var watchers: [Int32: [UInt8]] = [:]
        var replying: [Int32: Replying] = [:]
        // Held for the moment the process runs out of descriptors: closed, it lets the loop
        // accept the waiting connection and close it, where `accept` would fail at once
        // forever and the loop spin.
        var reserve = open("/dev/null", O_RDONLY | O_CLOEXEC)
        defer {
            for connection in arriving.keys { close(connection) }
            for connection in watchers.keys { close(connection) }
            for connection in replying.keys { close(connection) }
            for (connection, _) in finished.withLock({ $0 }) { close(connection) }
            if reserve >= 0 { close(reserve) }
            close(listener)
            wakeUp.close()
        }
        while !stopped.load(ordering: .relaxed) {
            var descriptors = [pollfd(fd: wakeUp.readEnd, events: Int16(POLLIN), revents: 0),
                               pollfd(fd: listener, events: Int16(POLLIN), revents: 0)]
            let order = Array(arriving.keys)
            descriptors += order.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            // No events asked: a hang-up is reported anyway, and bytes after the request are not.
            let watched = Array(cancellable.keys)
            descriptors += watched.map { pollfd(fd: $0, events: 0, revents: 0) }
            let watching = Array(watchers.keys)
            descriptors += watching.map { pollfd(fd: $0, events: watchers[$0]!.isEmpty ? 0 : Int16(POLLOUT), revents: 0) }
            let writing = Array(replying.keys)
            descriptors += writing.map { pollfd(fd: $0, events: Int16(POLLOUT), revents: 0) }
            let now = ContinuousClock.now
            let nearest = (arriving.values.map(\.deadline) + replying.values.map(\.deadline)).min()
            let timeout = nearest.map { Int32(clamping: max(0, Int((($0 - now) / .milliseconds(1)).rounded(.up)))) } ?? -1
            let ready = poll(&descriptors, nfds_t(descriptors.count), timeout)
            if ready < 0, errno == EINTR { continue }
            guard ready >= 0 else { return }
            // Watchers a line found already `watcherBacklog` behind: it is not queued, they go.
            var fellBehind: Set<Int32> = []
            if descriptors[0].revents != 0 {
                wakeUp.drain()
                let replies = finished.withLock { finished in
                    let taken = finished
                    finished = []
                    return taken
                }
                for (connection, reply) in replies {
                    answer(connection, reply, &replying)
                    answering -= 1
                    cancellable[connection] = nil
                }
                let lines = published.withLock { lines in
                    defer { lines = [] }
                    return lines
                }
                for line in lines {
                    for connection in watchers.keys {
                        if watchers[connection]!.count > Self.watcherBacklog {
                            fellBehind.insert(connection)
                        } else {
                            watchers[connection]! += line
                        }
                    }
                }
            }
            for (index, connection) in watching.enumerated() {
                let events = descriptors[order.count + watched.count + 2 + index].revents
                guard var backlog = watchers[connection] else { continue }
                if events & Int16(POLLHUP | POLLERR) != 0 || fellBehind.contains(connection) || !flush(&backlog, to: connection) {
                    watchers[connection] = nil
                    watcherCount.subtract(1, ordering: .relaxed)
                    close(connection)
                } else {
                    watchers[connection] = backlog
                }
            }
            for (index, connection) in writing.enumerated() {
                let events = descriptors[order.count + watched.count + watching.count + 2 + index].revents
                guard events != 0, var pending = replying[connection] else { continue }
                if events & Int16(POLLHUP | POLLERR) != 0 || !flush(&pending.bytes, to: connection) || pending.bytes.isEmpty {
                    replying[connection] = nil
                    close(connection)
                } else {
                    replying[connection] = pending
                }
            }
            for (index, connection) in watched.enumerated() where descriptors[order.count + 2 + index].revents != 0 {
                // Closed when its cancelled task finishes; not watched meanwhile.
                cancellable.removeValue(forKey: connection)?.cancel()
            }
            for (index, connection) in order.enumerated() where descriptors[index + 2].revents != 0 {
                guard var pending = arriving[connection] else { continue }
                switch read(into: &pending, from: connection) {
                case .waiting:
                    arriving[connection] = pending
                case .line(let line):
                    arriving[connection] = nil
                    guard let request = try? ControlRequest(line: line) else {
                        answer(connection, ControlServer.encoded(ControlReply(ok: false, message: "the request is not a control request in JSON")),
                               &replying)
                        continue
                    }
                    if request.command == .watch {
                        watchers[connection] = ControlServer.encoded(ControlReply(ok: true, message: "watching the daemon's events"))
                        watcherCount.add(1, ordering: .relaxed)
                        continue
                    }
                    answering += 1
                    if let task = start(request, on: connection) { cancellable[connection] = task }
                case .refused(let message):
                    arriving[connection] = nil
                    answer(connection, ControlServer.encoded(ControlReply(ok: false, message: message)), &replying)
                }
            }
            let after = ContinuousClock.now
            for (connection, pending) in arriving where pending.deadline <= after {
                arriving[connection] = nil
                answer(connection, ControlServer.encoded(ControlReply(ok: false, message:
                    "no complete request line within \(limits.requestDeadline); send one JSON line and a newline")), &replying)
            }
            for (connection, pending) in replying where pending.deadline <= after {
                replying[connection] = nil
                close(connection)
            }
            if descriptors[1].revents != 0 {
                accept(into: &arriving, replying: &replying, busy: answering + watchers.count, reserve: &reserve)
            }
        }
    }

    private func accept(into arriving: inout [Int32: Arriving], replying: inout [Int32: Replying], busy: Int, reserve: inout Int32) {
        while true {
            let connection = Glibc.accept(listener, nil, nil)
            if connection < 0 {
                if errno == EINTR { continue }
                if (errno == EMFILE || errno == ENFILE), reserve >= 0 {
                    close(reserve)
                    let waiting = Glibc.accept(listener, nil, nil)
                    if waiting >= 0 { close(waiting) }
                    reserve = open("/dev/null", O_RDONLY | O_CLOEXEC)
                }
                return  // EAGAIN: none left; anything else: tried again at the next poll
            }
            _ = fcntl(connection, F_SETFD, FD_CLOEXEC)
            _ = fcntl(connection, F_SETFL, fcntl(connection, F_GETFL) | O_NONBLOCK)
            if !admits(connection) {
                // Refused before reading anything: the request of a stranger is not read.
                answer(connection, ControlServer.encoded(ControlReply(ok: false, message: "only the daemon's owner may control it")),
                       &replying)
            } else if arriving.count + replying.count + busy >= limits.maximumConnections {
                answer(connection, ControlServer.encoded(ControlReply(ok: false, message:
                    "the daemon is serving \(limits.maximumConnections) control connections already; try again")), &replying)
            } else {
                arriving[connection] = Arriving(deadline: .now + limits.requestDeadline)
            }
        }
    }

    private enum Reading {
        case waiting
        case line([UInt8])
        case refused(String)
    }

    private func read(into pending: inout Arriving, from connection: Int32) -> Reading {
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(connection, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                if errno == EAGAIN || errno == EWOULDBLOCK { return .waiting }
                return .refused("cannot read the request: \(ControlServer.lastError)")
            }
            if count == 0 {
                return .refused(pending.bytes.isEmpty
                    ? "no request came before the connection was closed"
                    : "the request ended without its newline; send one JSON line and a newline")
            }
            if let newline = chunk[..<count].firstIndex(of: UInt8(ascii: "\n")) {
                return .line(pending.bytes + chunk[..<newline])
            }
            pending.bytes += chunk[..<count]
            guard pending.bytes.count <= ControlServer.maximumRequestSize else {
                return .refused("the request is larger than \(ControlServer.maximumRequestSize) bytes")
            }
        }
    }

    /// Writes as much of `backlog` as the connection takes now; false when it is broken.
    private func flush(_ backlog: inout [UInt8], to connection: Int32) -> Bool {
        var offset = 0
        // What was written is removed once, not per write: a large reply takes many.
        defer { backlog.removeFirst(offset) }
        while offset < backlog.count {
            let written = backlog[offset...].withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
            if written < 0, errno == EINTR { continue }
            if written < 0, errno == EAGAIN || errno == EWOULDBLOCK { return true }
            guard written > 0 else { return false }
            offset += written
        }
        return true
    }

    /// Runs the request's handler; returns its task when a hang-up cancels it.
    private func start(_ request: ControlRequest, on connection: Int32) -> Task<Void, Never>? {
        let handler = self.handler
        let task = Task {
            let reply = await handler(request)
            self.finish(connection, reply)
        }
        return request.command == .ui ? task : nil
    }

    private func finish(_ connection: Int32, _ reply: ControlReply) {
        let bytes = ControlServer.encoded(reply)
        finished.withLock { $0.append((connection, bytes)) }
        wakeUp.wake()
    }

    /// Writes the reply as far as the socket takes it now and closes the connection; the rest
    /// of a larger one goes into `replying`, written as the client reads it.
    private func answer(_ connection: Int32, _ reply: [UInt8], _ replying: inout [Int32: Replying]) {
        var rest = reply
        if flush(&rest, to: connection), !rest.isEmpty {
            replying[connection] = Replying(bytes: rest, deadline: .now + limits.replyDeadline)
        } else {
            close(connection)
        }
    }
}
