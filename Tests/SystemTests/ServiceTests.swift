import Foundation
import Testing
import TestSupport

/// `hotspot-helper run` as a systemd service: readiness and the watchdog over the
/// notification socket, events as journal entries, secrets as credentials, and the unit's
/// hardening. systemd's sockets are the test's own (NOTIFY_SOCKET, the journal's).
@Suite("run as a systemd service")
struct ServiceTests {
    /// A helper that needs no portal: it claims the network and logs in at once.
    static let instant = """
        return {
          name = "Instant",
          hosts = {},
          evaluate = function(cmd) return "high" end,
          authenticate = function(cmd)
            log.info("logged in\\nwith a second line")
            return "success"
          end,
          maintain = function(cmd) return "success" end,
        }
        """

    static func arguments(scripts: String, _ extra: [String] = []) throws -> [String] {
        ["run", "--json", "--scripts", scripts, "--source", "interface:lo:Instant-Guest", "--state-dir", try CLI.temporaryDirectory(),
         "--probe-interval", "0"] + extra
    }

    static func isReady(_ datagram: DatagramListener.Datagram) -> Bool { datagram.text.split(separator: "\n").contains("READY=1") }
    static func isPing(_ datagram: DatagramListener.Datagram) -> Bool { datagram.text.split(separator: "\n").contains("WATCHDOG=1") }

    @Test func tellsTheServiceManagerItIsReadyReloadingAndStoppingAndFeedsItsWatchdog() async throws {
        let scripts = try CLI.temporaryDirectory(scripts: ["instant.lua": Self.instant])
        let manager = try DatagramListener("notify")
        let daemon = try RunningCLI(try Self.arguments(scripts: scripts),
                                    environment: ["NOTIFY_SOCKET": manager.path, "WATCHDOG_USEC": "400000"])
        let ready = try await manager.waitFor(Self.isReady)
        #expect(ready.text.contains("STATUS="), "the status line comes with readiness")
        #expect(daemon.events.contains { $0.event == "reload" && $0.reason == "started" },
                "ready once the helpers are loaded")
        try await manager.waitFor { $0.text.contains("STATUS=1 of 1 network authenticated (Instant-Guest authenticated); 1 helper") }

        // Pinged at half of WATCHDOG_USEC, as systemd advises: every 200 ms.
        let start = ContinuousClock.now
        try await Task.sleep(for: .seconds(2))  // real time is the point: the pings' rate
        let pings = manager.datagrams.filter { Self.isPing($0) && $0.arrived >= start && $0.arrived < start + .seconds(2) }
        #expect((5...12).contains(pings.count), "\(pings.count) pings in 2 s (10 expected; fewer on a loaded machine)")

        daemon.signal(SIGHUP)
        let reloading = try await manager.waitFor { $0.text.hasPrefix("RELOADING=1\n") }
        let monotonic = try #require(reloading.text.split(separator: "\n").first { $0.hasPrefix("MONOTONIC_USEC=") })
        #expect(UInt64(monotonic.dropFirst("MONOTONIC_USEC=".count)) != nil)
        try await manager.waitFor(count: 2, Self.isReady)
        let order = manager.datagrams.map(\.text).filter { $0.hasPrefix("RELOADING=1") || $0.hasPrefix("READY=1") }
        #expect(order.count == 3 && order[1].hasPrefix("RELOADING=1") && order[2].hasPrefix("READY=1"))

