#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import FoundationEssentials
public import HotspotCore
import LinuxFiles

/// What a person asks a running daemon (`hotspot-helper ui|logoff|join|disable|enable|status`).
public struct ControlRequest: Codable, Sendable, Equatable {
    public enum Command: String, Codable, Sendable {
        /// `watch` keeps the connection and streams the daemon's events, one JSON line each,
        /// after its reply line (the control socket serves it, no handler).
        case ui, logoff, disable, enable, join, status, watch
    }

    public var command: Command
    /// The network (SSID) for `ui` and `logoff`, and optionally for `disable`/`enable`.
    public var network: String?
    /// The helper for `disable`/`enable`.
    public var helper: String?
    /// What the person entered, for `ui` (`cmd.answers`).
    public var answers: [String: String]?

    public init(command: Command, network: String? = nil, helper: String? = nil, answers: [String: String]? = nil) {
        self.command = command
        self.network = network
        self.helper = helper
        self.answers = answers
    }

    /// The request a line read from the control socket (without its newline) carries.
    init(line: [UInt8]) throws {
        self = try JSONDecoder().decode(ControlRequest.self, from: Data(line))
    }
}

/// The daemon's answer: whether it did what was asked, and what came of it.
public struct ControlReply: Codable, Sendable, Equatable {
    public var ok: Bool
    /// One sentence for people: what happened, or what went wrong and what to do.
    public var message: String
    /// The network's state afterwards, for `ui` and `logoff`.
    public var state: HotspotState?
    /// For `status`.
    public var status: DaemonStatus?

    public init(ok: Bool, message: String, state: HotspotState? = nil, status: DaemonStatus? = nil) {
        self.ok = ok
        self.message = message
        self.state = state
        self.status = status
    }
}

/// What `status` answers: the daemon's networks and helpers as a person sees them.
public struct DaemonStatus: Codable, Sendable, Equatable {
    public struct Network: Codable, Sendable, Equatable {
        public var ssid: String
        public var interface: String?
        public var state: HotspotState
        /// The helper chosen for it (or in charge of it now).
        public var helper: String?
        /// What the helper asks, while the network waits for a person.
        public var questions: PersonQuestions?
        /// The last connectivity verdict (`connected`, `captive`, ...), and where the portal
        /// is when it is captive: a person can open it when no helper claims the network.
        public var connectivity: String?
        public var portalURL: String?
        public var autoJoinDisabled: Bool
        /// Seconds until the daemon tries the network again after a helper's failure or
        /// temporary failure; nil when no retry is pending.
        public var retryInSeconds: Int?
        /// The last commands, oldest first.
        public var recentCommands: [Command]

        public init(ssid: String, interface: String?, state: HotspotState, helper: String?, questions: PersonQuestions?,
                    connectivity: String?, portalURL: String?, autoJoinDisabled: Bool, retryInSeconds: Int? = nil,
                    recentCommands: [Command]) {
            self.ssid = ssid
            self.interface = interface
            self.state = state
            self.helper = helper
            self.questions = questions
            self.connectivity = connectivity
            self.portalURL = portalURL
            self.autoJoinDisabled = autoJoinDisabled
            self.retryInSeconds = retryInSeconds
            self.recentCommands = recentCommands
        }
    }

    public struct Command: Codable, Sendable, Equatable {
        public var command: HotspotCommand
        public var helper: String
        public var result: CommandResult
        public var milliseconds: Double
        public var error: String?

        public init(command: HotspotCommand, helper: String, result: CommandResult, milliseconds: Double, error: String?) {
            self.command = command
            self.helper = helper
            self.result = result
            self.milliseconds = milliseconds
            self.error = error
        }
    }

    public struct Helper: Codable, Sendable, Equatable {
        public var id: String
        public var displayName: String
        /// Switched off everywhere; `offFor` lists the networks it is switched off for.
        public var switchedOff: Bool
        public var offFor: [String]

        public init(id: String, displayName: String, switchedOff: Bool, offFor: [String]) {
            self.id = id
            self.displayName = displayName
            self.switchedOff = switchedOff
            self.offFor = offFor
        }
    }

    public var networks: [Network]
    public var helpers: [Helper]
    /// The version of the signed catalog the helpers come from; nil for a script directory.
    public var catalogVersion: String?

    public init(networks: [Network], helpers: [Helper], catalogVersion: String? = nil) {
        self.networks = networks
        self.helpers = helpers
        self.catalogVersion = catalogVersion
    }
}

public struct ControlSocketError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

