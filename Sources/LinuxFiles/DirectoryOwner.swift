#if canImport(Glibc)
import Glibc
#endif
import Locking

/// One process owns a directory at a time (the state directory: two processes writing it
/// would each overwrite what the other remembered). An `flock` on `owner.lock` holds it
/// until the process ends (the kernel drops it even after `kill -9`); the file names the
/// owner's process for the message of the one refused. Within a process, every owner of one
/// directory shares the lock.
package final class DirectoryOwner: Sendable {
    private let key: String
    private static let held = PlainLock<[String: (descriptor: Int32, users: Int)]>([:])

    package init(directory: String) throws(DirectoryOwnerError) {
        // One key however the path is spelled, so a process never refuses itself.
        let file = (realpath(directory, nil).map { resolved in defer { free(resolved) }; return String(cString: resolved) } ?? directory)
            + "/owner.lock"
        key = file
        try Self.held.withLock { (held: inout [String: (descriptor: Int32, users: Int)]) throws(DirectoryOwnerError) in
            if let lock = held[file] {
                held[file] = (lock.descriptor, lock.users + 1)
                return
            }
            let descriptor = open(file, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
            guard descriptor >= 0 else {
                throw DirectoryOwnerError(description: "cannot open \(file): \(String(cString: strerror(errno)))")
            }
            // A lock this process just let go of can stay held for a moment by a child it is
            // starting (between fork and exec the child holds the descriptor): waited for.
            var taken = flock(descriptor, LOCK_EX | LOCK_NB) == 0
            for _ in 0..<100 where !taken && Self.recordedOwner(descriptor) == getpid() {
                usleep(10_000)
                taken = flock(descriptor, LOCK_EX | LOCK_NB) == 0
            }
            guard taken else {
                let owner = Self.recordedOwner(descriptor)
                close(descriptor)
                throw DirectoryOwnerError(description: "the state directory \(directory) is in use by "
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

package struct DirectoryOwnerError: Error, CustomStringConvertible {
    package let description: String
}
