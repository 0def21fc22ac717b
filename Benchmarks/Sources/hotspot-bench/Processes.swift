#if canImport(Glibc)
import Glibc
#endif
import LuaSandbox
import Spawning

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// The stock interpreter from Debian's lua5.4 package, the baseline for in-process Lua.
enum StockLua {
    static let path = "/usr/bin/lua5.4"

    /// Runs `program` (given on standard input, so its size is not limited by argv) and
    /// returns what it printed.
    static func run(_ program: String) throws -> String {
        try runProcess([path, "-"], input: Array(program.utf8))
    }
}

/// Runs a program to its end with `input` on its standard input; returns its standard
/// output, or throws when it cannot start or does not exit with status 0.
@discardableResult
func runProcess(_ arguments: [String], input: [UInt8] = []) throws -> String {
    let child = try ChildProcess(arguments)
    _ = child.send(input)  // if it stopped reading, its exit status tells why
    child.closeInput()
    var output: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 1 << 14)
    while case let count = child.receive(into: &chunk), count > 0 { output += chunk[0..<count] }
    let status = child.wait()
    guard status == 0 else { throw BenchError("\(arguments[0]) failed (wait status \(status))") }
    return String(decoding: output, as: UTF8.self)
}

/// One run of a program, timed from `posix_spawn`.
struct TimedRun {
    /// When it was spawned, on `Deadline.now`'s clock, for events other parts of the bench
    /// stamp on it (a portal receiving a request).
    let start: Int64
    /// Nanoseconds to the first chunk of its output that completed a line containing the
    /// marker; nil when none did.
    let toMarker: Double?
    /// Nanoseconds until it closed its standard output and was reaped.
    let toExit: Double
    let output: String
}

/// Runs a program to its end like `runProcess`, timing it from the spawn: to the first
/// output line containing `marker`, read as it arrives, and to the exit. Throws when it
/// does not exit with status 0, or the marker never came.
func timedRun(_ arguments: [String], marker: String? = nil) throws -> TimedRun {
    let start = Deadline.now.nanoseconds
    let child = try ChildProcess(arguments)
    child.closeInput()
    var output: [UInt8] = []
    var toMarker: Double?
    var chunk = [UInt8](repeating: 0, count: 1 << 14)
    while case let count = child.receive(into: &chunk), count > 0 {
        output += chunk[0..<count]
        // Only whole lines are searched, and only until the marker is found.
        if let marker, toMarker == nil, let lastLine = output.lastIndex(of: UInt8(ascii: "\n")),
           String(decoding: output[...lastLine], as: UTF8.self).contains(marker) {
            toMarker = nanoseconds(since: start)
        }
    }
    let status = child.wait()
    let toExit = nanoseconds(since: start)
    let text = String(decoding: output, as: UTF8.self)
    guard status == 0 else { throw BenchError("\(arguments.joined(separator: " ")) failed (wait status \(status)): \(text.suffix(400))") }
    if let marker, toMarker == nil { throw BenchError("\(arguments[0]) never wrote a line with \(marker)") }
    return TimedRun(start: start, toMarker: toMarker, toExit: toExit, output: text)
}

/// A process started with pipes to its standard input and from its standard output.
final class ChildProcess {
    let pid: pid_t
    private var input: Int32
    private let output: Int32
    /// Output read but not yet returned by `readLine`.
    private var unread: [UInt8] = []
    /// When the last read of its output returned (CLOCK_MONOTONIC nanoseconds).
    private var lastRead: Int64 = 0

    init(_ arguments: [String]) throws {
        // Close-on-exec, so a child started later does not hold this one's pipes open (and
        // keep it from seeing the end of its input).
        guard let toChild = closeOnExecPipe(), let fromChild = closeOnExecPipe() else {
            throw BenchError("cannot create a pipe: \(String(cString: strerror(errno)))")
        }
        // The child's ends are its own once it is started.
        defer {
            close(toChild.readEnd)
            close(fromChild.writeEnd)
        }
        do {
            pid = try spawnProcess(
                arguments[0], arguments: Array(arguments.dropFirst()),
                descriptors: [.duplicate(toChild.readEnd, as: STDIN_FILENO), .duplicate(fromChild.writeEnd, as: STDOUT_FILENO)])
        } catch {
            close(toChild.writeEnd)
            close(fromChild.readEnd)
            throw BenchError("cannot start \(arguments[0]): \(error)")
        }
        input = toChild.writeEnd
        output = fromChild.readEnd
    }

