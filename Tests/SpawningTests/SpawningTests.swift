import Foundation
import Spawning
import Testing

/// Runs `/bin/sh -c script` through `spawnProcess` with its standard output on a pipe;
/// what it printed.
private func output(of script: String, descriptors: [ChildDescriptor] = [], closingFrom firstClosed: Int32? = nil,
                    environmentOverrides: [String] = []) throws -> String {
    let pipe = try #require(closeOnExecPipe())
    let pid: pid_t
    do {
        pid = try spawnProcess("/bin/sh", arguments: ["-c", script],
                               descriptors: [.duplicate(pipe.writeEnd, as: STDOUT_FILENO)] + descriptors,
                               closingFrom: firstClosed, environmentOverrides: environmentOverrides)
    } catch {
        close(pipe.writeEnd)
        close(pipe.readEnd)
        throw error
    }
    close(pipe.writeEnd)
    let printed = FileHandle(fileDescriptor: pipe.readEnd, closeOnDealloc: true).readDataToEndOfFile()
    var status: Int32 = 0
    waitpid(pid, &status, 0)
    return String(decoding: printed, as: UTF8.self)
}

@Suite("Spawning")
struct SpawningTests {
    @Test func anOverrideReplacesTheInheritedEntryOfItsNameAndKeepsTheOthers() throws {
        // Variables the test process had from its start: setting some here would race with the
        // processes other tests spawn meanwhile (posix_spawn reads the environment unlocked).
        let home = try #require(ProcessInfo.processInfo.environment["HOME"])
        let printed = try output(of: "/usr/bin/env | /usr/bin/grep -E '^(HOME|PATH)=' | /usr/bin/sort",
                                 environmentOverrides: ["PATH=/overridden"])
        #expect(printed == "HOME=\(home)\nPATH=/overridden\n")
    }

    @Test func aDescriptorGivenStaysAndThoseFromTheFirstClosedDoNot() throws {
        let inherited = open("/dev/null", O_RDONLY)  // not close-on-exec
        defer { close(inherited) }
        let listed = try output(of: "ls /proc/self/fd", descriptors: [.duplicate(inherited, as: 3)], closingFrom: 4)
        let descriptors = listed.split(separator: "\n").compactMap { Int32($0) }
        #expect(descriptors.contains(3))
        #expect(!descriptors.contains(inherited), "descriptors \(descriptors)")
    }

    /// The daemon ignores SIGTERM to take it as an event; a worker it spawns must still stop on it.
    @Test func aSignalThisProcessIgnoresIsAtItsDefaultInTheChild() throws {
        let previous = signal(SIGTERM, SIG_IGN)
        let printed: String
        do {
            defer { signal(SIGTERM, previous) }
            printed = try output(of: "/usr/bin/grep '^SigIgn:' /proc/self/status")
        }
        let mask = try #require(UInt64(printed.dropFirst("SigIgn:".count).trimmingCharacters(in: .whitespacesAndNewlines), radix: 16))
        #expect(mask & (1 << (UInt64(SIGTERM) - 1)) == 0, "\(printed)")
    }

    @Test func aProgramThatCannotStartIsTheSystemsReason() {
        #expect {
            try spawnProcess("/nonexistent/program")
        } throws: { error in
            (error as? SpawnError)?.description == String(cString: strerror(ENOENT))
        }
    }
}
