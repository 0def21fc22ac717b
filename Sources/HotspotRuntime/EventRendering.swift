extension HotspotEvent {
    /// One JSON object on one line, with the keys of the `connect --json` contract in order
    /// and explicit nulls.
    public var jsonLine: String {
        var fields: [(String, JSONScalar)] = [("event", .string(event.rawValue))]
        switch event {
        case .command:
            fields += [("command", .string(command?.rawValue)), ("helper", .string(helper)),
                       ("network", .string(network)), ("result", .string(result?.rawValue)),
                       ("confidence", .string(confidence?.rawValue)), ("ms", .number(ms)), ("error", .string(error))]
        case .state:
            fields += [("network", .string(network)), ("from", .string(from?.rawValue)),
                       ("to", .string(to?.rawValue)), ("helper", .string(helper))]
        case .done:
            fields += [("network", .string(network)), ("state", .string(state?.rawValue)), ("helper", .string(helper))]
        case .log:
            fields += [("network", .string(network)), ("helper", .string(helper)), ("command", .string(command?.rawValue)),
                       ("level", .string(level)), ("message", .string(message))]
        case .reload:
            fields += [("reason", .string(reason)), ("added", .strings(reload?.added)), ("reloaded", .strings(reload?.reloaded)),
                       ("removed", .strings(reload?.removed)), ("problems", .strings(reload?.problems))]
        case .connectivity:
            fields += [("network", .string(network)), ("verdict", .string(verdict?.rawValue)),
                       ("portal_url", .string(portalURL)), ("interface_kind", .string(interfaceKind?.rawValue)),
                       ("helper", .string(helper))]
        }
        return "{" + fields.map { "\(JSONScalar.string($0.0).json):\($0.1.json)" }.joined(separator: ",") + "}"
    }

    /// A line of the readable timeline.
    public func timelineLine(colored: Bool) -> String {
        func paint(_ text: String, _ code: String) -> String { colored ? "\u{1B}[\(code)m\(text)\u{1B}[0m" : text }
        let network = self.network.map { "[\($0)] " } ?? ""
        switch event {
        case .command:
            let outcome = result?.rawValue ?? "?"
            let painted = paint(outcome, result == .success ? "32" : result == .failure ? "31" : "33")
            let confidence = self.confidence.map { " confidence \($0.rawValue)" } ?? ""
            let error = self.error.map { " — " + paint($0, "31") } ?? ""
            let milliseconds = ms.map { " (\($0.withOneDecimal) ms)" } ?? ""
            return "\(network)\(command?.rawValue ?? "?") → \(helper ?? "?"): \(painted)\(confidence)\(milliseconds)\(error)"
        case .state:
            let by = helper.map { " (\($0))" } ?? ""
            return "\(network)\(from?.rawValue ?? "?") ⇒ \(paint(to?.rawValue ?? "?", "1"))\(by)"
        case .done:
            let by = helper.map { " by \($0)" } ?? " with no helper"
            return "\(network)done: \(paint(state?.rawValue ?? "?", state == .authenticated ? "32;1" : "31;1"))\(by)"
        case .log:
            let source = helper.map { "\($0): " } ?? ""
            return "\(network)\(paint(level ?? "info", level == "error" || level == "warn" ? "33" : "2")) \(source)\(message ?? "")"
        case .reload:
            let summary = reload ?? ReloadSummary(HelperCatalog.Change())
            var parts: [String] = []
            if !summary.added.isEmpty { parts.append("added " + summary.added.joined(separator: ", ")) }
            if !summary.reloaded.isEmpty { parts.append("reloaded " + summary.reloaded.joined(separator: ", ")) }
            if !summary.removed.isEmpty { parts.append("removed " + summary.removed.joined(separator: ", ")) }
            if parts.isEmpty { parts.append(summary.problems.isEmpty ? "nothing changed" : "nothing loaded") }
            var line = "reload (\(reason ?? "asked")): " + parts.joined(separator: "; ")
            for problem in summary.problems { line += "\n  " + paint(problem, "31") }
            if !summary.problems.isEmpty { line += "\n  scripts that loaded before keep their last good version" }
            return line
        case .connectivity:
            let state = verdict?.rawValue ?? "?"
            let portal = portalURL.map { " at \($0)" } ?? ""
            let over = interfaceKind.map { " over \($0.rawValue)" } ?? ""
            let after = helper.map { " after \($0)'s success" } ?? ""
            return "\(network)connectivity: \(paint(state, verdict == .connected ? "32" : "33"))\(portal)\(over)\(after)"
        }
    }
}

private enum JSONScalar {
    case string(String?)
    case number(Double?)
    case strings([String]?)

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
    var plainDescription: String {
        rounded() == self && abs(self) < 1e15 ? String(Int64(self)) : String(self)
    }

    /// Rounded to one decimal ("12.0", "0.3").
    package var withOneDecimal: String {
        guard isFinite, abs(self) < 1e15 else { return String(self) }
        let tenths = Int64((abs(self) * 10).rounded())
        return (self < 0 && tenths != 0 ? "-" : "") + "\(tenths / 10).\(tenths % 10)"
    }
}
