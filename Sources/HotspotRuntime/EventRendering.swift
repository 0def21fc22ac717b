#if canImport(Glibc)
import Glibc
#endif
public import HotspotCore
public import HotspotNetwork
import JSON

/// When an event was written, from the real-time clock: what `--json` lines and journal
/// entries carry, so a log read later says when each thing happened.
public struct EventTime: Sendable {
    let seconds: Int
    let nanoseconds: Int

    public static var now: EventTime {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return EventTime(seconds: spec.tv_sec, nanoseconds: spec.tv_nsec)
    }

    /// RFC 3339 in UTC with milliseconds: `2026-11-28T10:32:15.123Z`.
    public var rfc3339: String {
        var seconds = self.seconds
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func padded(_ value: Int, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return padded(Int(parts.tm_year) + 1900, 4) + "-" + padded(Int(parts.tm_mon) + 1, 2) + "-" + padded(Int(parts.tm_mday), 2)
            + "T" + padded(Int(parts.tm_hour), 2) + ":" + padded(Int(parts.tm_min), 2) + ":" + padded(Int(parts.tm_sec), 2)
            + "." + padded(nanoseconds / 1_000_000, 3) + "Z"
    }

    /// Microseconds since the epoch, as the journal's own realtime fields count.
    public var microseconds: String { String(seconds * 1_000_000 + nanoseconds / 1000) }
}

extension HotspotEvent {
    /// One JSON object on one line, with the keys of the `connect --json` contract in order
    /// and explicit nulls, and last `time`, when it was written.
    public func jsonLine(at time: EventTime) -> String {
        let fields: [(name: String, value: JSONValue)]
        switch self {
        case .command(let event):
            fields = [("event", .text("command")), ("command", .text(event.command.rawValue)), ("helper", .text(event.helper)),
                      ("network", .text(event.network)), ("result", .text(event.result.rawValue)),
                      ("confidence", .text(event.confidence?.rawValue)), ("ms", .number(event.milliseconds)),
                      ("error", .text(event.error))]
        case .state(let event):
            fields = [("event", .text("state")), ("network", .text(event.network)), ("from", .text(event.from.rawValue)),
                      ("to", .text(event.to.rawValue)), ("helper", .text(event.helper))]
        case .done(let event):
            fields = [("event", .text("done")), ("network", .text(event.network)), ("state", .text(event.state.rawValue)),
                      ("helper", .text(event.helper))]
        case .log(let event):
            fields = [("event", .text("log")), ("network", .text(event.network)), ("helper", .text(event.helper)),
                      ("command", .text(event.command?.rawValue)), ("level", .text(event.level.rawValue)),
                      ("message", .text(event.message))]
        case .reload(let event):
            fields = [("event", .text("reload")), ("reason", .text(event.reason)), ("added", .texts(event.added)),
                      ("reloaded", .texts(event.reloaded)), ("removed", .texts(event.removed)),
                      ("problems", .texts(event.problems))]
                // Only from a signed catalog: plain script directories' events stay as they were.
                + (event.catalogVersion.map { [("catalog_version", .text($0))] } ?? [])
        case .connectivity(let event):
            fields = [("event", .text("connectivity")), ("network", .text(event.network)), ("verdict", .text(event.verdict.rawValue)),
                      ("portal_url", .text(event.portalURL)), ("interface_kind", .text(event.interfaceKind?.rawValue)),
                      ("helper", .text(event.helper))]
        }
        return String(decoding: JSONValue(members: fields + [("time", .text(time.rfc3339))]).serialized(), as: UTF8.self)
    }

