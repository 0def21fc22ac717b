#if canImport(Glibc)
import Glibc
#endif

/// Frames between the supervisor and a worker process over a Unix stream socket:
/// u32 length of what follows, u8 kind, u64 request id, then the kind's fields.
enum WorkerFrame: Sendable {
    /// Supervisor to worker, first frame: the sandbox every state is built with, each
    /// script's memory cap and the cap of all its scripts together.
    case configure(prelude: ScriptSource?, memoryLimit: UInt64, workerMemoryLimit: UInt64)
    /// Load (or replace, keeping the old version if the new one fails) a script.
    case load(script: UInt32, source: ScriptSource, deadline: Int64)
    /// A call; `deadline` and `cpuLimit` are in nanoseconds, 0 for none.
    case call(script: UInt32, entry: String, arguments: [UInt8], deadline: Int64, cpuLimit: Int64)
    case unload(script: UInt32)
    /// Stop the request with this frame's id.
    case cancel
    /// Which calls have not started, or wait for their group: the supervisor asks before it
    /// ends the worker for calls past their deadlines, to tell those calls from the others.
    case survey
    /// Worker to supervisor: what a load or call produced.
    case outcome(RawOutcome)
    /// Worker to supervisor, answering `survey`: the calls that have not run (queued, or
    /// waiting for their group).
    case unstarted(ids: [UInt64])

    static let maximumLength = 64 << 20

    private enum Kind: UInt8 {
        case configure = 1, load, call, unload, cancel, outcome, survey, unstarted
    }

    func encoded(id: UInt64) -> [UInt8] {
        var body: [UInt8] = []
        func string(_ bytes: [UInt8]) {
            LuaValueCodec.appendUInt32(UInt32(bytes.count), to: &body)
            body.append(contentsOf: bytes)
        }
        func text(_ text: String) { string(Array(text.utf8)) }
        func source(_ source: ScriptSource) {
            text(source.chunkName)
            string(source.text)
        }
        let kind: Kind
        switch self {
        case .configure(let prelude, let memoryLimit, let workerMemoryLimit):
            kind = .configure
            LuaValueCodec.appendUInt64(memoryLimit, to: &body)
            LuaValueCodec.appendUInt64(workerMemoryLimit, to: &body)
            body.append(prelude == nil ? 0 : 1)
            if let prelude { source(prelude) }
        case .load(let script, let scriptSource, let deadline):
            kind = .load
            LuaValueCodec.appendUInt32(script, to: &body)
            source(scriptSource)
            LuaValueCodec.appendUInt64(UInt64(bitPattern: deadline), to: &body)
        case .call(let script, let entry, let arguments, let deadline, let cpuLimit):
            kind = .call
            LuaValueCodec.appendUInt32(script, to: &body)
            text(entry)
            string(arguments)
            LuaValueCodec.appendUInt64(UInt64(bitPattern: deadline), to: &body)
            LuaValueCodec.appendUInt64(UInt64(bitPattern: cpuLimit), to: &body)
        case .unload(let script):
            kind = .unload
            LuaValueCodec.appendUInt32(script, to: &body)
        case .cancel:
            kind = .cancel
        case .survey:
            kind = .survey
        case .unstarted(let ids):
            kind = .unstarted
            LuaValueCodec.appendUInt32(UInt32(ids.count), to: &body)
            for id in ids { LuaValueCodec.appendUInt64(id, to: &body) }
        case .outcome(let outcome):
            kind = .outcome
            LuaValueCodec.appendUInt32(UInt32(bitPattern: outcome.status), to: &body)
            string(outcome.results)
            text(outcome.message)
            text(outcome.location)
            text(outcome.traceback)
            string(outcome.logs)
            LuaValueCodec.appendUInt32(outcome.droppedLogs, to: &body)
        }
        var frame: [UInt8] = []
        frame.reserveCapacity(body.count + 13)
        LuaValueCodec.appendUInt32(UInt32(body.count + 9), to: &frame)
        frame.append(kind.rawValue)
        LuaValueCodec.appendUInt64(id, to: &frame)
        frame.append(contentsOf: body)
        return frame
    }

    /// The encoded call or load frame `bytes` (with its length) with `deadline` in place of
    /// its own, and its id; nil for any other frame.
    static func withDeadline(_ bytes: [UInt8], _ deadline: Int64) -> [UInt8]? {
        guard bytes.count > 4, let (id, frame) = try? decode(Array(bytes[4...])) else { return nil }
        switch frame {
        case .call(let script, let entry, let arguments, _, let cpuLimit):
            return WorkerFrame.call(script: script, entry: entry, arguments: arguments, deadline: deadline, cpuLimit: cpuLimit)
                .encoded(id: id)
        case .load(let script, let source, _):
            return WorkerFrame.load(script: script, source: source, deadline: deadline).encoded(id: id)
        default:
            return nil
        }
    }