        daemon.signal(SIGTERM)
        try await manager.waitFor { $0.text == "STOPPING=1" }
        #expect(try await daemon.waitForExit() == 0)
    }

    /// A wedged daemon (its actor blocked, through a hidden option) no longer pings, so
    /// systemd's watchdog ends it, where a timer pinging on its own would keep it.
    @Test func aWedgedDaemonStopsFeedingTheWatchdog() async throws {
        let scripts = try CLI.temporaryDirectory(scripts: ["instant.lua": Self.instant])
        let manager = try DatagramListener("notify")
        let daemon = try RunningCLI(try Self.arguments(scripts: scripts, ["--debug-stall-on-sigusr1"]),
                                    environment: ["NOTIFY_SOCKET": manager.path, "WATCHDOG_USEC": "200000"])
        try await manager.waitFor(Self.isReady)
        try await manager.waitFor(count: 5, Self.isPing)
        daemon.signal(SIGUSR1)
        // Real time is the point: ten watchdog intervals pass without a ping. Counted from half
        // a second on, as a round trip already past the actor may still ping.
        let quiet = ContinuousClock.now + .milliseconds(500)
        try await Task.sleep(until: quiet + .seconds(2))
        #expect(manager.datagrams.count { Self.isPing($0) && $0.arrived >= quiet } == 0, "no ping while the daemon is wedged")
        daemon.signal(SIGKILL)
        _ = try await daemon.waitForExit()
    }

    /// Standard output is the journal (JOURNAL_STREAM names it): every event is an entry of
    /// its own, with fields, on the journal's socket, and nothing is written as a line.
    @Test func eventsGoToTheJournalWithFieldsOfTheirOwn() async throws {
        let scripts = try CLI.temporaryDirectory(scripts: ["instant.lua": Self.instant])
        let journal = try DatagramListener("journal")
        let daemon = try RunningCLI(try Self.arguments(scripts: scripts),
                                    environment: ["HOTSPOT_HELPER_JOURNAL_SOCKET": journal.path], outputIsJournal: true)
        func fields(_ datagram: DatagramListener.Datagram) -> [String: String] { Self.journalFields(datagram.bytes) }
        let command = fields(try await journal.waitFor { fields($0)["HH_COMMAND"] == "authenticate" && fields($0)["HH_EVENT"] == "command" })
        #expect(command["HH_NETWORK"] == "Instant-Guest")
        #expect(command["HH_HELPER"] == "instant")
        #expect(command["HH_RESULT"] == "success")
        #expect(command["HH_MS"].flatMap(Double.init) != nil)
        #expect(command["MESSAGE_ID"] == "6a57ab065b044a96bb90f15868bd9522")
        #expect(command["PRIORITY"] == "6")
        #expect(command["SYSLOG_IDENTIFIER"] == "hotspot-helper")
        // When it was written, in microseconds since the epoch as the journal's realtime fields.
        let written = try #require(command["HH_REALTIME_USEC"].flatMap(Double.init))
        #expect(abs(written / 1e6 - Date().timeIntervalSince1970) < 60)
        #expect(command["MESSAGE"]?.hasPrefix("[Instant-Guest] authenticate → instant: success") == true)

        // A value with a newline goes in the binary form, length first.
        let log = fields(try await journal.waitFor { fields($0)["HH_EVENT"] == "log" && fields($0)["HH_HELPER"] == "instant" })
        #expect(log["MESSAGE"]?.hasSuffix("logged in\nwith a second line") == true)
        #expect(log["HH_COMMAND"] == "authenticate")
        #expect(log["PRIORITY"] == "6")
        let state = fields(try await journal.waitFor { fields($0)["HH_STATE"] == "authenticated" })
        #expect(state["MESSAGE_ID"] == "28729c7f87b242a7bbaccb670ae554f6")
        #expect(state["HH_FROM"] == "authenticating")

        daemon.signal(SIGTERM)
        #expect(try await daemon.waitForExit() == 0)
        #expect(daemon.standardOutput.isEmpty, "events went to the journal only: \(daemon.standardOutput)")
        // One id per kind: reload, log, state, command.
        #expect(Set(journal.datagrams.compactMap { fields($0)["MESSAGE_ID"] })
                == ["88de100c264b4a938e4609ff65762264", "db0d8ed2f5a243f9a162c9983fa5e7f3", "28729c7f87b242a7bbaccb670ae554f6",
                    "6a57ab065b044a96bb90f15868bd9522"])
    }

    /// The journal's native format: `NAME=value\n`, or `NAME\n`, a 64-bit little-endian
    /// length, the value and `\n` for a value that may hold newlines.
    static func journalFields(_ bytes: [UInt8]) -> [String: String] {
        var fields: [String: String] = [:]
        var index = 0
        while index < bytes.count {
            guard let end = bytes[index...].firstIndex(where: { $0 == UInt8(ascii: "=") || $0 == UInt8(ascii: "\n") }) else { break }
            let name = String(decoding: bytes[index..<end], as: UTF8.self)
            if bytes[end] == UInt8(ascii: "=") {
                let valueEnd = bytes[(end + 1)...].firstIndex(of: UInt8(ascii: "\n")) ?? bytes.count
                fields[name] = String(decoding: bytes[(end + 1)..<valueEnd], as: UTF8.self)
                index = valueEnd + 1
            } else {
                guard end + 9 <= bytes.count else { break }
                let length = bytes[(end + 1)..<(end + 9)].reversed().reduce(0) { $0 << 8 | Int($1) }
                let start = end + 9
                fields[name] = String(decoding: bytes[start..<(start + length)], as: UTF8.self)
                index = start + length + 1
            }
        }
        return fields
    }
}

/// The secrets file as a systemd credential (`LoadCredential=secrets:PATH`): read from
/// `$CREDENTIALS_DIRECTORY` when no --secrets is given, with the same format and checks.
@Suite("secrets as systemd credentials")
struct CredentialsTests {
    static let password = "cred-2026-pass"

    static let picky = """
        return {
          name = "Picky",
          hosts = {},
          evaluate = function(cmd) return "high" end,
          authenticate = function(cmd)
            log.info("password " .. cmd:secret("password"))
            return cmd:secret("password") == "\(password)" and "success" or "failure"
          end,
        }
        """

    static var secretsText: String { "[picky]\npassword = \"\(password)\"\n" }

