#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import FoundationEssentials
import HotspotCommandLine
import PortalRecording

/// `har`: what the devtools do with a browser's recording of a portal login.
struct Har: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "har", abstract: DevTools.harAbstract, subcommands: [HarImport.self])
}

/// `har import FILE`: reads the login, says what it found and what it left out, and writes
/// a venue script from it.
struct HarImport: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Reads a HAR of one portal login, reports what it found, and writes a venue script that logs in the same way.",
        discussion: """
            Record the login in a browser first: open DevTools (F12), its Network tab, tick \
            "Preserve log", join the venue's network, open http://neverssl.com/ (or let the \
            portal appear), log in, then "Save all as HAR" (Chromium and Firefox alike; \
            mitmproxy writes HARs too).

            The import finds the connectivity check the portal intercepted, its redirects, \
            the pages, each form the person submitted (what the page handed out, what was \
            ticked, what was typed) and the calls a page's script made, and the request after \
            which the network was open. It prints that, with every value the person typed, \
            every cookie and token shown as [stripped], and a count of what it left out.

            With --output it writes a venue script that logs in as the recording did: each \
            form found again on the page the portal serves and sent with cmd:submit, what \
            the person typed as the secret of the field's name or, failing that, a question \
            to the person; hosts from the hosts the portal used; evaluate from --ssid and \
            the portal's host; logoff when the recording logged off. Nothing recorded goes \
            into it (the import refuses to write a script that would carry a recorded \
            secret) unless --keep-values keeps what was typed.

            Examples:
              hotspot-helper har import login.har
              hotspot-helper har import login.har --ssid Aroma-Guest --output aroma.lua
              hotspot-helper check aroma.lua
              hotspot-helper test aroma.lua --har login.har --secrets secrets.ini

            Exit status: 0 when the recording was read (and the script written), 1 when the \
            file is not a HAR of a portal login (the message names what and where; nothing is \
            written), 2 for usage errors.
            """)

    @Argument(help: ArgumentHelp("The HAR file.", valueName: "file"))
    var file: String

    @Option(help: ArgumentHelp("The network's SSID, which the script claims with high confidence.", valueName: "ssid"))
    var ssid: String?

    @Option(help: ArgumentHelp("Write the venue script to this file.", valueName: "file"))
    var output: String?

    @Flag(name: .customLong("keep-values"), help: "Keep what the person typed: shown in the report, and in the script as the values it falls back on.")
    var keepValues = false

    func run() async throws {
        let login: PortalLogin
        do {
            login = try PortalLogin.read(file)
        } catch {
            writeUnbuffered("hotspot-helper: \(error)\n", to: STDERR_FILENO)
            throw ExitCode(1)
        }
        let redaction = Redaction(login)
        var script: String?
        if let output {
            let name = output.split(separator: "/").last.map(String.init) ?? output
            do {
                script = try VenueScriptWriter(login: login, ssid: ssid, keepValues: keepValues).script(name: name, redaction: redaction)
            } catch {
                writeUnbuffered("hotspot-helper: \(output): \(error)\n", to: STDERR_FILENO)
                throw ExitCode(1)
            }
        }
        let report = ImportReport.lines(login, redaction: redaction, keepValues: keepValues).joined(separator: "\n") + "\n"
        if !keepValues, let kind = redaction.leak(in: report) {
            writeUnbuffered("hotspot-helper: the report would show a recorded \(kind.noun); nothing was printed\n", to: STDERR_FILENO)
            throw ExitCode(1)
        }
        writeUnbuffered(report)
        guard let output, let script else { return }
        do {
            // Whole or not at all: a script half written would load as a broken helper.
            try Data(script.utf8).write(to: URL(fileURLWithPath: output), options: .atomic)
        } catch {
            writeUnbuffered("hotspot-helper: cannot write \(output): \(error)\n", to: STDERR_FILENO)
            throw ExitCode(1)
        }
        writeUnbuffered("wrote       \(output): check it with `hotspot-helper check \(output)`, test it with "
            + "`hotspot-helper test \(output) --har \(file)`\n")
    }
}
