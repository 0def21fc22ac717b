#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import FoundationEssentials

/// Tells when the scripts at a path (a file, or a directory of `*.lua`) change on disk,
/// through inotify.
///
/// Editors save by writing a temporary file and renaming it over the original, so the
/// directory is watched rather than the file, for writes that close and for names moved
/// in or out. Events closer together than `quietPeriod` count as one change; a queue
/// overflow counts as a change too (the caller reads everything again anyway).
///
/// The path is followed as given, not the directory found at start: every directory above
/// it is watched for its next component, so a release deployed by flipping a symlink
/// (`current → v2`), a directory renamed into place, or one removed counts as a change,
/// and from then on the directory the path names now is the one watched.
public final class ScriptWatcher: Sendable {
    public nonisolated let changes: AsyncStream<Void>
    private let inotify: Int32
    private let wakeUp: WakeUpPipe

    public struct WatchError: Error, CustomStringConvertible {
        public let description: String
    }

    public init(path: String, quietPeriod: Duration = .milliseconds(30)) throws(WatchError) {
        var isDirectory = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw WatchError(description: "\(path): no such file or directory")
        }
        let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        let directory = isDirectory ? absolute : absolute.pathDeletingLastComponent
        let onlyName: String? = isDirectory ? nil : path.pathLastComponent
        let inotify = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
        guard inotify >= 0 else { throw WatchError(description: "cannot watch \(path): \(String(cString: strerror(errno)))") }
        var watches = Watches(directory: directory)
        guard watches.add(inotify) else {
            let reason = String(cString: strerror(errno))
            close(inotify)
            throw WatchError(description: "cannot watch \(directory): \(reason)")
        }
        let watched = watches
        let wakeUp = WakeUpPipe()
        self.inotify = inotify
        self.wakeUp = wakeUp
        let (changes, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        self.changes = changes
        let quietMilliseconds = Int32(quietPeriod / .milliseconds(1))
        // A queue of its own, so the blocking poll never holds one of Swift concurrency's threads.
        DispatchQueue(label: "script-watcher").async {
            Self.watch(inotify: inotify, watches: watched, wakeUp: wakeUp, onlyName: onlyName,
                       quietMilliseconds: quietMilliseconds) {
                continuation.yield()
            }
            continuation.finish()
            close(inotify)
            wakeUp.close()
        }
    }

    /// Stops watching; `changes` finishes.
    public func stop() {
        wakeUp.wake()
    }

    deinit { stop() }

    /// The watches of one path: its directory's contents, and each directory above it for the
    /// name of the next component.
    private struct Watches {
        /// The directory's components as given, from the root.
        let components: [String]
        /// The directory's watch; -1 while there is no directory at the path.
        var contents: Int32 = -1
        /// Each ancestor's watch, and the name in it that leads to the directory.
        var ancestors: [Int32: String] = [:]

        init(directory: String) {
            components = directory.split(separator: "/").map(String.init)
        }

        static let contentsMask = UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_CREATE
                                         | IN_DELETE_SELF | IN_MOVE_SELF)
        static let ancestorMask = UInt32(IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF)

        /// Watches what the path names now; false when not even its directory can be watched.
        mutating func add(_ inotify: Int32) -> Bool {
            var prefix = ""
            for component in components {
                let ancestor = inotify_add_watch(inotify, prefix.isEmpty ? "/" : prefix, Self.ancestorMask | UInt32(IN_ONLYDIR))
                if ancestor >= 0 { ancestors[ancestor] = component }
                prefix += "/" + component
            }
            contents = inotify_add_watch(inotify, prefix.isEmpty ? "/" : prefix, Self.contentsMask | UInt32(IN_ONLYDIR))
            return contents >= 0
        }

        /// Drops every watch and watches what the path names now (a new directory, or none).
        mutating func renew(_ inotify: Int32) {
            for watch in Array(ancestors.keys) + [contents] where watch >= 0 { inotify_rm_watch(inotify, watch) }
            ancestors = [:]
            contents = -1
            _ = add(inotify)
        }
    }

    /// Reads events until woken up; calls `changed` once per burst of relevant events.
    private static func watch(inotify: Int32, watches: Watches, wakeUp: WakeUpPipe, onlyName: String?, quietMilliseconds: Int32,
                              changed: () -> Void) {
        var watches = watches
        var pending = false
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            var descriptors = [pollfd(fd: inotify, events: Int16(POLLIN), revents: 0),
                               pollfd(fd: wakeUp.readEnd, events: Int16(POLLIN), revents: 0)]
            let ready = poll(&descriptors, 2, pending ? quietMilliseconds : -1)
            if ready < 0, errno == EINTR { continue }
            if ready < 0 || descriptors[1].revents != 0 { return }
            if ready == 0 {
                pending = false
                changed()
                continue
            }
            let count = buffer.withUnsafeMutableBytes { read(inotify, $0.baseAddress, $0.count) }
            guard count > 0 else { continue }
            switch relevance(buffer[0..<count], of: watches, onlyName: onlyName) {
            case .none: break
            case .scripts: pending = true
            case .path:
                watches.renew(inotify)
                pending = true
            }
        }
    }

    private enum Relevance: Comparable {
        case none
        /// A watched script changed.
        case scripts
        /// What the path names changed: another directory, or none.
        case path
    }

    /// What a batch of `inotify_event`s changed.
    private static func relevance(_ events: ArraySlice<UInt8>, of watches: Watches, onlyName: String?) -> Relevance {
        let headerSize = MemoryLayout<inotify_event>.size
        var found = Relevance.none
        events.withUnsafeBytes { bytes in
            var position = 0
            while position + headerSize <= bytes.count {
                let watch = bytes.loadUnaligned(fromByteOffset: position, as: Int32.self)
                let mask = bytes.loadUnaligned(fromByteOffset: position + 4, as: UInt32.self)
                let nameLength = Int(bytes.loadUnaligned(fromByteOffset: position + 12, as: UInt32.self))
                let nameBytes = bytes[(position + headerSize)..<min(bytes.count, position + headerSize + nameLength)]
                let name = String(decoding: nameBytes.prefix { $0 != 0 }, as: UTF8.self)
                if mask & UInt32(IN_Q_OVERFLOW) != 0 {
                    found = .path  // events were lost: what the path names is looked at again too
                } else if mask & UInt32(IN_IGNORED) != 0 {
                    // A watch the kernel dropped (its directory gone); those `renew` drops come
                    // after it has replaced them, with other numbers (or the same, still watched).
                } else if let next = watches.ancestors[watch] {
                    if name == next || mask & UInt32(IN_DELETE_SELF | IN_MOVE_SELF) != 0 { found = .path }
                } else if watch == watches.contents {
                    if mask & UInt32(IN_DELETE_SELF | IN_MOVE_SELF) != 0 {
                        found = .path
                    } else if name == onlyName || (onlyName == nil && name.hasSuffix(".lua")) {
                        found = max(found, .scripts)
                    }
                }
                position += headerSize + nameLength
            }
        }
        return found
    }
}
