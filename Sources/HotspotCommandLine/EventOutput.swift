#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import HotspotRuntime
import Locking
package import HotspotCore

/// Renders events as JSON lines or as a timeline for people (coloured on a terminal).
package final class EventOutput: Sendable {
    package let json: Bool
    private let colored: Bool
    private let lock = PlainLock(())

    package init(json: Bool) {
        self.json = json
        colored = !json && isatty(STDOUT_FILENO) == 1 && ProcessInfo.processInfo.environment["NO_COLOR"] == nil
    }

    package func write(_ event: HotspotEvent) {
        let line = json ? event.jsonLine : event.timelineLine(colored: colored)
        lock.withLock { _ in writeUnbuffered(line + "\n") }
    }

    /// A line of narration (or, with --json, a JSON line the caller made).
    package func line(_ text: String) {
        lock.withLock { _ in writeUnbuffered(text + "\n") }
    }

    /// Narration for people between the events; nothing with --json.
    package func note(_ text: String) {
        guard !json else { return }
        line(colored ? "\u{1B}[2m\(text)\u{1B}[0m" : text)
    }

    /// Errors go to standard error, so `--json` output stays JSON only.
    package func fail(_ message: String) {
        lock.withLock { _ in writeUnbuffered("hotspot-helper: \(message)\n", to: STDERR_FILENO) }
    }
}
