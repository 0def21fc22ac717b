#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
import TestSupport
import TestbedRecipes

/// A real openNDS gateway (Debian's `opennds`) in network namespaces, as OpenNDSRecipe sets it
/// up: the client gets its address and option 114 from the gateway's dnsmasq, openNDS's
/// firewall holds it until it authenticates, and the Internet stand-in (a web server that
/// answers "internet stand-in" and a resolver that answers every name) is behind the gateway.
/// Everything is stopped by its process id and the namespaces deleted by `tearDown`, or when
/// the testbed is dropped. Setting up and tearing down wait for processes: a test does them on
/// a thread of its own (`onOwnThread`), not on one of Swift concurrency's few.
final class OpenNDSTestbed: @unchecked Sendable {  // set up in init, torn down once by tearDown
    static let internetPage = "internet stand-in"
    /// What the daemon and `connect` check connectivity with: the stand-in's page.
    static let probe = "http://internet.test/ contains=\(internetPage)"

    let recipe: OpenNDSRecipe
    let directory: String
    private var internet: NamespaceServer?
    private var gateway: BackgroundProcess?
    private var tornDown = false

    static let unavailableReason: String? = {
        guard getuid() == 0 else { return "a real openNDS needs root (network namespaces, mounts, its firewall); CI runs these tests as root" }
        let tools = ["/usr/bin/opennds": "opennds", "/usr/bin/ndsctl": "opennds", "/usr/sbin/iptables-legacy": "iptables",
                     "/usr/sbin/dnsmasq": "dnsmasq-base", "/sbin/dhclient": "isc-dhcp-client", "/usr/bin/nsenter": "util-linux",
                     "/usr/bin/curl": "curl"]
        for (tool, package) in tools.sorted(by: { $0.key < $1.key }) where !FileManager.default.isExecutableFile(atPath: tool) {
            return "needs \(tool) (Debian's \(package); `make test` installs it)"
        }
        let probe = "onprobe\(getpid() % 100_000)"
        guard (try? shellStatus("ip netns add \(probe) && ip netns del \(probe)")) == 0 else {
            return "needs `ip netns` (iproute2) and permission to create namespaces"
        }
        return nil
    }()

    init(theme: OpenNDSRecipe.Theme, announcesCaptivePortalAPI: Bool = true) throws {
        directory = try scratchDirectory("opennds")
        recipe = OpenNDSRecipe(prefix: "on\(getpid() % 100_000)", directory: directory)
        try FileManager.default.createDirectory(atPath: recipe.clientFiles.folder, withIntermediateDirectories: true)
        try "".write(toFile: recipe.clientFiles.file, atomically: true, encoding: .utf8)
        try recipe.dhclientConfiguration.write(toFile: "\(directory)/dhclient.conf", atomically: true, encoding: .utf8)
        guard try shellStatus(recipe.namespacesScript) == 0 else {
            tearDown()
            throw CocoaError(.featureUnsupported, userInfo: [NSLocalizedDescriptionKey: "cannot make the namespaces"])
        }
        do {
            internet = try NamespaceServer(namespace: recipe.internet, name: Self.internetPage, dnsAnswer: OpenNDSRecipe.internetAddress)
            let gateway = try BackgroundProcess("/usr/sbin/ip", ["netns", "exec", recipe.gateway, "/bin/sh", "-c",
                                                                 recipe.gatewayScript(theme: theme, announcesCaptivePortalAPI: announcesCaptivePortalAPI)])
            self.gateway = gateway
            // openNDS's start runs its shell scripts (firewall, dnsmasq's option 114): seconds on a busy machine.
            try Self.wait("openNDS runs", within: .seconds(60)) { gateway.output.contains("openNDS is now running") || !gateway.isRunning }
            guard gateway.isRunning else { throw CocoaError(.executableLoad, userInfo: [NSLocalizedDescriptionKey: "openNDS ended: \(gateway.output)"]) }
            // dhclient goes to the background once it has its lease.
            let dhclient = try BackgroundProcess(recipe.dhclient[0], Array(recipe.dhclient.dropFirst()))
            try Self.wait("dhclient's lease", within: .seconds(60)) { !dhclient.isRunning }
            guard lease.contains("default-url") == announcesCaptivePortalAPI else {
                throw CocoaError(.fileReadCorruptFile, userInfo: [NSLocalizedDescriptionKey: "option 114 not as configured in the lease: \(lease) \(dhclient.output)"])
            }
        } catch {
            tearDown()
            throw error
        }
    }

