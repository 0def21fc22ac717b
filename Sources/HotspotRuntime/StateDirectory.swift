#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import FoundationEssentials
import LinuxFiles
import Locking
import Synchronization
public import HotspotCore

/// The state directory: `state.json` and `store/<helper>.json` (and the helper catalog's
/// `descriptions.jsonl`, `DescriptionCache`, written the same way). Every write is atomic
/// (temporary file, fsync, rename, fsync of the directory), so a `kill -9` at any moment
/// leaves either the old or the new file. A file that cannot be read is moved aside and
/// reported, never silently dropped. Without a path everything stays in memory.
///
/// A write that fails (a full file system, a directory made read-only) changes nothing of
/// what the runtime knows: the change is kept in memory, the error says so, and the file is
/// written again every `retryInterval` until it can be. A storage fault is the device's
/// problem, not a helper's.
public final class StateDirectory: HotspotPersistence {
    public let path: String?
    private let state: PlainLock<PersistentState>
    /// Each helper's `cmd.store` values by SSID, told apart by their bytes (`BySSID`): the NFC
    /// and NFD forms of one name are two networks, each with a store of its own.
    private let stores: PlainLock<[String: BySSID<[String: String]>]>
    /// The latest content of each file whose write failed, by path, and whether a retry is
    /// due. Held through every write, so a retry never overwrites a newer file.
    private let unsaved = PlainLock(Unsaved())
    private struct Unsaved {
        var files: [String: Data] = [:]
        var retrying = false
    }
    private let retryInterval: Duration
    /// Files that were set aside because they could not be read.
    public let warnings: [String]
    /// Holds the directory for this process (see `DirectoryOwner`); nil in memory.
    private let owner: DirectoryOwner?

    public static let storeLimit = 16384

    public init(path: String?, retryInterval: Duration = .seconds(10)) throws {
        self.path = path
        self.retryInterval = retryInterval
        var warnings: [String] = []
        var loaded = PersistentState()
        var stores: [String: BySSID<[String: String]>] = [:]
        if let path {
            do {
                try FileManager.default.createDirectory(atPath: path + "/store", withIntermediateDirectories: true,
                                                        attributes: [.posixPermissions: 0o700])
            } catch {
                let reason = ((error as? CocoaError)?.underlying as? POSIXError).map { String(cString: strerror($0.code.rawValue)) }
                var isDirectory = false
                // One that is there but read-only is not one that could not be made.
                if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory {
                    throw StateDirectoryError("the state directory \(path) is there, but \(path)/store cannot be made in it: "
                                              + "\(reason ?? "\(error)"); the daemon's user must be able to write there")
                }
                throw StateDirectoryError("cannot create the state directory \(path): \(reason ?? "\(error)")")
            }
            do {
                owner = try DirectoryOwner(directory: path)
            } catch {
                throw StateDirectoryError(error.description)
            }
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
                if let store: BySSID<[String: String]> = Self.read(path + "/store/" + name, warnings: &warnings) {
                    stores[helper] = store
                }
            }
        } else {
            owner = nil
        }
        self.state = PlainLock(loaded)
        self.stores = PlainLock(stores)
        self.warnings = warnings
    }

    public var snapshot: PersistentState { state.withLock { $0 } }

    /// Changes the state and writes it before returning; when the write fails, the change is
    /// kept all the same and the error says it will be written later.
    public func update(_ change: (inout PersistentState) -> Void) throws {
        try state.withLock { state in
            var next = state
            change(&next)
            guard next != state else { return }
            state = next
            if let path { try save(try Self.encoder.encode(next), to: path + "/state.json") }
        }
    }

    public func store(helper: String, ssid: String) -> [String: String] {
        stores.withLock { $0[helper]?[ssid] ?? [:] }
    }

    public func setStore(_ values: [String: String], helper: String, ssid: String) throws {
        try stores.withLock { stores in
            var helperStores = stores[helper] ?? BySSID()
            helperStores[ssid] = values.isEmpty ? nil : values
            stores[helper] = helperStores
            if let path { try save(try Self.encoder.encode(helperStores), to: path + "/store/\(helper).json") }
        }
    }

    /// Whether every change is on disk (no write waits to be retried).
    public var isSaved: Bool { unsaved.withLock { $0.files.isEmpty } }

    private func save(_ data: Data, to file: String) throws {
        try unsaved.withLock { (unsaved: inout Unsaved) throws(StateDirectoryError) in
            do {
                try Self.writeAtomically(data, to: file)
                unsaved.files[file] = nil
            } catch {
                unsaved.files[file] = data
                if !unsaved.retrying {
                    unsaved.retrying = true
                    scheduleRetry()
                }
                let kept = "the change is kept in memory and written again every \(retryInterval) until it can be"
                throw StateDirectoryError("\(error); \(kept)")
            }
        }
    }

    private func scheduleRetry() {
        let (seconds, attoseconds) = retryInterval.components
        let delay = DispatchTimeInterval.nanoseconds(Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))
        DispatchQueue.global().asyncAfter(deadline: .now() + delay) { [weak self] in self?.retry() }
    }

    private func retry() {
        unsaved.withLock { unsaved in
            for (file, data) in unsaved.files where (try? Self.writeAtomically(data, to: file)) != nil {
                unsaved.files[file] = nil
            }
            unsaved.retrying = !unsaved.files.isEmpty
            if unsaved.retrying { scheduleRetry() }
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

    static func writeAtomically(_ data: Data, to file: String) throws(StateDirectoryError) {
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
