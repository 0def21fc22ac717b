#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import HotspotCommandLine
import FoundationEssentials
import HotspotCore
import HotspotRuntime
import HotspotControl

/// Where the running daemon is: the options every control command shares.
struct DaemonOptions: ParsableArguments {
    @Option(name: .customLong("state-dir"), help: ArgumentHelp("The daemon's --state-dir.", valueName: "dir"))
    var stateDirectory = "/var/lib/hotspot-helper"

    @Option(name: .customLong("control-socket"),
            help: ArgumentHelp("The daemon's --control-socket (default: STATE-DIR/control.sock).", valueName: "path"))
    var controlSocket: String?

    /// Sends `request`, prints the daemon's answer, and exits 1 when it did not do it.
    func send(_ request: ControlRequest) throws {
        let reply = try exchange(request)
        if reply.ok {
            print(reply.message.escapingControlCharacters())
        } else {
            writeUnbuffered("hotspot-helper: \(reply.message.escapingControlCharacters())\n", to: STDERR_FILENO)
            throw ExitCode(1)
        }
    }

    /// The daemon's reply to `request`, or exit 1 saying why there is none.
    func exchange(_ request: ControlRequest) throws -> ControlReply {
        do {
            return try ControlClient.send(request, to: controlSocket ?? stateDirectory + "/" + ControlServer.fileName)
        } catch {
            writeUnbuffered("hotspot-helper: \(error.description)\n", to: STDERR_FILENO)
            throw ExitCode(1)
        }
    }
}

struct UI: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ui",
        abstract: "Answers the form of a network that waits for a person (presenting_ui) in the running daemon.",
        discussion: """
            The network's helper gets present_ui with the answers as cmd.answers. On a \
            terminal, with no --answer or --answers, it asks the helper's questions one by one \
            (a password is typed hidden); the answers are checked against them before the \
            helper gets them, and the network keeps waiting when they do not do.

            Examples:
              hotspot-helper ui City-Library
              hotspot-helper ui City-Library --answer email=guest@example.org

            Exit status: 0 when the network is authenticated afterwards, 1 otherwise (the \
            network does not wait for a person, the helper failed, no daemon runs).
            """)

    @Argument(help: ArgumentHelp("The network's SSID.", valueName: "network"))
    var network: String

    @OptionGroup var answerOptions: AnswerOptions

    @OptionGroup var daemon: DaemonOptions

    func run() throws {
        var answers = try answerOptions.answers()
        if !answerOptions.given, isatty(STDIN_FILENO) == 1 {
            let status = try daemon.exchange(ControlRequest(command: .status)).status
            if let questions = status?.networks.first(where: { $0.ssid == network })?.questions {
                answers = try TerminalPrompt.ask(questions)
            }
        }
        try daemon.send(ControlRequest(command: .ui, network: network, answers: answers))
    }
}

struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Shows the running daemon's networks: their state, helper, questions waiting for a person, connectivity and last commands.",
        discussion: "Exit status: 0, or 1 when no daemon answers.")

    @Flag(help: "Print the status as one JSON object.")
    var json = false

    @OptionGroup var daemon: DaemonOptions

    func run() throws {
        guard let status = try daemon.exchange(ControlRequest(command: .status)).status else {
            writeUnbuffered("hotspot-helper: the daemon sent no status (an older version?)\n", to: STDERR_FILENO)
            throw ExitCode(1)
        }
        print(json ? String(decoding: try JSONEncoder().encode(status), as: UTF8.self) : StatusText.render(status))
    }
}

struct Logoff: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "logoff",
        abstract: "Logs the running daemon off a network (the helper's logoff), until its link comes back.",
        discussion: "Exit status: 0 when logged off, 1 otherwise (not authenticated, no daemon runs).")

    @Argument(help: ArgumentHelp("The network's SSID.", valueName: "network"))
    var network: String

    @OptionGroup var daemon: DaemonOptions

    func run() throws {
        try daemon.send(ControlRequest(command: .logoff, network: network))
    }
}

struct Join: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "join",
        abstract: "Joins a network of the running daemon again now, with its auto-join enabled again.",
        discussion: """
            After a helper answered failure, the daemon tries the network again only on a long \
            backoff (5 minutes, doubling up to an hour); this tries it now (and after a logoff, \
            joins it before its link comes back).

            Exit status: 0 when the network is authenticated or waits for a person afterwards, 1 \
            otherwise (the helper failed again, the link is down, no daemon runs).
            """)

    @Argument(help: ArgumentHelp("The network's SSID.", valueName: "network"))
    var network: String

    @OptionGroup var daemon: DaemonOptions

    func run() throws {
        try daemon.send(ControlRequest(command: .join, network: network))
    }
}

/// `disable` and `enable`: the same request, switching a helper off or on.
struct HelperSwitchOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The helper: the script's file name without .lua.", valueName: "name"))
    var helper: String

    @Option(help: ArgumentHelp("Only for this network (default: everywhere).", valueName: "ssid"))
    var ssid: String?

    @OptionGroup var daemon: DaemonOptions

    func send(_ command: ControlRequest.Command) throws {
        try daemon.send(ControlRequest(command: command, network: ssid, helper: helper))
    }
}

struct Disable: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "disable",
        abstract: "Switches a helper off in the running daemon, everywhere or for one network; it survives restarts.",
        discussion: "A switched-off helper gets no command; a network it had authenticated is evaluated again at its next join.")

    @OptionGroup var options: HelperSwitchOptions

    func run() throws { try options.send(.disable) }
}

struct Enable: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "enable",
        abstract: "Switches a helper back on in the running daemon, everywhere or for one network.")

    @OptionGroup var options: HelperSwitchOptions

    func run() throws { try options.send(.enable) }
}
