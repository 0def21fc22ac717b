import Foundation
@testable import LuaSandbox
import Testing
import TestSupport

@Suite struct WorkerProcessTests {
    /// A worker that writes a frame and then a malformed one in one write: the good frame
    /// still reaches the reader, which then stops.
    @Test func theFramesBeforeAMalformedOneAreRead() throws {
        let directory = try scratchDirectory("worker-process")
        let executable = directory + "/worker.sh"
        // A 9-byte frame, then a length below the 9 bytes every frame has.
        try #"""
            #!/bin/sh
            printf '\011\000\000\000123456789\003\000\000\000abc' >&3
            kill -STOP $$
            """#.write(toFile: executable, atomically: true, encoding: .utf8)
        chmod(executable, 0o755)
        let process = try WorkerProcess.spawn(executable: executable)
        var reads: [[[UInt8]]] = []
        process.readFrames { frames in
            reads.append(frames)
            return true
        }
        process.kill()
        _ = process.reap()
        #expect(reads == [[Array("123456789".utf8)]])
    }
}
