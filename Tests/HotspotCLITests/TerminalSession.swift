#if canImport(Glibc)
import Glibc
#endif
import Foundation
import TestSupport

/// The executable run on a pseudo-terminal, as a person at a terminal runs it: its standard
/// input, output and errors are the terminal, whose other end the test reads and types on.
/// Blocking: use it on a thread of its own (`onOwnThread`).
final class TerminalSession: @unchecked Sendable {
    let process = Process()
    private let controller: Int32
    private(set) var transcript = ""

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    init(_ arguments: [String], executable: String = CLI.path) throws {
        // posix_openpt and its kin need _XOPEN_SOURCE, which Swift's Glibc module leaves out:
        // the same through /dev/ptmx and its ioctls (unlock, then the terminal's number).
        controller = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC)
        var unlock: CInt = 0, number: CInt = 0
        guard controller >= 0, ioctl(controller, Self.setLock, &unlock) == 0, ioctl(controller, Self.getNumber, &number) == 0 else {
            throw Failure(description: "no pseudo-terminal: \(String(cString: strerror(errno)))")
        }
        let terminal = FileHandle(fileDescriptor: open("/dev/pts/\(number)", O_RDWR | O_NOCTTY), closeOnDealloc: true)
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardInput = terminal
        process.standardOutput = terminal
        process.standardError = terminal
        try process.run()
        // The child has its own copies; without this one the controller never sees the end.
        try terminal.close()
    }

    deinit { close(controller) }

    /// TIOCSPTLCK and TIOCGPTN of <asm-generic/ioctls.h>.
    private static let setLock: UInt = 0x4004_5431
    private static let getNumber: UInt = 0x8004_5430

    /// Reads what the program writes until `text` shows, and returns everything read so far.
    @discardableResult
    func read(until text: String, within limit: Duration = .seconds(20)) throws -> String {
        let end = ContinuousClock.now + limit
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !transcript.contains(text) {
            let left = ContinuousClock.now.duration(to: end)
            guard left > .zero else { throw Failure(description: "no \"\(text)\" within \(limit); the terminal shows:\n\(transcript)") }
            var poller = pollfd(fd: controller, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, Int32(left / .milliseconds(1)) + 1) > 0 else { continue }
            let count = Glibc.read(controller, &buffer, buffer.count)
            guard count > 0 else { throw Failure(description: "the program ended before \"\(text)\"; the terminal shows:\n\(transcript)") }
            transcript += String(decoding: buffer[..<count], as: UTF8.self)
        }
        return transcript
    }

    /// Types a line, as a person pressing Enter.
    func type(_ line: String) {
        let bytes = Array((line + "\n").utf8)
        _ = Glibc.write(controller, bytes, bytes.count)
    }

    /// Reads to the end and waits for the exit status.
    func finish() -> Int32 {
        _ = try? read(until: "\u{0}", within: .seconds(20))  // no NUL ever comes: reads until the end
        process.waitUntilExit()
        return process.terminationStatus
    }
}