    /// dhclient's lease file, where the daemon finds option 114.
    var lease: String { (try? String(contentsOfFile: "\(directory)/dhcp/dhclient.leases", encoding: .utf8)) ?? "" }

    /// What openNDS says of its clients (`ndsctl json`): each client's `state`.
    func clientStates() throws -> [String] {
        guard let pid = gateway?.processIdentifier else { return [] }
        let output = try Self.output(recipe.ndsctl(openNDS: pid, ["json"]))
        let list = try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any]
        let clients = list?["clients"] as? [String: [String: Any]] ?? [:]
        return clients.values.compactMap { $0["state"] as? String }
    }

    /// Ends every client's session (`ndsctl deauth`), as its time running out would: openNDS
    /// holds the client again.
    func deauthenticateClients() throws {
        guard let pid = gateway?.processIdentifier else { return }
        let output = try Self.output(recipe.ndsctl(openNDS: pid, ["json"]))
        let list = try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any]
        for client in (list?["clients"] as? [String: [String: Any]] ?? [:]).values {
            _ = try Self.output(recipe.ndsctl(openNDS: pid, ["deauth", client["ip"] as? String ?? ""]))
        }
    }

    /// The Internet stand-in's page as the client fetches it (no redirect followed), or what it got instead.
    func fetchInternet() throws -> String {
        try Self.output(recipe.inClient(["/usr/bin/curl", "-s", "-m", "5", "http://\(OpenNDSRecipe.internetAddress)/"]))
    }

    /// `hotspot-helper ARGUMENTS` in the client namespace, as its owner runs it.
    func helperCommand(_ arguments: [String]) -> [String] { recipe.inClient([CLI.path] + arguments) }

    /// The options that put a daemon on the client's network: its resolver, the probe of the
    /// Internet stand-in (its interface comes with its source).
    var networkOptions: [String] { ["--resolver", OpenNDSRecipe.gatewayAddress, "--probe-url", Self.probe] }

    private static func output(_ command: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: command[0])
        process.arguments = Array(command.dropFirst())
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }

    private static func wait(_ what: String, within limit: Duration, _ condition: () -> Bool) throws {
        guard holdsBlocking(within: limit, condition) else {
            throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "gave up waiting: \(what)"])
        }
    }

    /// Stops everything and deletes the namespaces; once.
    func tearDown() {
        guard !tornDown else { return }
        tornDown = true
        internet?.stop()
        gateway?.stop()
        _ = try? shellStatus(recipe.removalScript)
    }

    deinit { tearDown() }
}

@Suite("A real openNDS gateway, logged in through by the bundled helpers", .serialized,
       .enabled(if: OpenNDSTestbed.unavailableReason == nil, "\(OpenNDSTestbed.unavailableReason ?? "")"))
struct OpenNDSTests {
    /// The bundled generic helpers only, as a device that meets a venue no script knows has them.
    static func bundledHelpers() throws -> String {
        let scripts = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../VenueHelpers").standardized.path
        let folder = try scratchDirectory("bundled-helpers")
        for name in ["click-through.lua", "capport.lua", "wispr.lua"] {
            try FileManager.default.copyItem(atPath: "\(scripts)/\(name)", toPath: "\(folder)/\(name)")
        }
        return folder
    }

    /// Runs `body` with a testbed of `theme`, set up and torn down on threads of their own.
    func withTestbed(_ theme: OpenNDSRecipe.Theme, announcesCaptivePortalAPI: Bool = true,
                     _ body: (OpenNDSTestbed) async throws -> Void) async throws {
        let testbed = try await onOwnThread { try OpenNDSTestbed(theme: theme, announcesCaptivePortalAPI: announcesCaptivePortalAPI) }
        do {
            try await body(testbed)
        } catch {
            try await onOwnThread { testbed.tearDown() }
            throw error
        }
        try await onOwnThread { testbed.tearDown() }
    }

    /// Before: openNDS holds the client (Preauthenticated) and the Internet is out of reach.
    func expectHeld(_ testbed: OpenNDSTestbed) async throws {
        let page = try await onOwnThread { try testbed.fetchInternet() }
        #expect(!page.contains(OpenNDSTestbed.internetPage), "\(page)")
        #expect(try await onOwnThread { try testbed.clientStates() } == ["Preauthenticated"])
    }

    /// After: openNDS says Authenticated and the Internet answers.
    func expectLetThrough(_ testbed: OpenNDSTestbed) async throws {
        #expect(try await onOwnThread { try testbed.clientStates() } == ["Authenticated"])
        #expect(try await onOwnThread { try testbed.fetchInternet() } == OpenNDSTestbed.internetPage)
    }