    /// The event as a journal entry: the timeline's line as `MESSAGE`, a `PRIORITY` from its
    /// level or result, a `MESSAGE_ID` of its kind, when it was written as `HH_REALTIME_USEC`,
    /// and each of its fields as `HH_*`, so `journalctl HH_NETWORK=Grand-Hotel HH_RESULT=failure`
    /// selects on them.
    public func journalFields(at time: EventTime) -> [(name: String, value: String)] {
        var fields: [(name: String, value: String)] = [("MESSAGE", timelineLine(colored: false, keepingNewlines: true)),
                                                       ("PRIORITY", String(journalPriority.rawValue)),
                                                       ("MESSAGE_ID", journalMessageID), ("SYSLOG_IDENTIFIER", "hotspot-helper"),
                                                       ("HH_REALTIME_USEC", time.microseconds)]
        func add(_ name: String, _ value: String?) {
            if let value { fields.append(("HH_" + name, value)) }
        }
        switch self {
        case .command(let event):
            add("EVENT", "command")
            add("NETWORK", event.network)
            add("HELPER", event.helper)
            add("COMMAND", event.command.rawValue)
            add("RESULT", event.result.rawValue)
            add("CONFIDENCE", event.confidence?.rawValue)
            add("MS", event.milliseconds.withOneDecimal)
            add("ERROR", event.error)
        case .state(let event):
            add("EVENT", "state")
            add("NETWORK", event.network)
            add("FROM", event.from.rawValue)
            add("STATE", event.to.rawValue)
            add("HELPER", event.helper)
        case .done(let event):
            add("EVENT", "done")
            add("NETWORK", event.network)
            add("STATE", event.state.rawValue)
            add("HELPER", event.helper)
        case .log(let event):
            add("EVENT", "log")
            add("NETWORK", event.network)
            add("HELPER", event.helper)
            add("COMMAND", event.command?.rawValue)
            add("LEVEL", event.level.rawValue)
        case .reload(let event):
            add("EVENT", "reload")
            add("REASON", event.reason)
            add("ADDED", event.added.isEmpty ? nil : event.added.joined(separator: " "))
            add("RELOADED", event.reloaded.isEmpty ? nil : event.reloaded.joined(separator: " "))
            add("REMOVED", event.removed.isEmpty ? nil : event.removed.joined(separator: " "))
            add("PROBLEMS", event.problems.isEmpty ? nil : event.problems.joined(separator: "\n"))
            add("CATALOG_VERSION", event.catalogVersion)
        case .connectivity(let event):
            add("EVENT", "connectivity")
            add("NETWORK", event.network)
            add("VERDICT", event.verdict.rawValue)
            add("PORTAL_URL", event.portalURL)
            add("INTERFACE_KIND", event.interfaceKind?.rawValue)
            add("HELPER", event.helper)
        }
        return fields
    }

    /// syslog's levels, as the journal's `PRIORITY` takes them.
    public enum JournalPriority: Int, Sendable {
        case error = 3, warning = 4, notice = 5, info = 6, debug = 7
    }

    public var journalPriority: JournalPriority {
        switch self {
        case .command(let event):
            switch event.result {
            case .failure, .temporaryFailure: .warning
            default: .info
            }
        case .state(let event): event.to == .failure ? .warning : .info
        case .done(let event): event.state == .authenticated ? .notice : .warning
        case .log(let event):
            switch event.level {
            case .error: .error
            case .warn: .warning
            case .info, .print: .info
            case .debug: .debug
            }
        case .reload(let event): event.problems.isEmpty ? .notice : .warning
        case .connectivity: .info
        }
    }

    /// One fixed id per kind of event (`journalctl MESSAGE_ID=...` finds every event of a kind).
    public var journalMessageID: String {
        switch self {
        case .command: "6a57ab065b044a96bb90f15868bd9522"
        case .state: "28729c7f87b242a7bbaccb670ae554f6"
        case .done: "ce000402a4634697aeed2756d0115a9a"
        case .log: "db0d8ed2f5a243f9a162c9983fa5e7f3"
        case .reload: "88de100c264b4a938e4609ff65762264"
        case .connectivity: "0585580185e5419f83fad21382d5e4c0"
        }
    }

