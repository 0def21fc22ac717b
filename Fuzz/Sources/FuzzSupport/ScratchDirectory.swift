#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials

/// A directory of this process's own, for the targets that read their input from files as
/// the daemon does. On tmpfs where there is one, so that writing and syncing files costs a
/// fuzzing run no disk time; removed when the run ends normally.
public enum ScratchDirectory {
    public static let path: String = {
        let parent = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp"
        var template = Array("\(parent)/hotspot-fuzz-XXXXXX".utf8CString)
        let created = template.withUnsafeMutableBufferPointer { buffer -> String? in
            guard let path = mkdtemp(buffer.baseAddress!) else { return nil }
            return String(cString: path)
        }
        guard let created else { fatalError("cannot create a scratch directory in \(parent)") }
        atexit { try? FileManager.default.removeItem(atPath: ScratchDirectory.path) }
        return created
    }()

    /// Writes `bytes` to `name` (a path under the directory), readable by its owner only.
    public static func write(_ bytes: [UInt8], to name: String) {
        let written = FileManager.default.createFile(atPath: path + "/" + name, contents: Data(bytes),
                                                     attributes: [.posixPermissions: 0o600])
        require(written, "cannot write \(name) in \(path)")
    }

    /// Removes `name` (a path under the directory) and everything under it.
    public static func remove(_ name: String) {
        try? FileManager.default.removeItem(atPath: path + "/" + name)
    }
}
