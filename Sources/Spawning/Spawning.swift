#if canImport(Glibc)
import Glibc
#endif
internal import CGlibcExtensions

/// What a spawned program finds at one of its descriptor numbers.
public enum ChildDescriptor: Sendable {
    /// A duplicate of this process's `descriptor` (dup2), close-on-exec or not.
    case duplicate(Int32, as: Int32)
    /// A file opened afresh in the child, such as /dev/null.
    case open(String, flags: Int32, as: Int32)
}

/// posix_spawn refused to start a program; `description` is the system's reason.
public struct SpawnError: Error, Sendable, CustomStringConvertible {
    public let code: Int32
    public var description: String { String(cString: strerror(code)) }
}

/// Starts `executable` with `arguments` (after its own path as argv[0]) through posix_spawn,
/// the one way every process here starts another: the engine its workers, the OS glue the
/// platform's tools, the bench the programs it times. Returns the child's pid.
///
/// - Parameters:
///   - descriptors: set up in the child in this order; other descriptors it inherits as
///     usual (all but the close-on-exec ones).
///   - firstClosed: when given, the child gets no descriptor from this number up, close-on-exec
///     or not: not one of the parent's sockets, nor the write end of a pipe another reader
///     waits on for end of file.
///   - environmentOverrides: "NAME=value" entries in place of the inherited ones of the same
///     names; without any the child gets this process's environment as it is.
///   - resettingSignals: the child starts with no signal blocked as well, rather than with
///     this thread's mask. Every signal's action is the default in any case: an ignored one
///     would stay ignored across exec, so a worker started after the daemon ignores SIGTERM
///     (to take it as an event) could no longer be stopped by it.
public func spawnProcess(_ executable: String, arguments: [String] = [], descriptors: [ChildDescriptor] = [],
                         closingFrom firstClosed: Int32? = nil, environmentOverrides: [String] = [],
                         resettingSignals: Bool = false) throws(SpawnError) -> Int32 {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    for descriptor in descriptors {
        switch descriptor {
        case .duplicate(let source, let number): posix_spawn_file_actions_adddup2(&actions, source, number)
        case .open(let path, let flags, let number): posix_spawn_file_actions_addopen(&actions, number, path, flags, 0)
        }
    }
    if let firstClosed { spawning_add_close_from(&actions, firstClosed) }

    let argv = ([executable] + arguments).map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    // The inherited entries are borrowed from `environ`, not copied: a worker's start is on
    // the engine's cold-start path.
    let overrides = environmentOverrides.map { strdup($0) }
    defer { overrides.forEach { free($0) } }
    var environment: [UnsafeMutablePointer<CChar>?] = []
    if !overrides.isEmpty {
        let overriddenNames = environmentOverrides.map { String($0.prefix { $0 != "=" }) + "=" }
        environment = overrides
        var index = 0
        while let entry = environ[index] {
            if !overriddenNames.contains(where: { strncmp(entry, $0, $0.utf8.count) == 0 }) { environment.append(entry) }
            index += 1
        }
        environment.append(nil)
    }

    var pid: pid_t = 0
    let status = environment.withUnsafeBufferPointer { builtEnvironment in
        let envp = overrides.isEmpty ? UnsafePointer(environ) : builtEnvironment.baseAddress
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var signals = sigset_t()
        sigfillset(&signals)
        posix_spawnattr_setsigdefault(&attributes, &signals)
        if resettingSignals {
            sigemptyset(&signals)
            posix_spawnattr_setsigmask(&attributes, &signals)
        }
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | (resettingSignals ? POSIX_SPAWN_SETSIGMASK : 0)))
        return posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
    }
    guard status == 0 else { throw SpawnError(code: status) }
    return pid
}

/// A pipe whose ends are close-on-exec from the start, so that no process spawned by
/// another thread meanwhile holds them open; nil when the system has none to give (errno
/// says why).
public func closeOnExecPipe() -> (readEnd: Int32, writeEnd: Int32)? {
    var ends: [Int32] = [-1, -1]
    guard spawning_close_on_exec_pipe(&ends) == 0 else { return nil }
    return (ends[0], ends[1])
}