/// The daemon's control socket: a Unix stream socket in the state directory that only its
/// owner (and root) may use. One JSON request line in, one JSON reply line out.
///
/// One thread serves every connection, polling them: a request has `Limits.requestDeadline`
/// to arrive whole (not per read, so a client sending a byte at a time cannot hold it), at
/// most `Limits.maximumConnections` are open at once (the rest are refused at once), and the
/// handler runs as a task, so no client holds a thread or more than its share of descriptors.
public final class ControlServer: Sendable {
    public static let fileName = "control.sock"
    /// Requests larger than this are refused rather than buffered.
    static let maximumRequestSize = 64 * 1024
    /// Far more than the largest reply or event the daemon makes (a `status` of a thousand
    /// helpers and networks waiting with SCRIPTING.md's largest questions is a few MiB);
    /// a client reads up to this, and says so past it, rather than buffer without end.
    public static let maximumReplySize = 64 * BoundedFile.mebibyte

    public struct Limits: Sendable {
        /// How long a request may take to arrive, from its connection.
        public var requestDeadline: Duration = .seconds(5)
        /// How long a client may take to read its reply, once it is ready.
        public var replyDeadline: Duration = .seconds(10)
        /// Connections open at once, waiting for their request or its reply.
        public var maximumConnections = 16

        public init() {}
    }

    public let path: String
    /// Why the control group's members cannot reach the socket, when they cannot.
    public let groupReachProblem: String?
    private let loop: ConnectionLoop

    /// Listens at `path`: mode 0600, or 0660 with the socket in `group` when one is given,
    /// whose members may then control the daemon too (a person's `hotspot-helper web`). When
    /// the daemon made the socket's directory (`madeDirectory`), the directory joins the group
    /// with search permission only (g+x), so its members reach the socket without listing or
    /// reading anything else there; a directory it did not make (`/run`, a private one) is left
    /// as it is, and `groupReachProblem` says when the group cannot reach the socket through
    /// it. A socket file left by a daemon that died is replaced; one that still answers means
    /// another daemon uses this state directory.
    public init(path: String, group: UInt32? = nil, madeDirectory: Bool = false, limits: Limits = Limits(),
                handler: @escaping @Sendable (ControlRequest) async -> ControlReply) throws(ControlSocketError) {
        var address = try Self.address(path)
        if FileManager.default.fileExists(atPath: path) {
            if (try? Self.connect(path)).map({ close($0) }) != nil {
                throw ControlSocketError("another hotspot-helper daemon answers on \(path); stop it, or give this one another --state-dir")
            }
            unlink(path)
        }
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard listener >= 0 else { throw ControlSocketError("cannot create the control socket: \(Self.lastError)") }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0, group.map({ chown(path, geteuid(), $0) }) ?? 0 == 0, chmod(path, group == nil ? 0o600 : 0o660) == 0,
              !madeDirectory || group.map({ Self.letGroupReach(directoryOf: path, group: $0) }) ?? true,
              listen(listener, 16) == 0 else {
            let reason = Self.lastError
            close(listener)
            throw ControlSocketError("cannot listen on \(path): \(reason)")
        }
        self.path = path
        groupReachProblem = group.flatMap { Self.reachProblem(directoryOf: path, group: $0) }
        let loop = ConnectionLoop(listener: listener, limits: limits, admits: { Self.peerIsAdmitted($0, group: group) },
                                  handler: handler)
        self.loop = loop
        // A thread of its own, so the poll never holds one of Swift concurrency's threads.
        DispatchQueue(label: "control-socket").async { loop.run() }
    }

    /// Writes `event` (one JSON object) to every `watch` connection; nearly free when none watch.
    public func publish(_ event: [UInt8]) {
        loop.publish(event + [UInt8(ascii: "\n")])
    }

    /// Stops accepting requests and removes the socket file.
    public func stop() {
        guard loop.stop() else { return }
        unlink(path)
    }

    deinit { stop() }

    /// A reply as it goes on the wire: one JSON line.
    static func encoded(_ reply: ControlReply) -> [UInt8] {
        guard var bytes = try? JSONEncoder().encode(reply) else { return [] }
        bytes.append(UInt8(ascii: "\n"))
        return Array(bytes)
    }