    deinit {
        closeInput()
        close(output)
    }

    /// Writes all of `bytes` to its standard input; false if it stopped reading.
    func send(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = write(input, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0, errno == EINTR { continue }
                guard written > 0 else { return false }
                offset += written
            }
            return true
        }
    }

    func closeInput() {
        guard input >= 0 else { return }
        close(input)
        input = -1
    }

    /// Reads what it wrote to its standard output next into the start of `buffer`; how
    /// many bytes, 0 once it closed it.
    func receive(into buffer: inout [UInt8]) -> Int {
        while true {
            let count = buffer.withUnsafeMutableBytes { read(output, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            if count > 0 { lastRead = Deadline.now.nanoseconds }
            return max(count, 0)
        }
    }

    /// Reads its output until a whole line contains `marker`, and returns that line; the
    /// lines before it are consumed. Throws when the output ends first, or when `deadline`
    /// (CLOCK_MONOTONIC nanoseconds) passes first.
    func readLine(containing marker: String, before deadline: Int64? = nil) throws -> String {
        try stampedLine(containing: marker, before: deadline).line
    }

    /// `readLine(containing:before:)`, with when the line arrived: the CLOCK_MONOTONIC
    /// nanoseconds at which the read that completed it returned. What is left unread after a
    /// line always came with the last read, so a line found there arrived then too.
    func stampedLine(containing marker: String, before deadline: Int64? = nil) throws -> (line: String, arrived: Int64) {
        var chunk = [UInt8](repeating: 0, count: 1 << 14)
        while true {
            while let newline = unread.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: unread[..<newline], as: UTF8.self)
                unread.removeSubrange(...newline)
                if line.contains(marker) { return (line, lastRead) }
            }
            if let deadline, !outputArrives(before: deadline) { throw BenchError("no line with \(marker) in time") }
            let count = receive(into: &chunk)
            guard count > 0 else { throw BenchError("the output ended before a line with \(marker)") }
            unread += chunk[0..<count]
        }
    }

    /// Reads its output until `deadline` (CLOCK_MONOTONIC nanoseconds), so that a process
    /// writing all along never blocks on a full pipe, and returns the whole lines read (after
    /// those `readLine` consumed). Throws when the output ends first.
    func readLines(until deadline: Int64) throws -> [String] {
        var chunk = [UInt8](repeating: 0, count: 1 << 14)
        var lines: [String] = []
        while true {
            while let newline = unread.firstIndex(of: UInt8(ascii: "\n")) {
                lines.append(String(decoding: unread[..<newline], as: UTF8.self))
                unread.removeSubrange(...newline)
            }
            guard outputArrives(before: deadline) else { return lines }
            let count = receive(into: &chunk)
            guard count > 0 else { throw BenchError("the output ended before the time was up") }
            unread += chunk[0..<count]
        }
    }

    /// Waits until its output can be read; false when `deadline` (CLOCK_MONOTONIC
    /// nanoseconds) passed first.
    private func outputArrives(before deadline: Int64) -> Bool {
        var ready = pollfd(fd: output, events: Int16(POLLIN), revents: 0)
        while case let remaining = deadline - Deadline.now.nanoseconds, remaining > 0 {
            if poll(&ready, 1, Int32(min(remaining / 1_000_000 + 1, 1000))) > 0 { return true }
        }
        return false
    }

    /// Asks it to stop with SIGTERM and waits for it; its wait status.
    func terminate() -> Int32 {
        kill(pid, SIGTERM)
        return wait()
    }

    /// Waits for it to end; its wait status.
    func wait() -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        return status
    }
}

/// What /proc/<pid>/status says about a process's resident memory.
struct ResidentMemory {
    /// VmRSS: every resident page, shared libraries included.
    let total: Int
    /// RssAnon: the process's own heap and stacks.
    let anonymous: Int

    init(pid: Int32) throws {
        try self.init(status: readFile("/proc/\(pid)/status"))
    }

    /// Parses the text of a /proc/<pid>/status file.
    init(status: String) throws {
        total = try bytes(of: "VmRSS", in: status)
        anonymous = try bytes(of: "RssAnon", in: status)
    }
}

