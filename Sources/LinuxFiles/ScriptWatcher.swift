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
        let directory = isDirectory ? path : path.pathDeletingLastComponent
        let onlyName: String? = isDirectory ? nil : path.pathLastComponent
        let inotify = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
        guard inotify >= 0 else { throw WatchError(description: "cannot watch \(path): \(String(cString: strerror(errno)))") }
        let mask = UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_CREATE)
        guard inotify_add_watch(inotify, directory.isEmpty ? "." : directory, mask) >= 0 else {
            let reason = String(cString: strerror(errno))
            close(inotify)
            throw WatchError(description: "cannot watch \(directory): \(reason)")
        }
        let wakeUp = WakeUpPipe()
        self.inotify = inotify
        self.wakeUp = wakeUp
        let (changes, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        self.changes = changes
        let quietMilliseconds = Int32(quietPeriod / .milliseconds(1))
        // A queue of its own, so the blocking poll never holds one of Swift concurrency's threads.
        DispatchQueue(label: "script-watcher").async {
            Self.watch(inotify: inotify, wakeUp: wakeUp, onlyName: onlyName, quietMilliseconds: quietMilliseconds) {
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

    /// Reads events until woken up; calls `changed` once per burst of relevant events.
    private static func watch(inotify: Int32, wakeUp: WakeUpPipe, onlyName: String?, quietMilliseconds: Int32,
                              changed: () -> Void) {
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
            if relevant(buffer[0..<count], onlyName: onlyName) { pending = true }
        }
    }

    /// Whether a batch of `inotify_event`s touches a watched script.
    private static func relevant(_ events: ArraySlice<UInt8>, onlyName: String?) -> Bool {
        let headerSize = MemoryLayout<inotify_event>.size
        var found = false
        events.withUnsafeBytes { bytes in
            var position = 0
            while position + headerSize <= bytes.count {
                let mask = bytes.loadUnaligned(fromByteOffset: position + 4, as: UInt32.self)
                let nameLength = Int(bytes.loadUnaligned(fromByteOffset: position + 12, as: UInt32.self))
                let nameBytes = bytes[(position + headerSize)..<min(bytes.count, position + headerSize + nameLength)]
                let name = String(decoding: nameBytes.prefix { $0 != 0 }, as: UTF8.self)
                if mask & UInt32(IN_Q_OVERFLOW) != 0 || name == onlyName || (onlyName == nil && name.hasSuffix(".lua")) {
                    found = true
                }
                position += headerSize + nameLength
            }
        }
        return found
    }
}
