#if canImport(Glibc)
import Glibc
#endif
import Foundation
import PortalSimulator
import Testing
import TestSupport

/// `hotspot-helper web` beside a daemon, seen through a real headless Chromium, and asked
/// by a client that is not the page.
@Suite("hotspot-helper web", .serialized)
struct WebPageTests {
    /// Where each step's screenshot is kept, to look at.
    static let artifacts = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../.build/test-artifacts/web").standardized.path

    /// `hotspot-helper web` for the daemon of `stateDirectory`, and the address it printed.
    static func startPage(stateDirectory: String) async throws -> (RunningCLI, url: String, port: Int) {
        let web = try RunningCLI(["web", "--state-dir", stateDirectory, "--no-open"])
        try await eventually("the page's address") { web.standardOutput.contains("?token=") }
        let url = try #require(web.standardOutput.split(separator: " ").first { $0.hasPrefix("http://") }.map {
            $0.split(separator: "\n")[0] })
        let port = try #require(Int(url.split(separator: ":")[2].split(separator: "/")[0]))
        return (web, String(url), port)
    }

    /// A daemon whose one helper claims nothing, with Open-Venue authenticated, and its state directory.
    static func startOpenVenueDaemon() async throws -> (RunningCLI, state: String) {
        let scripts = try CLI.temporaryDirectory(scripts: ["open.lua": """
            return { name = "Open", hosts = {}, evaluate = function(cmd) return "none" end }
            """])
        let state = try CLI.temporaryDirectory()
        let daemon = try RunningCLI(["run", "--json", "--scripts", scripts, "--source", "interface:lo:Open-Venue",
                                     "--state-dir", state, "--probe-interval", "0"])
        try await daemon.waitForEvent(EventLine.isState("authenticated", "Open-Venue"))
        return (daemon, state)
    }

    static func card(_ network: String) -> String { "document.querySelector('[data-network=\"\(network)\"]')" }

    @Test func aPersonAnswersTheLibrarysQuestionInABrowser() async throws {
        let venue = try await SimulatedVenue(.email, script: "library.lua", ssid: "City-Library", portalHost: "wifi.library.example")
        defer { Task { await venue.portal.stop() } }
        let daemon = try RunningCLI(venue.arguments())
        try await daemon.waitForEvent(EventLine.isState("presenting_ui", "City-Library"))
        let (web, url, _) = try await Self.startPage(stateDirectory: venue.state)
        let card = Self.card("City-Library")
        try await onOwnThread {
            let browser = try HeadlessBrowser()
            try browser.open(url)
            try browser.waitUntil("\(card)?.dataset.state === 'presenting_ui' && !!\(card).querySelector('form')")
            #expect(try browser.evaluate("\(card).querySelector('label[for=\"field-City-Library-email\"]').textContent") as? String
                    == "Email address")
            #expect(try browser.evaluate("\(card).querySelector('form h3').textContent") as? String == "City Library Wi-Fi")
            // The token left the address bar.
            #expect(try browser.evaluate("location.href") as? String == url.components(separatedBy: "?")[0])
            try browser.screenshot(to: Self.artifacts + "/1-waiting-for-a-person.png")

            // Sent with the required field empty: the daemon's message, and the network waits on.
            try browser.evaluate("\(card).querySelector('form button[type=submit]').click()")
            try browser.waitUntil("\(card)?.querySelector('.outcome')?.textContent.includes('Email address (email) is required') === true")
            #expect(try browser.evaluate("\(card).dataset.state") as? String == "presenting_ui")
            try browser.screenshot(to: Self.artifacts + "/2-a-required-answer-missing.png")

            try browser.evaluate("""
                (() => { const form = \(card).querySelector('form');
                         form.elements.namedItem('email').value = 'reader@example.org'; form.requestSubmit(); })()
                """)
            try browser.waitUntil("\(card)?.dataset.state === 'authenticated'"
                                  + " && \(card).querySelector('.outcome')?.textContent === 'City-Library is authenticated'")
            #expect(try browser.evaluate("\(card).querySelector('form') === null") as? Bool == true)
            // The live feed showed what happened.
            try browser.waitUntil("document.getElementById('events').textContent.includes('present_ui')")
            try browser.screenshot(to: Self.artifacts + "/3-authenticated.png")

            // The helper switched off for this network and on again, then a log off, from the page.
            func click(_ text: String, in scope: String) -> String {
                "[...\(scope).querySelectorAll('button')].find(button => button.textContent === '\(text)').click()"
            }
            let helper = "document.querySelector('[data-helper=\"library\"]')"
            try browser.evaluate(click("Switch library off here", in: card))
            try browser.waitUntil("\(helper)?.textContent.includes('off for City-Library') === true")
            try browser.screenshot(to: Self.artifacts + "/4-switched-off-for-the-network.png")
            try browser.evaluate(click("Switch on for City-Library", in: helper))
            try browser.waitUntil("\(helper)?.textContent.includes('off for') === false")
            try browser.evaluate(click("Log off", in: card))
            try browser.waitUntil("\(card)?.dataset.state === 'inactive'")
        }
        try await daemon.waitForEvent(EventLine.isCommand("present_ui"))
        web.signal(SIGTERM)
        #expect(try await web.waitForExit() == 0)
        daemon.signal(SIGTERM)
        #expect(try await daemon.waitForExit() == 0)
    }

    /// A network that starts waiting for a person is shown on their desktop, clicking the
    /// notice opens the page, and the notice goes once the network no longer waits. The
    /// desktop's notification service is python3-dbusmock's (a stand-in: no desktop runs
    /// here) on a session bus of the test's own; the browser the click opens is a stand-in
    /// `xdg-open` that writes down the address it is given.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/dbus-daemon"), "needs dbus-daemon"))
    func aWaitingNetworkIsShownOnTheDesktop() async throws {
        let directory = try scratchDirectory("desktop")
        let address = "unix:path=\(directory)/bus"
        let bus = try BackgroundProcess("/usr/bin/dbus-daemon", ["--session", "--nofork", "--address=\(address)"])
        try await eventually("the session bus listens") { FileManager.default.fileExists(atPath: directory + "/bus") }
        let calls = directory + "/notifications.log"
        let notificationService = try BackgroundProcess(
            "/usr/bin/python3", ["-m", "dbusmock", "--session", "--template", "notification_daemon", "-l", calls],
            environment: ["DBUS_SESSION_BUS_ADDRESS=\(address)"])
        defer { _ = (bus, notificationService) }
        try await eventually("the notification service is on the bus") { FileManager.default.fileExists(atPath: calls) }
        let opened = directory + "/opened"
        try "#!/bin/sh\necho \"$1\" >> \(opened)\n".write(toFile: directory + "/xdg-open", atomically: true, encoding: .utf8)
        chmod(directory + "/xdg-open", 0o755)

        let venue = try await SimulatedVenue(.email, script: "library.lua", ssid: "City-Library", portalHost: "wifi.library.example")
        defer { Task { await venue.portal.stop() } }
        let daemon = try RunningCLI(venue.arguments())
        try await daemon.waitForEvent(EventLine.isState("presenting_ui", "City-Library"))
        let web = try RunningCLI(["web", "--state-dir", venue.state, "--no-open"], environment: [
            "DBUS_SESSION_BUS_ADDRESS": address, "DISPLAY": ":0",
            "PATH": directory + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin"),
        ])
        func log() -> String { (try? String(contentsOfFile: calls, encoding: .utf8)) ?? "" }
        try await eventually("the notice is shown") { log().contains("Notify") }
        #expect(log().contains("\"City-Library waits for you\" \"City Library Wi-Fi: answer on the hotspot-helper page.\""), "\(log())")
        #expect(log().contains("[\"default\", \"Open the page\"]"), "\(log())")

        // The person clicks it: the notification service says so on the bus.
        let click = try await CLI.run(["-c", """
            import dbus
            service = dbus.SessionBus().get_object('org.freedesktop.Notifications', '/org/freedesktop/Notifications')
            dbus.Interface(service, 'org.freedesktop.DBus.Mock').EmitSignal(
                'org.freedesktop.Notifications', 'ActionInvoked', 'us', [dbus.UInt32(1), 'default'])
            """], executable: "/usr/bin/python3", environment: ["DBUS_SESSION_BUS_ADDRESS": address])
        #expect(click.status == 0, "\(click.errors)")
        try await eventually("the page is opened") { FileManager.default.fileExists(atPath: opened) }
        let url = try String(contentsOfFile: opened, encoding: .utf8)
        #expect(web.standardOutput.contains(url.trimmingCharacters(in: .whitespacesAndNewlines)), "opened \(url)")

        let answered = try await venue.control(["ui", "City-Library", "--answer", "email=reader@example.org"])
        #expect(answered.status == 0, "\(answered.errors)")
        try await eventually("the notice is withdrawn") { log().contains("CloseNotification 1") }
        web.signal(SIGTERM)
        #expect(try await web.waitForExit() == 0)
        daemon.signal(SIGTERM)
        _ = try await daemon.waitForExit()
    }

    /// Markup in what a helper says is shown as text and never run.
    @Test func whatAHelperSaysIsShownAsText() async throws {
        let scripts = try CLI.temporaryDirectory(scripts: ["hostile.lua": """
            return {
              name = "Hostile",
              hosts = {},
              evaluate = function(cmd) return "high" end,
              authenticate = function(cmd)
                return "ui_required", {
                  title = "<script>window.injected = 1</script>Welcome",
                  message = "<img src=x onerror=\\"window.injected = 2\\">Sign in",
                  fields = { { name = "code", label = "<b>Code</b>" } },
                }
              end,
            }
            """])
        let state = try CLI.temporaryDirectory()
        let daemon = try RunningCLI(["run", "--json", "--scripts", scripts, "--source", "interface:lo:Hostile-Venue",
                                     "--state-dir", state, "--probe-interval", "0"])
        try await daemon.waitForEvent(EventLine.isState("presenting_ui", "Hostile-Venue"))
        let (web, url, _) = try await Self.startPage(stateDirectory: state)
        let card = Self.card("Hostile-Venue")
        try await onOwnThread {
            let browser = try HeadlessBrowser()
            try browser.open(url)
            try browser.waitUntil("!!\(card)?.querySelector('form')")
            #expect(try browser.evaluate("\(card).querySelector('form h3').textContent") as? String
                    == "<script>window.injected = 1</script>Welcome")
            #expect(try browser.evaluate("\(card).querySelector('label').textContent") as? String == "<b>Code</b>")
            #expect(try browser.evaluate("typeof window.injected") as? String == "undefined")
            #expect(try browser.evaluate("document.querySelectorAll('main img, main script, main b').length") as? Int == 0)
            try browser.screenshot(to: Self.artifacts + "/5-markup-shown-as-text.png")
        }
        web.signal(SIGTERM)
        _ = try await web.waitForExit()
        daemon.signal(SIGTERM)
        _ = try await daemon.waitForExit()
    }

    /// A request without the token, by another name than loopback's (DNS rebinding), or a
    /// change not made by the page itself is refused.
    @Test func requestsNotFromThePageAreRefused() async throws {
        let (daemon, state) = try await Self.startOpenVenueDaemon()
        let (web, url, port) = try await Self.startPage(stateDirectory: state)
        let token = url.components(separatedBy: "token=")[1]
        let base = "http://127.0.0.1:\(port)"
        func status(_ arguments: [String]) async throws -> String {
            let run = try await CLI.run(["-s", "-o", "/dev/null", "-w", "%{http_code}"] + arguments, executable: "/usr/bin/curl")
            return run.output
        }
        let change = ["-X", "POST", "-H", "Content-Type: application/json", "--data", #"{"command":"logoff","network":"Open-Venue"}"#]
        #expect(try await status([base + "/"]) == "403")
        #expect(try await status([base + "/api/status"]) == "403")
        #expect(try await status(["-H", "Host: rebound.example:\(port)", url]) == "421")
        #expect(try await status([url]) == "200")
        let cookie = ["-H", "Cookie: hh_session=\(token)"]
        #expect(try await status(cookie + [base + "/api/status"]) == "200")
        #expect(try await status(cookie + change + ["-H", "Origin: http://evil.example", base + "/api/control"]) == "403")
        #expect(try await status(cookie + change + ["-H", "Origin: \(base)", base + "/api/control"]) == "403")  // no CSRF token
        let page = try await CLI.run(["-s"] + cookie + [base + "/"], executable: "/usr/bin/curl").output
        let csrf = try #require(page.components(separatedBy: "name=\"csrf-token\" content=\"").last?.prefix(32))
        #expect(try await status(cookie + change + ["-H", "Origin: \(base)", "-H", "X-CSRF-Token: wrong", base + "/api/control"]) == "403")
        let accepted = try await CLI.run(["-s"] + cookie + change + ["-H", "Origin: \(base)", "-H", "X-CSRF-Token: \(csrf)", base + "/api/control"],
                                         executable: "/usr/bin/curl")
        // Taken: the daemon logged the network off.
        let reply = try #require(try JSONSerialization.jsonObject(with: Data(accepted.output.utf8)) as? [String: Any], "\(accepted.output)")
        #expect(reply["ok"] as? Bool == true, "\(accepted.output)")
        #expect((reply["message"] as? String)?.hasPrefix("Open-Venue is logged off") == true, "\(accepted.output)")
        let watch = try await CLI.run(["-s"] + cookie + ["-H", "Origin: \(base)", "-H", "X-CSRF-Token: \(csrf)", "-X", "POST",
                                                         "--data", #"{"command":"watch"}"#, base + "/api/control"],
                                      executable: "/usr/bin/curl")
        #expect(watch.output == "Not a request the page sends.\n")
        web.signal(SIGTERM)
        _ = try await web.waitForExit()
        daemon.signal(SIGTERM)
        _ = try await daemon.waitForExit()
    }

    /// Any local user could lock the person out: half-sent requests (no token needed) stayed
    /// open at least 90 s, and 1,100 of them used up the usual 1,024 descriptors. Past the
    /// page's caps each new connection closes the oldest stalled one, and the person's own
    /// request, sent whole at once, is answered.
    @Test func stalledClientsDoNotLockThePersonOut() async throws {
        let (daemon, state) = try await Self.startOpenVenueDaemon()
        let (web, url, port) = try await Self.startPage(stateDirectory: state)
        let stalled = try await onOwnThread {
            try (0..<300).map { _ in
                let descriptor = try connectToLoopback(UInt16(port))
                let head = Array("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n".utf8)  // never ended
                _ = head.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                return descriptor
            }
        }
        defer { stalled.forEach { close($0) } }
        let person = try await CLI.run(["-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "5", url], executable: "/usr/bin/curl")
        #expect(person.output == "200", "\(person.errors)")
        try await eventually("the stalled connections past the caps closed") {
            stalled.filter { !isClosedByPeer($0) }.count <= 128
        }
        web.signal(SIGTERM)
        _ = try await web.waitForExit()
        daemon.signal(SIGTERM)
        _ = try await daemon.waitForExit()
    }
}