    /// A line of the readable timeline. Every text in it came from outside (SSIDs, portals'
    /// URLs, scripts' names, messages and errors): each has its control characters escaped,
    /// newlines too unless `keepingNewlines` (the journal's entries are records of their own).
    public func timelineLine(colored: Bool, keepingNewlines: Bool = false) -> String {
        func paint(_ text: String, _ code: String) -> String { colored ? "\u{1B}[\(code)m\(text)\u{1B}[0m" : text }
        func safe(_ text: String) -> String { text.escapingControlCharacters(keepingNewlines: keepingNewlines) }
        let network = self.network.map { "[\(safe($0))] " } ?? ""
        switch self {
        case .command(let event):
            let painted = paint(event.result.rawValue, event.result == .success ? "32" : event.result == .failure ? "31" : "33")
            let confidence = event.confidence.map { " confidence \($0.rawValue)" } ?? ""
            let error = event.error.map { " — " + paint(safe($0), "31") } ?? ""
            return "\(network)\(event.command.rawValue) → \(safe(event.helper)): \(painted)\(confidence)"
                + " (\(event.milliseconds.withOneDecimal) ms)\(error)"
        case .state(let event):
            let by = event.helper.map { " (\(safe($0)))" } ?? ""
            return "\(network)\(event.from.rawValue) ⇒ \(paint(event.to.rawValue, "1"))\(by)"
        case .done(let event):
            let by = event.helper.map { " by \(safe($0))" } ?? " with no helper"
            return "\(network)done: \(paint(event.state.rawValue, event.state == .authenticated ? "32;1" : "31;1"))\(by)"
        case .log(let event):
            let source = event.helper.map { "\(safe($0)): " } ?? ""
            let level = paint(event.level.rawValue, event.level == .error || event.level == .warn ? "33" : "2")
            return "\(network)\(level) \(source)\(safe(event.message))"
        case .reload(let event):
            var parts: [String] = []
            if !event.added.isEmpty { parts.append("added " + event.added.map(safe).joined(separator: ", ")) }
            if !event.reloaded.isEmpty { parts.append("reloaded " + event.reloaded.map(safe).joined(separator: ", ")) }
            if !event.removed.isEmpty { parts.append("removed " + event.removed.map(safe).joined(separator: ", ")) }
            if parts.isEmpty { parts.append(event.problems.isEmpty ? "nothing changed" : "nothing loaded") }
            let catalog = event.catalogVersion.map { "catalog version \(safe($0)): " } ?? ""
            var line = "reload (\(safe(event.reason))): " + catalog + parts.joined(separator: "; ")
            for problem in event.problems { line += "\n  " + paint(safe(problem), "31") }
            if !event.problems.isEmpty { line += "\n  scripts that loaded before keep their last good version" }
            return line
        case .connectivity(let event):
            let portal = event.portalURL.map { " at \(safe($0))" } ?? ""
            let over = event.interfaceKind.map { " over \($0.rawValue)" } ?? ""
            let after = event.helper.map { " after \(safe($0))'s success" } ?? ""
            return "\(network)connectivity: \(paint(event.verdict.rawValue, event.verdict == .connected ? "32" : "33"))\(portal)\(over)\(after)"
        }
    }
}

extension ConnectivityEvent {
    /// A `connectivity` event for `verdict` on `network`; `helper` when the check followed its success.
    public init(_ verdict: ConnectivityVerdict, network: String?, helper: String? = nil) {
        self.init(network: network, verdict: verdict.state, portalURL: verdict.portalURL,
                  interfaceKind: verdict.interfaceKind, helper: helper)
    }
}

extension ReloadEvent {
    public init(reason: String, _ change: HelperCatalog.Change) {
        self.init(reason: reason, added: change.added, reloaded: change.reloaded, removed: change.removed,
                  problems: change.problems.map(\.description), catalogVersion: change.catalogVersion)
    }
}

private extension JSONValue {
    /// `text` as a JSON string, null when there is none (the contract's explicit nulls).
    static func text(_ text: String?) -> JSONValue { text.map { .string(Array($0.utf8)) } ?? .null }

    static func texts(_ texts: [String]) -> JSONValue { .array(texts.map { .text($0) }) }
}

extension Double {
    /// Rounded to one decimal ("12.0", "0.3").
    package var withOneDecimal: String {
        guard isFinite, abs(self) < 1e15 else { return String(self) }
        let tenths = Int64((abs(self) * 10).rounded())
        return (self < 0 && tenths != 0 ? "-" : "") + "\(tenths / 10).\(tenths % 10)"
    }
}
