#if canImport(Glibc)
import Glibc
#endif

/// Reads a whole file only when it is no larger than its kind allows: a state file, a script
/// or a secrets file hundreds of megabytes long (damaged, or not what was meant) would cost
/// the daemon that much memory at every start, over a service's memory limit. The size is
/// checked on the opened file, before anything is read. The file is opened non-blocking and
/// must be a regular file: a FIFO or a device where a script, a secrets or a state file is
/// expected would otherwise block `open` (and then `read`) for good, and with it the daemon's
/// reload, its control socket and its stop.
package enum BoundedFile {
    package static let mebibyte = 1 << 20

    package static func read(_ path: String, limit: Int) throws(BoundedFileError) -> [UInt8] {
        try readWithIdentity(path, limit: limit).bytes
    }

    /// `read`, with the identity of the file opened, taken before its bytes are read: a
    /// change while it is read changes its ctime, so the next comparison sees it.
    package static func readWithIdentity(_ path: String, limit: Int) throws(BoundedFileError) -> (bytes: [UInt8], identity: FileIdentity) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
        guard descriptor >= 0 else { throw .unreadable(String(cString: strerror(errno))) }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw .unreadable(String(cString: strerror(errno))) }
        guard status.st_mode & S_IFMT == S_IFREG else { throw .notRegular(kind(of: status.st_mode)) }
        guard Int(status.st_size) <= limit else { throw .tooLarge(size: Int(status.st_size), limit: limit) }
        return (try readAll(descriptor, limit: limit), FileIdentity(status))
    }

    private static func readAll(_ descriptor: Int32, limit: Int) throws(BoundedFileError) -> [UInt8] {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { throw .unreadable(String(cString: strerror(errno))) }
            if count == 0 { return bytes }
            bytes += chunk[..<count]
            // A file that grows while it is read is held to the same limit.
            guard bytes.count <= limit else { throw .tooLarge(size: bytes.count, limit: limit) }
        }
    }

    private static func kind(of mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFDIR: "a directory"
        case S_IFIFO: "a FIFO"
        case S_IFSOCK: "a socket"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        default: "a special file"
        }
    }
}

/// What tells a file's versions apart without reading it: which file it is (device, inode)
/// and its size, modification and change times to the nanosecond. An edit that keeps the
/// size and sets the modification time back still moves the change time, which only the
/// kernel sets.
package struct FileIdentity: Sendable, Equatable {
    let device: UInt64
    let inode: UInt64
    let size: Int64
    let modifiedSeconds: Int64
    let modifiedNanoseconds: Int64
    let changedSeconds: Int64
    let changedNanoseconds: Int64

    init(_ status: stat) {
        (device, inode, size) = (UInt64(status.st_dev), UInt64(status.st_ino), Int64(status.st_size))
        (modifiedSeconds, modifiedNanoseconds) = (Int64(status.st_mtim.tv_sec), Int64(status.st_mtim.tv_nsec))
        (changedSeconds, changedNanoseconds) = (Int64(status.st_ctim.tv_sec), Int64(status.st_ctim.tv_nsec))
    }

    /// The identity of the file at `path` (a link followed, as reading it does); nil when it
    /// cannot be had.
    package init?(path: String) {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        self.init(status)
    }
}

package enum BoundedFileError: Error, CustomStringConvertible {
    case unreadable(String)
    case tooLarge(size: Int, limit: Int)
    /// What the path is instead of a regular file.
    case notRegular(String)

    package var description: String {
        switch self {
        case .unreadable(let reason): "cannot read the file: \(reason)"
        case .notRegular(let kind): "cannot read the file: it is \(kind), not a regular file"
        case .tooLarge(let size, let limit):
            "the file is \(size) bytes, over the limit of \(limit % BoundedFile.mebibyte == 0 ? "\(limit / BoundedFile.mebibyte) MiB" : "\(limit) bytes")"
        }
    }
}
