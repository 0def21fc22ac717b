#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import HotspotSystem
import Synchronization
public import HotspotCore

/// The state directory: `state.json` and `store/<helper>.json`. Every write is atomic
/// (temporary file, fsync, rename, fsync of the directory), so a `kill -9` at any moment
/// leaves either the old or the new file. A file that cannot be read is moved aside and
/// reported, never silently dropped. Without a path everything stays in memory.
public final class StateDirectory: HotspotPersistence {
    public let path: String?
    private let state: Mutex<PersistentState>
    private let stores: Mutex<[String: [String: [String: String]]]>
    /// Files that were set aside because they could not be read.
    public let warnings: [String]
    /// Holds the directory for this process (see `OwnerLock`); nil in memory.
    private let owner: OwnerLock?

    public static let storeLimit = 16384

    public init(path: String?) throws {
        self.path = path
        var warnings: [String] = []
        var loaded = PersistentState()
        var stores: [String: [String: [String: String]]] = [:]
        if let path {
            do {
                try FileManager.default.createDirectory(atPath: path + "/store", withIntermediateDirectories: true,
                                                        attributes: [.posixPermissions: 0o700])
            } catch {
                let reason = ((error as? CocoaError)?.underlying as? POSIXError).map { String(cString: strerror($0.code.rawValue)) }
                throw StateDirectoryError("cannot create the state directory \(path): \(reason ?? "\(error)")")
            }
            owner = try OwnerLock(directory: path)
            // Only the owner writes here, so a temporary file is what a crash left mid-write.
            for directory in [path, path + "/store"] {
                for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] where name.contains(".json.tmp-") {
                    unlink(directory + "/" + name)
                }
            }
            if let state: PersistentState = Self.read(path + "/state.json", warnings: &warnings) { loaded = state }
            for name in (try? FileManager.default.contentsOfDirectory(atPath: path + "/store")) ?? []
            where name.hasSuffix(".json") {
                let helper = String(name.dropLast(5))
                if let store: [String: [String: String]] = Self.read(path + "/store/" + name, warnings: &warnings) {
                    stores[helper] = store
                }
            }
        } else {
            owner = nil
        }
        self.state = Mutex(loaded)
        self.stores = Mutex(stores)
        self.warnings = warnings
    }

    public var snapshot: PersistentState { state.withLock { $0 } }

    /// Changes the state and writes it before returning.
    public func update(_ change: (inout PersistentState) -> Void) throws {
        try state.withLock { state in
            var next = state
            change(&next)
            guard next != state else { return }
            if let path { try Self.writeAtomically(try Self.encoder.encode(next), to: path + "/state.json") }
            state = next
        }
    }

    public func store(helper: String, ssid: String) -> [String: String] {
        stores.withLock { $0[helper]?[ssid] ?? [:] }
    }

    public func setStore(_ values: [String: String], helper: String, ssid: String) throws {
        try stores.withLock { stores in
            var helperStores = stores[helper] ?? [:]
            helperStores[ssid] = values.isEmpty ? nil : values
            if let path {
                try Self.writeAtomically(try Self.encoder.encode(helperStores), to: path + "/store/\(helper).json")
            }
            stores[helper] = helperStores
        }
    }

    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return encoder
    }()

    /// The largest state or store file read: far beyond what the runtime writes (a store is at
    /// most `storeLimit` per network), so only a damaged or foreign file is larger, and reading
    /// it whole would cost the daemon that much memory at every start.
    static let fileSizeLimit = 8 * BoundedFile.mebibyte

    private static func read<T: Decodable>(_ file: String, warnings: inout [String]) -> T? {
        let bytes: [UInt8]
        do {
            bytes = try BoundedFile.read(file, limit: fileSizeLimit)
        } catch .tooLarge {
            setAside(file, because: "it is larger than \(fileSizeLimit / BoundedFile.mebibyte) MiB", warnings: &warnings)
            return nil
        } catch {
            return nil  // absent: nothing was kept yet
        }
        do {
            return try JSONDecoder().decode(T.self, from: Data(bytes))
        } catch {
            setAside(file, because: "\(error)", warnings: &warnings)
            return nil
        }
    }

    private static func setAside(_ file: String, because reason: String, warnings: inout [String]) {
        let aside = file + ".corrupt-\(Int(Date().timeIntervalSince1970))"
        let moved = rename(file, aside) == 0
        warnings.append("\(file) could not be read (\(reason)); "
            + (moved ? "it was moved to \(aside) and the runtime starts without it" : "it was left in place"))
    }

    static func writeAtomically(_ data: Data, to file: String) throws {
        let temporary = file + ".tmp-\(getpid())"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw StateDirectoryError("cannot write \(temporary): \(String(cString: strerror(errno)))") }
        let written = data.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        let synced = fsync(descriptor) == 0
        close(descriptor)
        guard written == data.count, synced, rename(temporary, file) == 0 else {
            unlink(temporary)
            throw StateDirectoryError("cannot write \(file): \(String(cString: strerror(errno)))")
        }
        let directory = open(file.pathDeletingLastComponent, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directory >= 0 {
            fsync(directory)
            close(directory)
        }
    }
}

public struct StateDirectoryError: Error, Sendable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

/// One process owns a state directory at a time: two writing it would each overwrite what the
/// other remembered. An `flock` on `owner.lock` holds it until the process ends (the kernel
/// drops it even after `kill -9`); the file names the owner's process for the message of the
/// one refused. Within a process, every `StateDirectory` of one path shares the lock.
private final class OwnerLock: Sendable {
    private let key: String
    private static let held = Mutex<[String: (descriptor: Int32, users: Int)]>([:])

    init(directory: String) throws(StateDirectoryError) {
        // One key however the path is spelled, so a process never refuses itself.
        let file = (realpath(directory, nil).map { resolved in defer { free(resolved) }; return String(cString: resolved) } ?? directory)
            + "/owner.lock"
        key = file
        try Self.held.withLock { (held: inout [String: (descriptor: Int32, users: Int)]) throws(StateDirectoryError) in
            if let lock = held[file] {
                held[file] = (lock.descriptor, lock.users + 1)
                return
            }
            let descriptor = open(file, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
            guard descriptor >= 0 else {
                throw StateDirectoryError("cannot open \(file): \(String(cString: strerror(errno)))")
            }
            guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
                let owner = Self.recordedOwner(descriptor)
                close(descriptor)
                throw StateDirectoryError("the state directory \(directory) is in use by "
                    + (owner.map { "process \($0)" } ?? "another process")
                    + "; stop it first, or give this command a state directory of its own")
            }
            let pid = "\(getpid())\n"
            _ = ftruncate(descriptor, 0)
            _ = pid.withCString { pwrite(descriptor, $0, strlen($0), 0) }
            held[file] = (descriptor, 1)
        }
    }

    deinit {
        Self.held.withLock { held in
            guard let lock = held[key] else { return }
            if lock.users > 1 {
                held[key] = (lock.descriptor, lock.users - 1)
            } else {
                close(lock.descriptor)  // releases the flock
                held[key] = nil
            }
        }
    }

    private static func recordedOwner(_ descriptor: Int32) -> Int32? {
        var buffer = [UInt8](repeating: 0, count: 32)
        let count = pread(descriptor, &buffer, buffer.count, 0)
        guard count > 0 else { return nil }
        return String(decoding: buffer[..<count], as: UTF8.self).split(separator: "\n").first.flatMap { Int32($0) }
    }
}