/// The resident memory of a process and its children (a supervisor and its worker
/// processes), added up.
struct ProcessTreeMemory {
    let processes: Int
    /// VmRSS added up: a page the processes share (their common libraries) counts once
    /// for each of them.
    let resident: Int
    /// RssAnon added up: their own heaps and stacks.
    let anonymous: Int
    /// Pss added up (from /proc/<pid>/smaps_rollup): each shared page is divided among the
    /// processes that map it, so the sum counts it once.
    let proportional: Int
    /// The physical pages resident in any of them, each counted once however many of them
    /// map it: the RAM the processes keep resident together. Nil when page frame numbers
    /// are hidden (reading them needs root).
    let distinct: Int?

    init(root: pid_t) throws {
        let pids = [root] + (try childProcesses(of: root))
        var resident = 0
        var anonymous = 0
        var proportional = 0
        for pid in pids {
            let memory = try ResidentMemory(pid: pid)
            resident += memory.total
            anonymous += memory.anonymous
            proportional += try bytes(of: "Pss", in: readFile("/proc/\(pid)/smaps_rollup"))
        }
        processes = pids.count
        self.resident = resident
        self.anonymous = anonymous
        self.proportional = proportional
        distinct = distinctResidentBytes(of: pids)
    }
}

/// Adds up the distinct page frames behind the resident pages of `pids`, from each
/// process's maps and pagemap (one 64-bit entry per virtual page: bit 63 present, bits
/// 0-54 the frame number, which reads as 0 without root).
private func distinctResidentBytes(of pids: [pid_t]) -> Int? {
    let pageSize = UInt64(sysconf(Int32(_SC_PAGESIZE)))
    var frames = Set<UInt64>()
    var entries = [UInt64](repeating: 0, count: 1 << 16)
    for pid in pids {
        guard let maps = try? readFile("/proc/\(pid)/maps") else { return nil }
        let pagemap = open("/proc/\(pid)/pagemap", O_RDONLY)
        guard pagemap >= 0 else { return nil }
        defer { close(pagemap) }
        for line in maps.split(separator: "\n") {
            let bounds = line.prefix { $0 != " " }.split(separator: "-").compactMap { UInt64($0, radix: 16) }
            guard bounds.count == 2, !line.hasSuffix("[vsyscall]") else { continue }
            var page = bounds[0] / pageSize
            let end = bounds[1] / pageSize
            while page < end {
                let wanted = Int(min(end - page, UInt64(entries.count)))
                let read = entries.withUnsafeMutableBytes { pread(pagemap, $0.baseAddress, wanted * 8, off_t(page * 8)) }
                guard read > 0 else { break }
                for entry in entries.prefix(read / 8) where entry & (1 << 63) != 0 {
                    let frame = entry & ((1 << 55) - 1)
                    guard frame != 0 else { return nil }
                    frames.insert(frame)
                }
                page += UInt64(read / 8)
            }
        }
    }
    return frames.count * Int(pageSize)
}

/// A size field of a /proc file, such as the line "VmRSS:\t    2476 kB", in bytes.
private func bytes(of field: String, in text: String) throws -> Int {
    try number(of: field, in: text) * 1024
}

/// The number in a field of a /proc file, such as the line "voluntary_ctxt_switches:\t42".
private func number(of field: String, in text: String) throws -> Int {
    let line = text.split(separator: "\n").first { $0.hasPrefix(field + ":") }
    guard let line, let number = Int(line.filter(\.isNumber)) else {
        throw BenchError("no \(field) in a /proc file")
    }
    return number
}

/// The processes whose parent is `parent`, from /proc/<pid>/stat (whose fourth field is
/// the parent's id). Scanning all of /proc, rather than /proc/<pid>/task/*/children,
/// because that lists each thread's children separately and the supervisor starts
/// workers from whichever thread it is on.
func childProcesses(of parent: pid_t) throws -> [pid_t] {
    try numberedEntries(of: "/proc").filter { pid in
        // A process that ended since the listing has no stat any more.
        guard pid != parent, let fields = try? statFields(of: pid), fields.count > 1 else { return false }
        return pid_t(fields[1]) == parent
    }
}

/// The entries of a /proc directory that are numbers: process ids in /proc, thread ids in
/// /proc/<pid>/task.
private func numberedEntries(of path: String) throws -> [pid_t] {
    guard let directory = opendir(path) else { throw BenchError("cannot list \(path)") }
    defer { closedir(directory) }
    var numbers: [pid_t] = []
    while let entry = readdir(directory) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        if let number = pid_t(name) { numbers.append(number) }
    }
    return numbers
}

