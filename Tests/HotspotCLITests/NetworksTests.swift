import Foundation
import Testing
import TestSupport

@Suite("hotspot-helper networks")
struct NetworksTests {
    static let scripts = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../VenueHelpers").standardized.path

    func scanList(_ json: String) throws -> String {
        let directory = try CLI.temporaryDirectory()
        try json.write(toFile: directory + "/scan.json", atomically: true, encoding: .utf8)
        return directory + "/scan.json"
    }

    /// Scripts that declare `networks` (by display name, the file named after it) and only
    /// authenticate, in `scripts/` beside the scan list `list`; that directory.
    @discardableResult
    func declaring(beside list: String, _ declarations: [String: String]) throws -> String {
        let scripts = (list as NSString).deletingLastPathComponent + "/scripts"
        try FileManager.default.createDirectory(atPath: scripts, withIntermediateDirectories: true)
        for (name, networks) in declarations {
            try "return { name = '\(name)', hosts = {},\n  networks = \(networks),\n  authenticate = function(cmd) return 'success' end }\n"
                .write(toFile: "\(scripts)/\(name.lowercased()).lua", atomically: true, encoding: .utf8)
        }
        return scripts
    }

    /// The table `networks` prints for `list`, its columns' padding taken out.
    func table(_ scripts: String, _ list: String) async throws -> [String] {
        let run = try await CLI.run(["networks", "--scripts", scripts, "--scan-list", list])
        #expect(run.status == 0, "\(run.errors)")
        return run.output.split(separator: "\n").map { $0.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ") }
    }

    @Test func showsWhoClaimsWhatWithPasswords() async throws {
        let list = try scanList(#"[{"ssid": "Aroma-Guest", "signal_strength": 0.4}, {"ssid": "Campus-WiFi", "is_secure": true}, {"ssid": "Other"}]"#)
        let directory = (list as NSString).deletingLastPathComponent
        try "[campus]\nwifi_password = campus-wpa-2026\n".write(toFile: directory + "/secrets.ini", atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: directory + "/secrets.ini")
        let run = try await CLI.run(["networks", "--scripts", Self.scripts, "--scan-list", list, "--secrets", directory + "/secrets.ini"])
        #expect(run.status == 0, "\(run.errors)")
        let lines = run.output.split(separator: "\n").map { $0.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ") }
        #expect(lines == ["SSID HELPER", "Aroma-Guest Aroma Wi-Fi (aroma)", "Campus-WiFi Campus Wi-Fi (campus), password supplied", "Other -"])
        #expect(!run.output.contains("campus-wpa-2026"))
    }

    /// `networks` names the declaration evaluate would choose by; `check` reports a network
    /// two scripts declare.
    @Test func showsWhichDeclarationMatchedAndCheckReportsTwoDeclaringOneNetwork() async throws {
        let list = try scanList(#"[{"ssid": "Campus Guest", "bssid": "02:5E:10:00:00:01"}, {"ssid": "Campus-East"}, {"ssid": "Other"}]"#)
        let scripts = try declaring(beside: list, [
            "Campus": "{ ssids = { 'Campus Guest' }, ssid_patterns = { 'Campus-*' }, bssid_prefixes = { '02:5e:10' } }",
            "Chain": "{ ssid_patterns = { 'Campus-*' } }",
        ])
        let lines = try await table(scripts, list)
        #expect(lines == ["SSID HELPER DECLARED", #"Campus Guest - Campus (campus): ssid "Campus Guest" at bssid 02:5e:10, high confidence"#,
                          #"Campus-East - Chain (chain): ssid pattern "Campus-*", low confidence"#, "Other - -"])

        let checked = try await CLI.run(["check", scripts])
        #expect(checked.status == 1)
        #expect(checked.output.contains(#"\#(scripts)/chain.lua: `networks`: campus declares ssid pattern "Campus-*" as well; "#
                                        + "campus would be chosen and chain never asked"))
    }

    /// Portal hosts and gateway families: `check` says what is wrong with an entry, where, and
    /// what to give instead, and reports a host two scripts declare; `networks` matches a scan
    /// list by SSID only (a portal shows at a join), so the SSID entry beside a host is named.
    @Test func checkValidatesPortalHostsAndFamiliesAndNetworksNamesTheSSIDBesideThem() async throws {
        let list = try scanList(#"[{"ssid": "Marina"}, {"ssid": "Berth 12"}]"#)
        let scripts = try declaring(beside: list, [
            "Marina": "{ ssids = { 'Marina' }, portal_hosts = { 'login.marina.example' }, gateway_families = { 'unifi' } }",
            "Quay": "{ portal_hosts = { 'LOGIN.marina.example' } }",
        ])
        #expect(try await table(scripts, list) == ["SSID HELPER DECLARED", #"Marina - Marina (marina): ssid "Marina", high confidence"#, "Berth 12 - -"])

        try declaring(beside: list, ["Broken": "{ portal_hosts = { 'https://login.marina.example/' }, gateway_families = { 'chillispot' } }"])
        let checked = try await CLI.run(["check", scripts])
        #expect(checked.status == 1)
        #expect(checked.output.contains(#"\#(scripts)/broken.lua:2: `networks.portal_hosts`: host pattern "https://login.marina.example/" "#
                                        + "has a label that is not letters, digits and inner hyphens; give the host the network's portal redirects to"),
                "\(checked.output)")
        #expect(checked.output.contains("\(scripts)/quay.lua: `networks`: marina declares portal host login.marina.example as well; "
                                        + "marina would be chosen and quay never asked"), "\(checked.output)")
        try declaring(beside: list, ["Broken": "{ gateway_families = { 'chillispot' } }"])
        let family = try await CLI.run(["check", scripts + "/broken.lua"])
        #expect(family.status == 1)
        #expect(family.output.contains(#"broken.lua:2: `networks.gateway_families`: "chillispot" is no gateway family; the families are "#
                                       + "coovachilli, meraki, unifi, aruba, opennds, pfsense"), "\(family.output)")
    }

    @Test func scriptsThatAreNotThereAreSaidSoWithoutBlamingAScript() async throws {
        let run = try await CLI.run(["networks", "--scripts", "/nonexistent/scripts", "--scan-list", try scanList(#"[{"ssid": "a"}]"#)])
        #expect(run.status == 2)
        #expect(run.errors.contains("--scripts /nonexistent/scripts: no such file or directory; give a venue script, or a directory of *.lua scripts"))
        #expect(!run.errors.contains("above"), "\(run.errors)")
    }

    @Test func aBrokenScanListIsAUsageError() async throws {
        let notArray = try await CLI.run(["networks", "--scripts", Self.scripts, "--scan-list", try scanList(#"{"ssid": "x"}"#)])
        #expect(notArray.status == 2)
        #expect(notArray.errors.contains("not a JSON array of networks"))
        let noSSID = try await CLI.run(["networks", "--scripts", Self.scripts, "--scan-list", try scanList(#"[{"ssid": "a"}, {"bssid": "b"}]"#)])
        #expect(noSSID.status == 2)
        #expect(noSSID.errors.contains("network 2 has no \"ssid\" string"))
        let nul = try await CLI.run(["networks", "--scripts", Self.scripts, "--scan-list", try scanList("[{\"ssid\": \"a\u{0}b\"}]")])
        #expect(nul.status == 2)
        #expect(nul.errors.contains("control character in a string at byte 14"), "\(nul.errors)")
        let huge = try await CLI.run(["networks", "--scripts", Self.scripts, "--scan-list",
                                      try scanList("[" + String(repeating: " ", count: 4 << 20) + "]")])
        #expect(huge.status == 2)
        #expect(huge.errors.contains("over the limit of 4 MiB"), "\(huge.errors)")
    }

    /// SSIDs are bytes a stranger chooses: a newline forged a line of the table, an escape
    /// sequence reached the terminal, two SSIDs that are not UTF-8 became one (U+FFFD), and
    /// one over 802.11's 32 bytes was taken.
    @Test func hostileSSIDsAreEscapedKeptApartAndBounded() async throws {
        let directory = try CLI.temporaryDirectory()
        let list = directory + "/scan.json"
        let json = Array(#"[{"ssid": "O\nAroma-Guest Aroma Wi-Fi"}, {"ssid": "\u001b]0;owned\u0007"}, "#.utf8)
            + Array(#"{"ssid": "A"#.utf8) + [0xff] + Array(#""}, {"ssid": "A"#.utf8) + [0xfe] + Array(#""}]"#.utf8)
        try Data(json).write(to: URL(fileURLWithPath: list))
        let run = try await CLI.run(["networks", "--scripts", Self.scripts, "--scan-list", list])
        #expect(run.status == 0, "\(run.errors)")
        let lines = run.output.split(separator: "\n").map { $0.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ") }
        #expect(lines == ["SSID HELPER", #"O\x0aAroma-Guest Aroma Wi-Fi -"#, #"\x1b]0;owned\x07 -"#, #"A\xff -"#, #"A\xfe -"#])

        let long = try await CLI.run(["networks", "--scripts", Self.scripts, "--scan-list",
                                      try scanList(#"[{"ssid": "\#(String(repeating: "x", count: 33))"}]"#)])
        #expect(long.status == 2)
        #expect(long.errors.contains("network 1's \"ssid\" is 33 bytes; an SSID has at most 32"), "\(long.errors)")
    }

    @Test func watchShowsTheTableAgainWhenTheScanListChanges() async throws {
        let list = try scanList(#"[{"ssid": "Other"}]"#)
        let (process, output, errors) = try CLI.start(["networks", "--scripts", Self.scripts, "--scan-list", list, "--watch"])
        defer { process.terminate() }
        let seen = try await onOwnThread {
            var text = ""
            var changed = false
            while !text.contains("Aroma Wi-Fi") {
                let chunk = output.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                text += String(decoding: chunk, as: UTF8.self)
                if !changed, text.contains("Other") {
                    try #"[{"ssid": "Aroma-Guest"}]"#.write(toFile: list, atomically: true, encoding: .utf8)
                    changed = true
                }
            }
            return text
        }
        #expect(seen.contains("Other  -"))
        let ended = process.isRunning ? "still running" : "ended with status \(process.terminationStatus)"
        process.terminate()
        let problems = try await onOwnThread { String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self) }
        #expect(seen.contains("Aroma Wi-Fi (aroma)"), "the command \(ended): \(problems)")
    }
}
