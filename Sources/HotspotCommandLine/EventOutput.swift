#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import HotspotRuntime
import ServiceIntegration
import Locking
package import HotspotCore

/// Renders events as JSON lines or as a timeline for people (coloured on a terminal); as
/// journal entries with fields of their own when standard output is the journal.
package final class EventOutput: Sendable {
    package let json: Bool
    private let colored: Bool
    private let lock = PlainLock(())
    /// Set when standard output is the journal (a service's, `JOURNAL_STREAM`).
    private let journal: JournalWriter?

    package init(json: Bool) {
        self.json = json
        colored = !json && isatty(STDOUT_FILENO) == 1 && ProcessInfo.processInfo.environment["NO_COLOR"] == nil
        journal = JournalWriter.forStream(STDOUT_FILENO)
    }

    package func write(_ event: HotspotEvent) {
        // An entry the journal did not take (too large for a datagram) goes out as a line.
        let time = EventTime.now
        if let journal, journal.send(event.journalFields(at: time)) { return }
        let line = json ? event.jsonLine(at: time) : event.timelineLine(colored: colored)
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
