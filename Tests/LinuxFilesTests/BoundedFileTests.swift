import Foundation
import Testing
import TestSupport
import Locking
@testable import LinuxFiles

@Suite struct BoundedFileTests {
    @Test func aFileWithinItsLimitIsReadWhole() throws {
        let file = scratchPath("within")
        let text = String(repeating: "venue\n", count: 30_000)  // more than one read's chunk
        try text.write(toFile: file, atomically: false, encoding: .utf8)
        #expect(try BoundedFile.read(file, limit: text.utf8.count) == Array(text.utf8))
    }

    @Test func aLargerFileIsRefusedSayingItsSizeAndTheLimit() throws {
        let file = scratchPath("large")
        try Data(count: BoundedFile.mebibyte + 1).write(to: URL(fileURLWithPath: file))
        #expect(throws: BoundedFileError.self) { try BoundedFile.read(file, limit: BoundedFile.mebibyte) }
        do {
            _ = try BoundedFile.read(file, limit: BoundedFile.mebibyte)
        } catch {
            #expect(error.description == "the file is 1048577 bytes, over the limit of 1 MiB")
        }
    }

    @Test func aMissingFileSaysWhy() {
        do {
            _ = try BoundedFile.read("/nonexistent/file", limit: 10)
            Issue.record("read a file that is not there")
        } catch {
            #expect(error.description == "cannot read the file: No such file or directory")
        }
    }

    /// A FIFO where a file is expected (a script, the secrets, the state) once blocked `open`
    /// for good, and with it the daemon's reload and stop. The read runs on a thread of its own,
    /// so that a regression fails the wait below instead of hanging the suite.
    @Test func aFIFOIsRefusedAtOnceWithoutBlocking() async throws {
        let fifo = scratchPath("fifo") + ".lua"
        #expect(mkfifo(fifo, 0o600) == 0)
        let outcome = PlainLock<String?>(nil)
        Thread {
            do {
                _ = try BoundedFile.read(fifo, limit: 10)
                outcome.withLock { $0 = "read a FIFO as a file" }
            } catch {
                outcome.withLock { $0 = "\(error)" }
            }
        }.start()
        defer {
            // Releases a reader that did block, so the thread ends with the test.
            let writer = open(fifo, O_WRONLY | O_NONBLOCK)
            if writer >= 0 { close(writer) }
        }
        try await eventually("the read of a FIFO returns", within: .seconds(5)) { outcome.withLock { $0 } != nil }
        #expect(outcome.withLock { $0 } == "cannot read the file: it is a FIFO, not a regular file")
    }

    @Test func aDirectoryIsRefusedSayingSo() throws {
        let directory = try scratchDirectory("directory")
        do {
            _ = try BoundedFile.read(directory, limit: 10)
            Issue.record("read a directory as a file")
        } catch {
            #expect(error.description == "cannot read the file: it is a directory, not a regular file")
        }
    }
}