/// The context switches of every thread of a process and of its children (a daemon and its
/// workers) over a window, sampled: each thread's voluntary and involuntary switches from
/// /proc/<pid>/task/<tid>/status. A thread first seen after the first sample started within
/// the window, so all of its switches count; one that ends between samples takes its last
/// second's with it.
struct ThreadSwitches {
    struct Thread {
        /// "daemon" or "worker", and the thread's name (its comm).
        let owner: String
        let name: String
        let first: Int
        var last: Int
    }

    private var threads: [pid_t: Thread] = [:]
    private var sampled = false

    /// Reads every thread of `root` and of its children now.
    mutating func sample(root: pid_t) throws {
        for pid in [root] + (try childProcesses(of: root)) {
            for thread in try numberedEntries(of: "/proc/\(pid)/task") {
                // A thread that ended since the listing has no status any more.
                guard let status = try? readFile("/proc/\(pid)/task/\(thread)/status") else { continue }
                let switches = try number(of: "voluntary_ctxt_switches", in: status) + number(of: "nonvoluntary_ctxt_switches", in: status)
                if threads[thread] == nil {
                    let name = status.split(separator: "\n").first { $0.hasPrefix("Name:") }?.dropFirst(5).filter { !$0.isWhitespace } ?? "?"
                    threads[thread] = Thread(owner: pid == root ? "daemon" : "worker", name: name, first: sampled ? 0 : switches, last: switches)
                }
                threads[thread]?.last = switches
            }
        }
        sampled = true
    }

    /// The switches within the window, all threads together.
    var total: Int { threads.values.map { $0.last - $0.first }.reduce(0, +) }

    /// The threads that switched, most first, those of one name in one process together:
    /// "daemon's -qos.overcommit 60, worker's hotspot-helper 2".
    var busiest: String {
        let byName = Dictionary(threads.values.map { ("\($0.owner)'s \($0.name)", $0.last - $0.first) }, uniquingKeysWith: +)
        let named = byName.filter { $0.value > 0 }.sorted { ($0.value, $1.key) > ($1.value, $0.key) }.map { "\($0.key) \($0.value)" }
        return named.isEmpty ? "none" : named.joined(separator: ", ")
    }
}

/// The CPU time a process has used, user and system, in nanoseconds, from its CPU clock
/// (where /proc/<pid>/stat counts 10 ms ticks): fine enough for the CPU of one join.
func processCPUTime(_ pid: pid_t) throws -> Double {
    var clock = clockid_t()
    var time = timespec()
    guard clock_getcpuclockid(pid, &clock) == 0, clock_gettime(clock, &time) == 0 else {
        throw BenchError("no CPU clock for process \(pid)")
    }
    return Double(time.tv_sec) * 1e9 + Double(time.tv_nsec)
}

/// The CPU time, in nanoseconds, that the bench's own process (the supervisor) and an
/// engine's worker processes have used so far.
struct CPUUse {
    let supervisor: Double
    let workers: Double

    static func now(workers: [pid_t]) throws -> CPUUse {
        CPUUse(supervisor: try processCPUTime(getpid()), workers: try workers.map(processCPUTime).reduce(0, +))
    }

    /// Both processes together.
    var total: Double { supervisor + workers }

    /// What was used between `start` and this.
    func since(_ start: CPUUse) -> CPUUse {
        CPUUse(supervisor: supervisor - start.supervisor, workers: workers - start.workers)
    }

    /// What was used between `start` and this, per item of `count`.
    func perItem(since start: CPUUse, count: Double) -> String {
        "worker \(duration(nanoseconds: (workers - start.workers) / count)), supervisor \(duration(nanoseconds: (supervisor - start.supervisor) / count))"
    }
}

/// The fields of /proc/<pid>/stat after the process's name: "1234 (name, which may hold
/// spaces and parentheses) S 1200 ..." gives ["S", "1200", ...].
private func statFields(of pid: pid_t) throws -> [Substring] {
    let stat = try readFile("/proc/\(pid)/stat")
    guard let close = stat.lastIndex(of: ")") else { throw BenchError("no fields in /proc/\(pid)/stat") }
    return stat[stat.index(after: close)...].split(separator: " ")
}

private func readFile(_ path: String) throws -> String {
    let descriptor = open(path, O_RDONLY)
    guard descriptor >= 0 else { throw BenchError("cannot open \(path): \(String(cString: strerror(errno)))") }
    defer { close(descriptor) }
    var contents: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
        let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        if count < 0, errno == EINTR { continue }
        guard count > 0 else { break }
        contents += chunk[0..<count]
    }
    return String(decoding: contents, as: UTF8.self)
}