    /// A credentials directory as systemd makes it: the credential readable by its owner only.
    static func credentialsDirectory(_ text: String, mode: Int = 0o400) throws -> String {
        let directory = try CLI.temporaryDirectory()
        try text.write(toFile: directory + "/secrets", atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: directory + "/secrets")
        return directory
    }

    static func runDaemon(credentials: String) async throws {
        let scripts = try CLI.temporaryDirectory(scripts: ["picky.lua": picky])
        let daemon = try RunningCLI(try ServiceTests.arguments(scripts: scripts), environment: ["CREDENTIALS_DIRECTORY": credentials])
        try await daemon.waitForEvent(EventLine.isState("authenticated", "Instant-Guest"))
        #expect(daemon.standardOutput.contains("password [secret]"))
        #expect(!daemon.standardOutput.contains(password))
        daemon.signal(SIGTERM)
        #expect(try await daemon.waitForExit() == 0)
    }

    @Test func theDaemonReadsItsSecretsFromTheCredentialsDirectory() async throws {
        try await Self.runDaemon(credentials: try Self.credentialsDirectory(Self.secretsText))
    }

    @Test func aCredentialOthersCanReadIsRefusedAsASecretsFileIs() async throws {
        let credentials = try Self.credentialsDirectory(Self.secretsText, mode: 0o644)
        let scripts = try CLI.temporaryDirectory(scripts: ["picky.lua": Self.picky])
        let run = try await CLI.run(try ServiceTests.arguments(scripts: scripts), environment: ["CREDENTIALS_DIRECTORY": credentials])
        #expect(run.status == 2)
        #expect(run.errors.contains("\(credentials)/secrets: the secrets file is readable by others (mode 644)"))
    }

    static let systemdCredsWorks: Bool = {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-creds") else { return false }
        let probe = Process()
        probe.executableURL = URL(fileURLWithPath: "/usr/bin/systemd-creds")
        probe.arguments = ["encrypt", "--with-key=host", "--name=probe", "/dev/null", "-"]
        probe.standardOutput = FileHandle.nullDevice
        probe.standardError = FileHandle.nullDevice
        guard (try? probe.run()) != nil else { return false }
        probe.waitUntilExit()
        return probe.terminationStatus == 0
    }()

    /// `LoadCredentialEncrypted=`: systemd decrypts the credential into the same directory;
    /// `systemd-creds decrypt` does here what systemd does when it starts the service.
    @Test(.enabled(if: systemdCredsWorks, "systemd-creds does not run here (install systemd: make deps)"))
    func anEncryptedCredentialDecryptedBySystemdIsReadTheSameWay() async throws {
        let directory = try CLI.temporaryDirectory()
        try Self.secretsText.write(toFile: directory + "/secrets.ini", atomically: true, encoding: .utf8)
        let encrypted = try await CLI.run(["encrypt", "--with-key=host", "--name=secrets", directory + "/secrets.ini", directory + "/secrets.cred"],
                                          executable: "/usr/bin/systemd-creds")
        try #require(encrypted.status == 0, "systemd-creds encrypt: \(encrypted.errors)")
        #expect(!(try String(contentsOfFile: directory + "/secrets.cred", encoding: .utf8)).contains(Self.password))
        let credentials = try CLI.temporaryDirectory()
        let decrypted = try await CLI.run(["decrypt", "--name=secrets", directory + "/secrets.cred", credentials + "/secrets"],
                                          executable: "/usr/bin/systemd-creds")
        try #require(decrypted.status == 0, "systemd-creds decrypt: \(decrypted.errors)")
        try FileManager.default.setAttributes([.posixPermissions: 0o400], ofItemAtPath: credentials + "/secrets")
        try await Self.runDaemon(credentials: credentials)
    }
}

/// The shipped unit's hardening, as `systemd-analyze security` scores it: at most 2.0, and
/// the score docs/OPERATIONS.md gives.
@Suite("the shipped systemd unit")
struct UnitHardeningTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardized.path

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-analyze"),
                   "systemd-analyze is absent: install systemd (make deps)"))
    func exposureIsAtMostTwoAndAsDocumented() async throws {
        let unit = Self.repository + "/docs/systemd/hotspot-helper.service"
        let run = try await CLI.run(["security", "--offline=true", "--no-pager", unit], executable: "/usr/bin/systemd-analyze")
        let line = try #require(run.output.split(separator: "\n").first { $0.contains("Overall exposure level for hotspot-helper.service:") },
                                "\(run.output)\(run.errors)")
        let score = try #require(line.split(separator: ":").last?.split(separator: " ").first.flatMap { Double($0) })
        #expect(score <= 2.0)
        let operations = try String(contentsOfFile: Self.repository + "/docs/OPERATIONS.md", encoding: .utf8)
        #expect(operations.contains("exposure level \(score)"), "docs/OPERATIONS.md records the score (\(score))")
    }
}
