import Foundation
import Testing
import TestSupport

/// Libraries most processes never use are opened on first use, in the process that uses
/// them: libxml2 (and the ICU it brings) by the first page or message a script reads, in that
/// script's worker only; libsystemd (and the libraries it brings) by the first D-Bus
/// connection, which only a daemon following NetworkManager, or the person's page on a
/// desktop (for its notifications), makes.
@Suite struct LibraryLoadingTests {
    /// libsystemd and the libraries only it brings here (libcurl brings libzstd too).
    static let systemd = ["libsystemd.so", "libgcrypt.so", "liblzma.so", "liblz4.so", "libcap.so"]

    /// The libraries of `pid` among `names`, from its memory map (read to the end: /proc
    /// files have no size).
    static func mapped(_ names: [String], by pid: Int32) throws -> Set<String> {
        let maps = try #require(FileHandle(forReadingAtPath: "/proc/\(pid)/maps")).readToEnd() ?? Data()
        let text = String(decoding: maps, as: UTF8.self)
        return Set(names.filter { text.contains("/\($0)") })
    }

    @Test func libxml2IsLoadedByTheFirstPageAScriptReadsInItsWorkerOnly() async throws {
        // Logging off reads a page; joining reads nothing.
        let scripts = try CLI.temporaryDirectory(scripts: ["reader.lua": """
            return {
              name = "Reader",
              hosts = { "portal.example" },
              evaluate = function(cmd) return "high" end,
              authenticate = function(cmd) return "success" end,
              maintain = function(cmd) return "success" end,
              logoff = function(cmd)
                return html.text("<p>Signed <b>out</b></p>") == "Signed out" and "success" or "failure"
              end,
            }
            """])
        let state = try CLI.temporaryDirectory()
        let daemon = try RunningCLI(["run", "--json", "--scripts", scripts, "--source", "interface:lo:Reading-Room",
                                     "--state-dir", state, "--probe-interval", "0"])
        try await daemon.waitForEvent(DaemonTests.isState("authenticated", "Reading-Room"))
        let supervisor = daemon.process.processIdentifier
        let worker = try #require(try childProcesses(of: supervisor).first)
        let markup = ["libxml2.so", "libicuuc.so", "libicudata.so"]
        #expect(try Self.mapped(markup, by: supervisor).isEmpty)
        #expect(try Self.mapped(markup, by: worker).isEmpty)
        #expect(try Self.mapped(Self.systemd, by: supervisor).isEmpty)
        #expect(try Self.mapped(Self.systemd, by: worker).isEmpty)

        let logoff = try await CLI.run(["logoff", "Reading-Room", "--state-dir", state])
        #expect(logoff.status == 0, "\(logoff.errors)")
        try await daemon.waitForEvent(DaemonTests.isCommand("logoff"))
        #expect(try Self.mapped(markup, by: worker) == Set(markup))
        #expect(try Self.mapped(markup, by: supervisor).isEmpty)
        daemon.signal(SIGTERM)
        #expect(try await daemon.waitForExit() == 0)
    }

    @Test func libsystemdIsLoadedByTheFirstDBusConnectionInTheSupervisorOnly() async throws {
        // A system bus nobody listens on: the source tries it, says so and keeps trying.
        let bus = try CLI.temporaryDirectory() + "/no-bus"
        let state = try CLI.temporaryDirectory()
        let scripts = try CLI.temporaryDirectory(scripts: ["any.lua": #"return { name = "Any", hosts = { "portal.example" }, evaluate = function(cmd) return "none" end }"#])
        let daemon = try RunningCLI(["run", "--json", "--scripts", scripts, "--source", "networkmanager",
                                     "--state-dir", state],
                                    environment: ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=\(bus)"])
        try await daemon.waitForEvent { event in
            event["event"] as? String == "log" && (event["message"] as? String)?.contains("NetworkManager cannot be followed") == true
        }
        let supervisor = daemon.process.processIdentifier
        let worker = try #require(try childProcesses(of: supervisor).first)
        #expect(try Self.mapped(["libsystemd.so"], by: supervisor) == ["libsystemd.so"])
        #expect(try Self.mapped(Self.systemd, by: worker).isEmpty)
        daemon.signal(SIGTERM)
        #expect(try await daemon.waitForExit() == 0)
    }

    @Test func thePersonsPageWithNoSessionBusDoesNotOpenLibsystemd() async throws {
        let scripts = try CLI.temporaryDirectory(scripts: ["any.lua": #"return { name = "Any", hosts = { "portal.example" }, evaluate = function(cmd) return "none" end }"#])
        let state = try CLI.temporaryDirectory()
        let daemon = try RunningCLI(["run", "--json", "--scripts", scripts, "--source", "interface:lo:Reading-Room",
                                     "--state-dir", state, "--probe-interval", "0"])
        try await daemon.waitForEvent { $0["event"] as? String == "reload" }
        // No desktop: nothing to show notifications on.
        let web = try RunningCLI(["web", "--state-dir", state, "--no-open"],
                                 environment: ["DBUS_SESSION_BUS_ADDRESS": "", "XDG_RUNTIME_DIR": ""])
        try await eventually("the page's address") { web.standardOutput.contains("?token=") }
        // `web` replaced itself with hotspot-helper-web (execv): the same process.
        #expect(try Self.mapped(Self.systemd, by: web.process.processIdentifier).isEmpty)
        web.signal(SIGTERM)
        _ = try await web.waitForExit()
        daemon.signal(SIGTERM)
        #expect(try await daemon.waitForExit() == 0)
    }
}