    /// The daemon's owner, root, and with `group` the group's members (by their primary or
    /// supplementary groups, as the kernel recorded them when the peer connected).
    static func peerIsAdmitted(_ connection: Int32, group: UInt32?) -> Bool {
        // struct ucred (pid, uid, gid); Glibc's module leaves it out with the other GNU extensions.
        var credentials: (pid: Int32, uid: UInt32, gid: UInt32) = (0, 0, 0)
        var length = socklen_t(MemoryLayout.size(ofValue: credentials))
        guard getsockopt(connection, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0 else { return false }
        if credentials.uid == geteuid() || credentials.uid == 0 { return true }
        guard let group else { return false }
        if credentials.gid == group { return true }
        var groups = [gid_t](repeating: 0, count: 256)
        var size = socklen_t(groups.count * MemoryLayout<gid_t>.size)
        guard getsockopt(connection, SOL_SOCKET, Self.peerGroupsOption, &groups, &size) == 0 else { return false }
        return groups.prefix(Int(size) / MemoryLayout<gid_t>.size).contains(group)
    }

    /// Puts the directory of `path` in `group` and adds search permission for it.
    private static func letGroupReach(directoryOf path: String, group: UInt32) -> Bool {
        let directory = directory(of: path)
        var status = stat()
        guard stat(directory, &status) == 0 else { return false }
        return chown(directory, status.st_uid, group) == 0 && chmod(directory, (status.st_mode & 0o7777) | 0o010) == 0
    }

    /// What keeps `group` from searching the directory of `path`, if anything does.
    private static func reachProblem(directoryOf path: String, group: UInt32) -> String? {
        let directory = directory(of: path)
        var status = stat()
        guard stat(directory, &status) == 0 else { return nil }
        let searchable = status.st_mode & 0o001 != 0 || (status.st_gid == group && status.st_mode & 0o010 != 0)
        guard !searchable else { return nil }
        return "the control group cannot reach the control socket: \(directory) is not the daemon's to change, and lets "
            + "neither the group nor others search it; give the group search permission there (chgrp and chmod g+x), "
            + "or put the socket in a directory that does (--control-socket)"
    }

    private static func directory(of path: String) -> String {
        let directory = path.lastIndex(of: "/").map { String(path[..<$0]) } ?? "."
        return directory.isEmpty ? "/" : directory
    }

    /// SO_PEERGROUPS of <asm-generic/socket.h>, which Glibc's module leaves out.
    static let peerGroupsOption: Int32 = 59

    /// The id of the group called `name`, or nil.
    public static func groupID(named name: String) -> UInt32? {
        var entry = group()
        var found: UnsafeMutablePointer<group>?
        var buffer = [CChar](repeating: 0, count: 16 * 1024)
        guard getgrnam_r(name, &entry, &buffer, buffer.count, &found) == 0, found != nil else { return nil }
        return entry.gr_gid
    }

    static var lastError: String { String(cString: strerror(errno)) }

    static func address(_ path: String) throws(ControlSocketError) -> sockaddr_un {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard bytes.count < capacity else {
            throw ControlSocketError("the control socket path \(path) is longer than \(capacity - 1) bytes; use a shorter --state-dir")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        return address
    }

    static func connect(_ path: String) throws(ControlSocketError) -> Int32 {
        var address = try address(path)
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw ControlSocketError("cannot create a socket: \(lastError)") }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else {
            let reason = lastError
            close(descriptor)
            throw ControlSocketError(reason)
        }
        return descriptor
    }

    /// How reading a reply line ended.
    enum ReadLine {
        case line([UInt8])
        /// The other end closed first, after `partial` bytes.
        case closed(partial: Int)
        case timedOut
        case tooLarge
        case failed(String)
    }

    /// Bytes up to the first newline (without it), reading at most `limit` bytes.
    static func readLine(_ descriptor: Int32, limit: Int) -> ReadLine {
        var line: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while line.count <= limit {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            if count < 0 { return errno == EAGAIN || errno == EWOULDBLOCK ? .timedOut : .failed(lastError) }
            guard count > 0 else { return .closed(partial: line.count) }
            if let newline = chunk[0..<count].firstIndex(of: UInt8(ascii: "\n")) {
                return line.count + newline <= limit ? .line(line + chunk[0..<newline]) : .tooLarge
            }
            line += chunk[0..<count]
        }
        return .tooLarge
    }

    static func writeAll(_ descriptor: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if written < 0, errno == EINTR { continue }
            guard written > 0 else { return false }
            offset += written
        }
        return true
    }
}

/// The other end: what `hotspot-helper ui|logoff|disable|enable|status` and `web` use.
public enum ControlClient {
    /// Follows the daemon's events (`watch`): `lines` yields each event's JSON, in order,
    /// until the daemon goes away or `stop` is called.
    public final class Watch: Sendable {
        private let descriptor: Int32
        public let lines: AsyncStream<[UInt8]>