    /// `connect` in the client namespace with `scripts`: its JSON lines end with what it says.
    func connect(_ testbed: OpenNDSTestbed, scripts: String, ssid: String, options: [String] = []) async throws -> CLI.Run {
        let command = testbed.helperCommand(["connect", "--scripts", scripts, "--ssid", ssid, "--json", "--interface", testbed.recipe.interface]
                                            + testbed.networkOptions + options)
        return try await CLI.run(Array(command.dropFirst()), executable: command[0])
    }

    /// The click-to-continue themes: `connect` with the bundled helpers alone. openNDS names
    /// its plain-HTTP Captive Portal API in DHCP option 114, so capport.lua claims the network
    /// and follows its `user-portal-url`: the splash's GET form sent in document order (before,
    /// sorted, it got 511), then the "Thank you" page's second form.
    @Test(arguments: [OpenNDSRecipe.Theme.clickToContinue, .clickToContinueCustom])
    func clickToContinue(_ theme: OpenNDSRecipe.Theme) async throws {
        let scripts = try Self.bundledHelpers()
        try await withTestbed(theme) { testbed in
            try await expectHeld(testbed)
            let run = try await connect(testbed, scripts: scripts, ssid: "openNDS")
            #expect(run.status == 0, "\(run.output)\(run.errors)")
            #expect(run.events.contains { $0.message?.contains("http://status.client is plain HTTP") == true }, "\(run.output)")
            #expect(run.linesWithoutTime.last
                    == #"{"event":"done","network":"openNDS","state":"authenticated","helper":"capport"}"#, "\(run.output)")
            try await expectLetThrough(testbed)
        }
    }

    /// Without its Captive Portal API, the probe's redirect leads click-through.lua to the
    /// same splash.
    @Test func clickToContinueWithoutTheCaptivePortalAPI() async throws {
        let scripts = try Self.bundledHelpers()
        try await withTestbed(.clickToContinue, announcesCaptivePortalAPI: false) { testbed in
            try await expectHeld(testbed)
            let run = try await connect(testbed, scripts: scripts, ssid: "openNDS")
            #expect(run.status == 0, "\(run.output)\(run.errors)")
            #expect(run.linesWithoutTime.last
                    == #"{"event":"done","network":"openNDS","state":"authenticated","helper":"click-through"}"#, "\(run.output)")
            try await expectLetThrough(testbed)
        }
    }