    /// Decodes one frame body (everything after the length).
    static func decode(_ bytes: [UInt8]) throws(LuaValueCodec.MalformedError) -> (id: UInt64, frame: WorkerFrame) {
        var reader = ByteReader(bytes)
        guard let kind = Kind(rawValue: try reader.uint8()) else { throw .init() }
        let id = try reader.uint64()
        func source() throws(LuaValueCodec.MalformedError) -> ScriptSource {
            ScriptSource(chunkName: try reader.text(), text: try reader.string())
        }
        switch kind {
        case .configure:
            let memoryLimit = try reader.uint64()
            let workerMemoryLimit = try reader.uint64()
            let prelude = try reader.uint8() == 1 ? try source() : nil
            return (id, .configure(prelude: prelude, memoryLimit: memoryLimit, workerMemoryLimit: workerMemoryLimit))
        case .load:
            let script = try reader.uint32()
            let scriptSource = try source()
            return (id, .load(script: script, source: scriptSource, deadline: Int64(bitPattern: try reader.uint64())))
        case .call:
            let script = try reader.uint32()
            let entry = try reader.text()
            let arguments = try reader.string()
            let deadline = Int64(bitPattern: try reader.uint64())
            return (id, .call(script: script, entry: entry, arguments: arguments, deadline: deadline,
                              cpuLimit: Int64(bitPattern: try reader.uint64())))
        case .unload:
            return (id, .unload(script: try reader.uint32()))
        case .cancel:
            return (id, .cancel)
        case .survey:
            return (id, .survey)
        case .unstarted:
            let count = try reader.uint32()
            guard Int(count) * 8 <= reader.remaining else { throw .init() }
            var ids: [UInt64] = []
            for _ in 0..<count { ids.append(try reader.uint64()) }
            return (id, .unstarted(ids: ids))
        case .outcome:
            let status = Int32(bitPattern: try reader.uint32())
            let results = try reader.string()
            let message = try reader.text()
            let location = try reader.text()
            let traceback = try reader.text()
            let logs = try reader.string()
            let dropped = try reader.uint32()
            return (id, .outcome(RawOutcome(status: status, results: results, message: message,
                                            location: location, traceback: traceback, logs: logs,
                                            droppedLogs: dropped)))
        }
    }
}

/// Splits a byte stream into frame bodies.
struct FrameAssembler {
    private var buffer: [UInt8] = []
    private var start = 0

    mutating func append(_ bytes: UnsafeRawBufferPointer) { buffer.append(contentsOf: bytes) }

    /// The next complete frame body, nil when more bytes are needed.
    mutating func next() throws(LuaValueCodec.MalformedError) -> [UInt8]? {
        guard buffer.count - start >= 4 else { return compact() }
        var length = 0
        for index in 0..<4 { length |= Int(buffer[start + index]) << (8 * index) }
        guard length >= 9, length <= WorkerFrame.maximumLength else { throw .init() }
        guard buffer.count - start - 4 >= length else { return compact() }
        let body = Array(buffer[start + 4..<start + 4 + length])
        start += 4 + length
        return body
    }

    private mutating func compact() -> [UInt8]? {
        if start > 0 {
            buffer.removeFirst(start)
            start = 0
        }
        return nil
    }
}

/// Reads what is available on a socket into `buffer`: the byte count, 0 at end of stream,
/// -1 on error. Frames come in bursts (a request right after an answer), so it polls
/// without blocking for up to 100 µs first: on a virtual machine a thread that
/// sleeps costs about 20 µs to wake, a large share of a round trip. Between polls it
/// yields the core to any thread that has work (in paired runs: round trip p50 22 µs
/// instead of 55 µs, arbitration of 100 helpers 5% sooner, than polling without yielding).
func receive(_ descriptor: Int32, into buffer: inout [UInt8]) -> Int {
    let spinUntil = Deadline.after(.microseconds(100))
    while true {
        let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        if count >= 0 { return count }
        switch errno {
        case EINTR: continue
        case EAGAIN where !spinUntil.hasPassed:
            sched_yield()
            continue
        case EAGAIN:
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            _ = poll(&poller, 1, -1)
        default: return -1
        }
    }
}
