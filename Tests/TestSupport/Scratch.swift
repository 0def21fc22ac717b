import Foundation

/// This test process's own directory under the temporary directory. Every scratch file and
/// directory of the process's tests is made inside it, and it is removed when the process
/// exits, so test runs do not pile up in /tmp.
private let processScratch = NSTemporaryDirectory() + "hotspot-helper-tests-\(getpid())"

private let processScratchMade: Void = {
    try? FileManager.default.removeItem(atPath: processScratch)  // left by an earlier process with this id
    try! FileManager.default.createDirectory(atPath: processScratch, withIntermediateDirectories: true)
    atexit { try? FileManager.default.removeItem(atPath: processScratch) }
}()

/// A path no other test uses, in this process's scratch directory, for a test to create a
/// file or directory at; `kind` names what it holds.
public func scratchPath(_ kind: String) -> String {
    processScratchMade
    PoolWatchdog.note()
    return processScratch + "/\(kind)-" + UUID().uuidString
}

/// A new empty directory of its own, in this process's scratch directory.
public func scratchDirectory(_ kind: String) throws -> String {
    let path = scratchPath(kind)
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
    return path
}