    /// The name-and-email themes: the daemon asks the person (the test, through `ui`) for what
    /// the splash asks, and logs in with their answers.
    @Test(arguments: [OpenNDSRecipe.Theme.userEmail, .userEmailCustom])
    func nameAndEmailThroughThePersonsQuestions(_ theme: OpenNDSRecipe.Theme) async throws {
        let scripts = try Self.bundledHelpers()
        let state = try scratchDirectory("opennds-state")
        try await withTestbed(theme) { testbed in
            try await expectHeld(testbed)
            let command = testbed.helperCommand(["run", "--json", "--scripts", scripts, "--source",
                                                 "interface:\(testbed.recipe.interface):openNDS", "--state-dir", state] + testbed.networkOptions)
            let daemon = try BackgroundProcess(command[0], Array(command.dropFirst()))
            try await eventually("the daemon asks the person", within: .seconds(60)) { daemon.output.contains(#""to":"presenting_ui""#) }
            let status = try await CLI.run(["status", "--state-dir", state])
            #expect(status.output.contains("Email address"), "\(status.output)")
            let answered = try await CLI.run(["ui", "openNDS", "--state-dir", state, "--answer", "username=Ada Lovelace",
                                              "--answer", "emailaddress=ada@example.org"])
            #expect(answered.status == 0, "\(answered.output)\(answered.errors)")
            try await eventually("the daemon logs in", within: .seconds(60)) { daemon.output.contains(#""to":"authenticated""#) }
            try await onOwnThread { daemon.stop() }
            try await expectLetThrough(testbed)
        }
    }

    /// GETTING-STARTED's first script, its hosts the gateway's, logs in through openNDS's
    /// default splash as it is written: a GET form, then a second one.
    @Test func theGettingStartedExampleLogsIn() async throws {
        let guide = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../docs/GETTING-STARTED.md")
        let text = try String(contentsOf: guide.standardized, encoding: .utf8)
        let example = try #require(text.components(separatedBy: "```lua\n").dropFirst().first?.components(separatedBy: "```").first)
        #expect(example.contains(#"hosts = { "portal.mycafe.example" }"#))
        let scripts = try scratchDirectory("getting-started")
        try example.replacingOccurrences(of: #"hosts = { "portal.mycafe.example" }"#, with: #"hosts = { "\#(OpenNDSRecipe.gatewayAddress)" }"#)
            .write(toFile: "\(scripts)/my-cafe.lua", atomically: true, encoding: .utf8)
        try await withTestbed(.clickToContinue) { testbed in
            try await expectHeld(testbed)
            let run = try await connect(testbed, scripts: scripts, ssid: "MyCafe-Guest")
            #expect(run.status == 0, "\(run.output)\(run.errors)")
            try await expectLetThrough(testbed)
        }
    }

    /// Issue #37's path at a real gateway: a person's login through openNDS's splash, recorded
    /// by a real headless Chromium in the client's namespace (its names resolved by the
    /// gateway, its requests held by openNDS's firewall), becomes a script that passes `check`,
    /// logs in unmodified against the recording's replay, and, once openNDS has ended the
    /// session, against the live gateway.
    @Test(.enabled(if: HeadlessBrowser.isInstalled), arguments: OpenNDSRecipe.Theme.allCases)
    func aChromiumRecordingYieldsAScriptThatLogsIn(_ theme: OpenNDSRecipe.Theme) async throws {
        let directory = try scratchDirectory("opennds-recording")
        let har = "\(directory)/opennds.har"
        let scripts = "\(directory)/scripts"
        try FileManager.default.createDirectory(atPath: scripts, withIntermediateDirectories: true)
        let script = "\(scripts)/venue.lua"
        try await withTestbed(theme) { testbed in
            try await expectHeld(testbed)
            try await onOwnThread {
                let recorder = try ChromiumRecorder(launcher: testbed.recipe.inClient([]))
                try recorder.open("http://internet.test/")
                // The splash, then its "Thank you" page's second form, until openNDS lets the client through.
                for _ in 0..<4 {
                    guard try recorder.submitAsAPerson(["username": "Ada Lovelace", "email": "ada@example.org"]) != nil else { break }
                    try recorder.waitForNextPage()
                    if try testbed.fetchInternet() == OpenNDSTestbed.internetPage { break }
                }
                // The check the person's system makes once logged in: the Internet's page, by a
                // name of its own, since Chromium's idle connection to internet.test still goes to
                // openNDS's web server, where the firewall sent it before.
                try recorder.browser.send("Page.navigate", ["url": "http://check.internet.test/"])
                do {
                    try recorder.waitUntil("document.body !== null && document.body.innerText.includes('\(OpenNDSTestbed.internetPage)')")
                } catch {
                    let page = (try? recorder.browser.evaluate("location.href + ' shows ' + document.body.innerText")) as? String ?? ""
                    throw HeadlessBrowser.Failure(description: "\(error): \(page)")
                }
                try recorder.har().write(to: URL(fileURLWithPath: har))
            }
            try await expectLetThrough(testbed)
            let imported = try await CLI.run(["har", "import", har, "--ssid", "openNDS-Guest", "--output", script])
            #expect(imported.status == 0, "\(imported.errors)\n\(imported.output)")
            let generated = (try? String(contentsOfFile: script, encoding: .utf8)) ?? ""
            let checked = try await CLI.run(["check", script])
            #expect(checked.status == 0, "\(checked.output)\(checked.errors)\n\(generated)")
            // What the person typed, as its owner keeps it for the script (cmd:secret).
            #expect(generated.contains(#"{ name = "emailaddress""#) == theme.asksForNameAndEmail, "\(generated)")
            #expect(!generated.contains("ada@example.org") && !imported.output.contains("ada@example.org"), "what the person typed was written")
            let secrets = "\(directory)/secrets.ini"
            try "[venue]\nusername = Ada Lovelace\nemailaddress = ada@example.org\n".write(toFile: secrets, atomically: true, encoding: .utf8)
            chmod(secrets, 0o600)
            let replayed = try await CLI.run(["test", script, "--har", har, "--ssid", "openNDS-Guest", "--secrets", secrets])
            #expect(replayed.status == 0, "\(replayed.output)\(replayed.errors)\n\(generated)")
            try await onOwnThread { try testbed.deauthenticateClients() }
            try await expectHeld(testbed)
            let run = try await connect(testbed, scripts: scripts, ssid: "openNDS-Guest", options: ["--secrets", secrets])
            #expect(run.status == 0, "\(run.output)\(run.errors)\n\(generated)")
            try await expectLetThrough(testbed)
        }
    }
}
