public import HotspotCore
public import HotspotNetwork

extension HotspotEvent {
    /// One JSON object on one line, with the keys of the `connect --json` contract in order
    /// and explicit nulls.
    public var jsonLine: String {
        let fields: [(String, JSONScalar)]
        switch self {
        case .command(let event):
            fields = [("event", "command"), ("command", .string(event.command.rawValue)), ("helper", .string(event.helper)),
                      ("network", .string(event.network)), ("result", .string(event.result.rawValue)),
                      ("confidence", .string(event.confidence?.rawValue)), ("ms", .number(event.milliseconds)),
                      ("error", .string(event.error))]
        case .state(let event):
            fields = [("event", "state"), ("network", .string(event.network)), ("from", .string(event.from.rawValue)),
                      ("to", .string(event.to.rawValue)), ("helper", .string(event.helper))]
        case .done(let event):
            fields = [("event", "done"), ("network", .string(event.network)), ("state", .string(event.state.rawValue)),
                      ("helper", .string(event.helper))]
        case .log(let event):
            fields = [("event", "log"), ("network", .string(event.network)), ("helper", .string(event.helper)),
                      ("command", .string(event.command?.rawValue)), ("level", .string(event.level.rawValue)),
                      ("message", .string(event.message))]
        case .reload(let event):
            fields = [("event", "reload"), ("reason", .string(event.reason)), ("added", .strings(event.added)),
                      ("reloaded", .strings(event.reloaded)), ("removed", .strings(event.removed)),
                      ("problems", .strings(event.problems))]
        case .connectivity(let event):
            fields = [("event", "connectivity"), ("network", .string(event.network)), ("verdict", .string(event.verdict.rawValue)),
                      ("portal_url", .string(event.portalURL)), ("interface_kind", .string(event.interfaceKind?.rawValue)),
                      ("helper", .string(event.helper))]
        }
        return "{" + fields.map { "\(JSONScalar.string($0.0).json):\($0.1.json)" }.joined(separator: ",") + "}"
    }

    /// A line of the readable timeline.
    public func timelineLine(colored: Bool) -> String {
        func paint(_ text: String, _ code: String) -> String { colored ? "\u{1B}[\(code)m\(text)\u{1B}[0m" : text }
        let network = self.network.map { "[\($0)] " } ?? ""
        switch self {
        case .command(let event):
            let painted = paint(event.result.rawValue, event.result == .success ? "32" : event.result == .failure ? "31" : "33")
            let confidence = event.confidence.map { " confidence \($0.rawValue)" } ?? ""
            let error = event.error.map { " — " + paint($0, "31") } ?? ""
            return "\(network)\(event.command.rawValue) → \(event.helper): \(painted)\(confidence)"
                + " (\(event.milliseconds.withOneDecimal) ms)\(error)"
        case .state(let event):
            let by = event.helper.map { " (\($0))" } ?? ""
            return "\(network)\(event.from.rawValue) ⇒ \(paint(event.to.rawValue, "1"))\(by)"
        case .done(let event):
            let by = event.helper.map { " by \($0)" } ?? " with no helper"
            return "\(network)done: \(paint(event.state.rawValue, event.state == .authenticated ? "32;1" : "31;1"))\(by)"
        case .log(let event):
            let source = event.helper.map { "\($0): " } ?? ""
            let level = paint(event.level.rawValue, event.level == .error || event.level == .warn ? "33" : "2")
            return "\(network)\(level) \(source)\(event.message)"
        case .reload(let event):
            var parts: [String] = []
            if !event.added.isEmpty { parts.append("added " + event.added.joined(separator: ", ")) }
            if !event.reloaded.isEmpty { parts.append("reloaded " + event.reloaded.joined(separator: ", ")) }
            if !event.removed.isEmpty { parts.append("removed " + event.removed.joined(separator: ", ")) }
            if parts.isEmpty { parts.append(event.problems.isEmpty ? "nothing changed" : "nothing loaded") }
            var line = "reload (\(event.reason)): " + parts.joined(separator: "; ")
            for problem in event.problems { line += "\n  " + paint(problem, "31") }
            if !event.problems.isEmpty { line += "\n  scripts that loaded before keep their last good version" }
            return line
        case .connectivity(let event):
            let portal = event.portalURL.map { " at \($0)" } ?? ""
            let over = event.interfaceKind.map { " over \($0.rawValue)" } ?? ""
            let after = event.helper.map { " after \($0)'s success" } ?? ""
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
                  problems: change.problems.map(\.description))
    }
}

private enum JSONScalar: ExpressibleByStringLiteral {
    case string(String?)
    case number(Double?)
    case strings([String]?)

    init(stringLiteral value: String) { self = .string(value) }

    var json: String {
        switch self {
        case .string(nil), .number(nil), .strings(nil): return "null"
        case .strings(let values?): return "[" + values.map { JSONScalar.string($0).json }.joined(separator: ",") + "]"
        case .number(let value?):
            return value.plainDescription
        case .string(let value?):
            var out = "\""
            for scalar in value.unicodeScalars {
                switch scalar {
                case "\"": out += "\\\""
                case "\\": out += "\\\\"
                case "\n": out += "\\n"
                case "\r": out += "\\r"
                case "\t": out += "\\t"
                case _ where scalar.value < 0x20:
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                default: out.unicodeScalars.append(scalar)
                }
            }
            return out + "\""
        }
    }
}

extension Double {
    /// Without a fractional part when it has none ("12", "12.5"), as JSON writes numbers.
    package var plainDescription: String {
        rounded() == self && abs(self) < 1e15 ? String(Int64(self)) : String(self)
    }

    /// Rounded to one decimal ("12.0", "0.3").
    package var withOneDecimal: String {
        guard isFinite, abs(self) < 1e15 else { return String(self) }
        let tenths = Int64((abs(self) * 10).rounded())
        return (self < 0 && tenths != 0 ? "-" : "") + "\(tenths / 10).\(tenths % 10)"
    }
}
