import Foundation
import Testing
import TestSupport

/// Libraries most processes never use are opened on first use, in the process that uses
/// them: libxml2 (and the ICU it brings) by the first page or message a script reads, in that
/// script's worker only; libsystemd (and the libraries it brings) by the first D-Bus
/// connection, which only a daemon following NetworkManager, or the person's page on a
/// desktop (for its notifications), makes. libcurl and libxml2 are the project's own builds
/// (HTTP and HTTPS only; no ICU) where they are installed beside the executable, and
/// Debian's where they are not.
@Suite struct LibraryLoadingTests {
    /// libsystemd and the libraries only it brings here (libcurl brings libzstd too).
    static let systemd = ["libsystemd.so", "libgcrypt.so", "liblzma.so", "liblz4.so", "libcap.so"]

    /// The project's libcurl and libxml2 (`make private-libraries`), as `make test` leaves them
    /// beside the build's folder.
    static let projectsLibcurl = "lib/hotspot-helper/libcurl.so.4"
    static let projectsLibxml2 = "lib/hotspot-helper/libxml2.so.2"

    /// Libraries that Debian's libcurl and libxml2 bring and the project's do not (OpenSSL and
    /// zlib only; iconv for encodings, not ICU).
    static let debiansOnly = ["libgnutls.so", "libgssapi_krb5.so", "libldap-2.5.so", "librtmp.so", "libssh2.so", "libnghttp2.so",
                              "libicuuc.so"]

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
        try await daemon.waitForEvent(EventLine.isState("authenticated", "Reading-Room"))
        let supervisor = daemon.process.processIdentifier
        let worker = try #require(try childProcesses(of: supervisor).first)
        let markup = ["libxml2.so", "libicuuc.so", "libicudata.so"]
        #expect(try Self.mapped(markup, by: supervisor).isEmpty)
        #expect(try Self.mapped(markup, by: worker).isEmpty)
        #expect(try Self.mapped(Self.systemd, by: supervisor).isEmpty)
        #expect(try Self.mapped(Self.systemd, by: worker).isEmpty)

        let logoff = try await CLI.run(["logoff", "Reading-Room", "--state-dir", state])
        #expect(logoff.status == 0, "\(logoff.errors)")
        try await daemon.waitForEvent(EventLine.isCommand("logoff"))
        // The project's libxml2, which brings no ICU.
        #expect(try Self.mapped(markup + [Self.projectsLibxml2], by: worker) == ["libxml2.so", Self.projectsLibxml2])
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
            event.event == "log" && event.message?.contains("NetworkManager cannot be followed") == true
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
        try await daemon.waitForEvent { $0.event == "reload" }
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

    @Test func theSupervisorAndItsWorkerLogInWithTheProjectsLibraries() async throws {
        // aroma.lua reads the portal's page.
        let venue = try await DaemonTests.aromaVenue()
        defer { Task { await venue.portal.stop() } }
        let daemon = try RunningCLI(venue.arguments())
        try await daemon.waitForEvent(EventLine.isState("authenticated"))
        let supervisor = daemon.process.processIdentifier
        let worker = try #require(try childProcesses(of: supervisor).first)
        let projects = [Self.projectsLibcurl, Self.projectsLibxml2]
        #expect(try Self.mapped(projects, by: worker) == Set(projects),
                "none beside the build's folder? `make private-libraries` builds them")
        #expect(try Self.mapped(projects, by: supervisor) == [Self.projectsLibcurl])
        for process in [supervisor, worker] {
            #expect(try Self.mapped(Self.debiansOnly, by: process).isEmpty)
        }
        daemon.signal(SIGTERM)
        #expect(try await daemon.waitForExit() == 0)
    }

    @Test func anExecutableInstalledWithoutThemLogsInWithDebians() async throws {
        // The executable alone in a folder of its own, as a device that installed only it.
        let folder = try CLI.temporaryDirectory() + "/bin"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        let executable = folder + "/hotspot-helper"
        try FileManager.default.copyItem(atPath: CLI.path, toPath: executable)
        defer { try? FileManager.default.removeItem(atPath: executable) }
        let venue = try await DaemonTests.aromaVenue()
        defer { Task { await venue.portal.stop() } }
        let daemon = try RunningCLI(venue.arguments(), executable: executable)
        try await daemon.waitForEvent(EventLine.isState("authenticated"))
        let supervisor = daemon.process.processIdentifier
        let worker = try #require(try childProcesses(of: supervisor).first)
        let debians = ["libcurl.so.4", "libxml2.so.2"] + Self.debiansOnly
        #expect(try Self.mapped(debians, by: worker) == Set(debians))
        #expect(try Self.mapped(debians, by: supervisor) == Set(debians).subtracting(["libxml2.so.2", "libicuuc.so"]))
        for process in [supervisor, worker] {
            #expect(try Self.mapped([Self.projectsLibcurl, Self.projectsLibxml2], by: process).isEmpty)
        }
        daemon.signal(SIGTERM)
        #expect(try await daemon.waitForExit() == 0)
    }

    @Test func aProjectsLibcurlThatCannotBeLoadedIsReportedNotPassedOver() async throws {
        let root = try CLI.temporaryDirectory()
        for folder in ["/bin", "/lib/hotspot-helper"] {
            try FileManager.default.createDirectory(atPath: root + folder, withIntermediateDirectories: true)
        }
        let executable = root + "/bin/hotspot-helper"
        try FileManager.default.copyItem(atPath: CLI.path, toPath: executable)
        defer { try? FileManager.default.removeItem(atPath: executable) }
        try "not a library".write(toFile: root + "/lib/hotspot-helper/libcurl.so.4", atomically: true, encoding: .utf8)
        let probe = try await CLI.run(["probe", "--url", "http://127.0.0.1:1/generate_204"], executable: executable)
        #expect(probe.status == 1)
        #expect(probe.output.contains("cannot use libcurl: \(root)/bin/../lib/hotspot-helper/libcurl.so.4: file too short"), "\(probe.output)")
    }
}
