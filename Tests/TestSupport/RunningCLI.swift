public import Foundation
import Locking
public import Testing

/// A long-running `hotspot-helper` (run, dev) whose output is read as it comes, on threads
/// of its own, so a test can wait for an event, signal the process, and wait for its end.
/// Dropping it kills the process if it still runs, so a failed test leaves no daemon behind.
public final class RunningCLI: Sendable {
    /// What the process wrote, filled by the reading threads. They hold this rather than
    /// the `RunningCLI`, which would otherwise live as long as the process it should end.
    private final class Captured: Sendable {
        let output = PlainLock("")
        let errors = PlainLock("")
        let closedPipes = PlainLock(0)

        func append(_ text: String, isErrors: Bool) {
            if isErrors {
                errors.withLock { $0 += text }
            } else {
                output.withLock { $0 += text }
            }
        }
    }

    public let process: Process
    private let captured = Captured()

    public init(_ arguments: [String], executable: String = CLI.path, environment: [String: String] = [:], outputIsJournal: Bool = false) throws {
        let (process, output, errors) = try CLI.start(arguments, executable: executable, environment: environment,
                                                      outputIsJournal: outputIsJournal)
        self.process = process
        Self.collect(output, into: captured, isErrors: false)
        Self.collect(errors, into: captured, isErrors: true)
    }

    private static func collect(_ pipe: Pipe, into captured: Captured, isErrors: Bool) {
        Thread {
            while true {
                let chunk = pipe.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                captured.append(String(decoding: chunk, as: UTF8.self), isErrors: isErrors)
            }
            captured.closedPipes.withLock { $0 += 1 }
        }.start()
    }

    public var standardOutput: String { captured.output.withLock { $0 } }
    public var standardError: String { captured.errors.withLock { $0 } }

    /// The JSON lines written so far, decoded.
    public var events: [EventLine] { EventLine.lines(in: standardOutput) }

    /// Waits until `count` events match (the count includes those already there), and
    /// returns the last that did; fails the test with what was written if none comes.
    @discardableResult
    public func waitForEvent(count: Int = 1, timeout: Duration = .seconds(20), sourceLocation: SourceLocation = #_sourceLocation,
                      _ matches: (EventLine) -> Bool) async throws -> EventLine {
        var found: [EventLine] = []
        if try await holds(within: timeout, {
            found = events.filter(matches)
            return found.count >= count
        }) {
            return found[count - 1]
        }
        Issue.record("no such event within \(timeout); output:\n\(standardOutput)\nerrors:\n\(standardError)", sourceLocation: sourceLocation)
        throw CancellationError()
    }

    public func signal(_ number: Int32) {
        kill(process.processIdentifier, number)
    }

    /// Waits for the process to end (both pipes closed) and returns its exit status; nil
    /// when it is still running after `timeout` (it is killed then).
    public func waitForExit(timeout: Duration = .seconds(10)) async throws -> Int32? {
        if try await holds(within: timeout, { captured.closedPipes.withLock { $0 } == 2 }) {
            let process = self.process
            return try await onOwnThread {
                process.waitUntilExit()
                return process.terminationStatus
            }
        }
        signal(SIGKILL)
        return nil
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }
}
