import Glibc
import Testing
@testable import Spawning

@Suite("Subprocesses run to their end")
struct SubprocessTests {
    @Test func aSubprocessGivesItsOutputAndExitStatus() throws {
        let printed = try #require(Subprocess.run("/bin/sh", ["-c", "echo out; echo err >&2; exit 3"]))
        #expect(printed.exitStatus == 3)
        #expect(String(decoding: printed.output, as: UTF8.self) == "out\n", "standard error is not the output")
        let killed = try #require(Subprocess.run("/bin/sh", ["-c", "kill -9 $$"]))
        #expect(killed.exitStatus == nil, "a signal is not an exit status")
        #expect(Subprocess.run("/nonexistent/program", []) == nil)
    }

    @Test func aSubprocessInheritsNoOtherDescriptor() throws {
        let leaked = open("/dev/null", O_RDONLY)
        defer { close(leaked) }
        let listed = try #require(Subprocess.run("/bin/ls", ["/proc/self/fd"]))
        let descriptors = String(decoding: listed.output, as: UTF8.self).split(separator: "\n").compactMap { Int32($0) }
        #expect(!descriptors.contains(leaked), "descriptors \(descriptors)")
        #expect(descriptors.allSatisfy { $0 <= 3 }, "the standard three, and ls's own directory")
    }
}
