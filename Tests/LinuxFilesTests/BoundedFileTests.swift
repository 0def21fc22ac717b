import Foundation
import Testing
import TestSupport
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
}
