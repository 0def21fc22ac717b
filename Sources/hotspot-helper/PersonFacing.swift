#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import HotspotCommandLine
import HotspotCore
import HotspotControl

/// Asks a helper's questions on the terminal, one field at a time, until each answer does.
enum TerminalPrompt {
    static func ask(_ questions: PersonQuestions) throws -> [String: String] {
        // The helper's texts, escaped as every text output escapes what came from outside.
        writeUnbuffered("\(questions.title.escapingControlCharacters())\n")
        if let message = questions.message { writeUnbuffered("\(message.escapingControlCharacters())\n") }
        var answers: [String: String] = [:]
        for field in questions.fields {
            while true {
                let answer = try read(field)
                if answer.isEmpty {
                    if !field.required { break }
                    writeUnbuffered("  \(field.label.escapingControlCharacters()) is required.\n")
                    continue
                }
                if let problem = field.problem(with: answer) {
                    writeUnbuffered("  \(field.label.escapingControlCharacters()) \(problem).\n")
                    continue
                }
                answers[field.name] = answer
                break
            }
        }
        return answers
    }

    /// One answer; a choice may be given by its number.
    private static func read(_ field: PersonQuestions.Field) throws -> String {
        let optional = field.required ? "" : " (optional)"
        let label = field.label.escapingControlCharacters()
        switch field.kind {
        case .choice:
            for (index, option) in field.options.enumerated() {
                writeUnbuffered("  \(index + 1). \(option.label.escapingControlCharacters())\n")
            }
            writeUnbuffered("\(label)\(optional) [1-\(field.options.count)]: ")
            let answer = try line()
            if let number = Int(answer), field.options.indices.contains(number - 1) { return field.options[number - 1].value }
            return answer
        case .checkbox:
            writeUnbuffered("\(label) [y/n]: ")
            return try line()
        case .password:
            writeUnbuffered("\(label)\(optional): ")
            return try hiddenLine()
        case .text, .email, .number:
            writeUnbuffered("\(label)\(optional): ")
            return try line()
        }
    }

    private static func line() throws -> String {
        guard let line = readLine() else {
            writeUnbuffered("\nhotspot-helper: no answer; nothing was sent\n", to: STDERR_FILENO)
            throw ExitCode(1)
        }
        return line.trimmingWhitespace()
    }

    /// A line typed with the terminal's echo off.
    private static func hiddenLine() throws -> String {
        var saved = termios()
        guard tcgetattr(STDIN_FILENO, &saved) == 0 else { return try line() }
        var hidden = saved
        hidden.c_lflag &= ~tcflag_t(ECHO)
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &hidden)
        defer {
            tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved)
            writeUnbuffered("\n")
        }
        return try line()
    }
}

/// `hotspot-helper status` as text.
enum StatusText {
    static func render(_ status: DaemonStatus) -> String {
        var lines: [String] = []
        for network in status.networks {
            // The helper by its display name (the gateway family, for a family helper) and id.
            let helper = network.helper.map { id in
                ", helper " + (status.helpers.first { $0.id == id }.map { "\($0.displayName) (\(id))" } ?? id)
            } ?? ""
            lines.append("\(network.ssid) on \(network.interface ?? "?"): \(network.state.rawValue)\(helper)")
            if let seconds = network.retryInSeconds {
                let why = network.autoJoinDisabled ? "a helper failed; tried again on a long backoff" : "tried again on a short backoff"
                lines.append("  \(why): next try in \(spoken(seconds)); now with: hotspot-helper join \(network.ssid)")
            } else if network.autoJoinDisabled {
                lines.append("  a helper failed; tried again on a long backoff, now with: hotspot-helper join \(network.ssid)")
            }
            if let questions = network.questions {
                lines.append("  waits for a person: \(questions.title)" + (questions.message.map { ". \($0)" } ?? ""))
                for field in questions.fields {
                    lines.append("    \(field.name): \(field.label) (\(field.kind.rawValue)\(field.required ? ", required" : ""))")
                }
                lines.append("  answer with: hotspot-helper ui \(network.ssid)")
            } else if network.state == .presentingUI {
                lines.append("  waits for a person: hotspot-helper ui \(network.ssid) --answer name=value")
            }
            if let connectivity = network.connectivity {
                lines.append("  connectivity: \(connectivity)" + (network.portalURL.map { ", portal \($0)" } ?? ""))
            }
            if !network.recentCommands.isEmpty {
                lines.append("  recent commands:")
                for command in network.recentCommands {
                    let error = command.error.map { ": \($0)" } ?? ""
                    lines.append("    \(command.command.rawValue) \(command.helper) \(command.result.rawValue) "
                                 + "\(Int(command.milliseconds.rounded())) ms\(error)")
                }
            }
        }
        let helpers = status.helpers.map { helper in
            let off = helper.switchedOff ? ", switched off" : helper.offFor.isEmpty ? "" : ", off for \(helper.offFor.joined(separator: ", "))"
            return "\(helper.id) (\(helper.displayName)\(off))"
        }
        lines.append("helpers: " + (helpers.isEmpty ? "none" : helpers.joined(separator: ", ")))
        if let version = status.catalogVersion { lines.append("catalog: version \(version)") }
        // Each line is one line: what came from the daemon (SSIDs, portals' URLs, scripts'
        // texts and errors) has its control characters escaped.
        return lines.map { $0.escapingControlCharacters() }.joined(separator: "\n")
    }

    /// `4 min 59 s`, `12 s`.
    static func spoken(_ seconds: Int) -> String {
        seconds < 60 ? "\(seconds) s" : seconds % 60 == 0 ? "\(seconds / 60) min" : "\(seconds / 60) min \(seconds % 60) s"
    }
}
