public import Foundation
import LuaSandbox

/// The built `hotspot-helper` executable, run as a user would.
public struct CLI {
    public static let path = LuaEngine.Configuration.executableBesideCurrent(named: "hotspot-helper")

    public struct Run: Sendable {
        public let status: Int32
        public let output: String
        public let errors: String

        /// The lines of the output, each JSON line without its `time`, the one key that differs
        /// from run to run, so a test can compare them whole.
        public var linesWithoutTime: [String] {
            output.split(separator: "\n").map { line in
                guard line.hasSuffix("\"}"), let time = line.range(of: #","time":""#, options: .backwards) else { return String(line) }
                return String(line[..<time.lowerBound]) + "}"
            }
        }

        /// The JSON lines of `--json` output, decoded.
        public var events: [EventLine] { EventLine.lines(in: output) }
    }

    /// Starts the process with `environment` added to the test's; `outputIsJournal` sets
    /// `JOURNAL_STREAM` to its standard output's device and inode, as systemd does for a
    /// service whose output goes to the journal.
    public static func start(_ arguments: [String], executable: String = path, environment: [String: String] = [:],
                             outputIsJournal: Bool = false) throws -> (Process, Pipe, Pipe) {
        PoolWatchdog.note()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let output = Pipe(), errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        var environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        if outputIsJournal {
            var status = stat()
            fstat(output.fileHandleForWriting.fileDescriptor, &status)
            environment["JOURNAL_STREAM"] = "\(status.st_dev):\(status.st_ino)"
        }
        process.environment = environment
        try process.run()
        return (process, output, errors)
    }

    /// Runs the process to its end, waiting on a thread of its own.
    public static func run(_ arguments: [String], executable: String = path, environment: [String: String] = [:]) async throws -> Run {
        try await onOwnThread { try runToEnd(arguments, executable: executable, environment: environment) }
    }

    private static func runToEnd(_ arguments: [String], executable: String, environment: [String: String]) throws -> Run {
        let (process, output, errors) = try start(arguments, executable: executable, environment: environment)
        let out = output.fileHandleForReading.readDataToEndOfFile()
        let err = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Run(status: process.terminationStatus, output: String(decoding: out, as: UTF8.self),
                   errors: String(decoding: err, as: UTF8.self))
    }

    public static func temporaryDirectory(scripts: [String: String] = [:]) throws -> String {
        let path = try scratchDirectory("cli")
        for (name, text) in scripts { try text.write(toFile: "\(path)/\(name)", atomically: true, encoding: .utf8) }
        return path
    }
}