        public init(path: String) throws(ControlSocketError) {
            let descriptor: Int32
            do {
                descriptor = try ControlServer.connect(path)
            } catch {
                throw ControlSocketError("no hotspot-helper daemon answers on \(path) (\(error))")
            }
            var request = Array((try? JSONEncoder().encode(ControlRequest(command: .watch))) ?? Data())
            request.append(UInt8(ascii: "\n"))
            guard ControlServer.writeAll(descriptor, request),
                  case .line(let line) = ControlServer.readLine(descriptor, limit: ControlServer.maximumReplySize),
                  let reply = try? JSONDecoder().decode(ControlReply.self, from: Data(line)), reply.ok else {
                close(descriptor)
                throw ControlSocketError("the daemon at \(path) refused to be watched")
            }
            self.descriptor = descriptor
            let (lines, continuation) = AsyncStream.makeStream(of: [UInt8].self, bufferingPolicy: .bufferingNewest(1024))
            self.lines = lines
            // A thread of its own: reading blocks.
            DispatchQueue(label: "control-watch").async {
                var reader = LineReader(descriptor: descriptor)
                while let line = reader.next() { continuation.yield(line) }
                continuation.finish()
            }
        }

        /// Ends `lines` (the reading thread sees the socket shut down).
        public func stop() { shutdown(descriptor, Int32(SHUT_RDWR)) }

        deinit {
            stop()
            close(descriptor)
        }
    }

    /// Sends one request to the daemon listening at `path` and waits for its reply.
    /// `timeout` bounds the wait (a `ui` request runs the helper's present_ui).
    public static func send(_ request: ControlRequest, to path: String, timeout: Duration = .seconds(120))
        throws(ControlSocketError) -> ControlReply
    {
        let descriptor: Int32
        do {
            descriptor = try ControlServer.connect(path)
        } catch {
            guard errno != EACCES else {
                throw ControlSocketError("the daemon's control socket \(path) is not open to you (\(error)): it lets in the daemon's "
                    + "owner, and the members of the group its --control-group names")
            }
            throw ControlSocketError("no hotspot-helper daemon answers on \(path) (\(error)); is `hotspot-helper run` running with this --state-dir or --control-socket?")
        }
        defer { close(descriptor) }
        var wait = timeval(tv_sec: Int(timeout.components.seconds), tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
        guard var bytes = try? JSONEncoder().encode(request) else { throw ControlSocketError("cannot encode the request") }
        bytes.append(UInt8(ascii: "\n"))
        // A daemon that refuses this peer answers and closes without reading the request, so
        // the write can fail while the refusal waits to be read: the reply counts first.
        let sent = ControlServer.writeAll(descriptor, Array(bytes))
        let sendError = ControlServer.lastError
        switch ControlServer.readLine(descriptor, limit: ControlServer.maximumReplySize) {
        case .line(let line):
            do {
                return try JSONDecoder().decode(ControlReply.self, from: Data(line))
            } catch {
                throw ControlSocketError("the daemon's reply (\(line.count) bytes) is not a control reply: \(error)")
            }
        case .closed(let partial):
            guard sent else { throw ControlSocketError("the daemon closed the connection: \(sendError)") }
            throw ControlSocketError(partial == 0
                ? "the daemon closed the connection without a reply"
                : "the daemon closed the connection after \(partial) bytes of its reply")
        case .timedOut:
            throw ControlSocketError("the daemon gave no reply within \(timeout)")
        case .tooLarge:
            throw ControlSocketError("the daemon's reply is larger than \(ControlServer.maximumReplySize / BoundedFile.mebibyte) MiB; not read")
        case .failed(let reason):
            throw ControlSocketError("cannot read the daemon's reply: \(reason)")
        }
    }
}

/// Lines from a stream socket, each up to `ControlServer.maximumReplySize` (longer ones end it).
struct LineReader {
    let descriptor: Int32
    private var buffered: [UInt8] = []

    init(descriptor: Int32) { self.descriptor = descriptor }

    mutating func next() -> [UInt8]? {
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            if let newline = buffered.firstIndex(of: UInt8(ascii: "\n")) {
                defer { buffered.removeFirst(newline + 1) }
                return Array(buffered[..<newline])
            }
            guard buffered.count <= ControlServer.maximumReplySize else { return nil }
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return nil }
            buffered += chunk[..<count]
        }
    }
}
