import Foundation
import PortalSimulator
import Testing
import TestSupport

/// `--record-failures`: a helper's failed attempt at a venue written as a HAR, through the
/// built executable against the simulator's `credentials` portal on loopback.
@Suite("Recordings of failed attempts", .serialized)
struct FailureRecordingTests {
    /// What campus.lua sends: a wrong password, and an address as the user name.
    static let username = "reader@example.org"
    static let password = "wrong \"horse\" 42/&"

    @Test func aFailedLoginIsRecordedWithoutItsSecretsAndReplays() async throws {
        let venue = try await SimulatedVenue(.credentials, script: "campus.lua", ssid: "Campus-WiFi", portalHost: "login.campus.example")
        defer { Task { await venue.portal.stop() } }
        let secrets = venue.scripts + "/../secrets-\(UUID().uuidString)"
        try "[campus]\nusername = \(Self.username)\npassword = \(Self.password)\n".write(toFile: secrets, atomically: true, encoding: .utf8)
        chmod(secrets, 0o600)
        let arguments = ["connect", "--json", "--scripts", venue.scripts, "--ssid", venue.ssid, "--secrets", secrets,
                         "--resolver", "127.0.0.1:\(venue.portal.dns!.port)",
                         "--probe-url", "http://connectivitycheck.test.example:\(venue.portal.port)/generate_204"]

        // Off by default: the same failure records nothing.
        let plain = try await CLI.run(arguments + ["--state-dir", venue.state])
        #expect(plain.status == 1, "\(plain.output)\(plain.errors)")
        #expect(plain.events.contains { $0.event == "command" && $0.command == "authenticate" && $0.result == "failure" })
        #expect(try FileManager.default.contentsOfDirectory(atPath: venue.state).allSatisfy { !$0.contains("failures") && !$0.hasSuffix(".har") })

        let recordings = try CLI.temporaryDirectory()
        let recorded = try await CLI.run(arguments + ["--record-failures-to", recordings])
        #expect(recorded.status == 1, "\(recorded.output)\(recorded.errors)")
        let files = try FileManager.default.contentsOfDirectory(atPath: recordings).filter { $0.hasSuffix(".har") }
        try #require(files.count == 1, "\(recorded.output)\(recorded.errors)")
        let har = recordings + "/" + files[0]
        #expect(files[0].hasSuffix("-Campus-WiFi-campus-authenticate.har"))
        #expect(recorded.events.contains { $0.event == "log" && $0.helper == "campus" && ($0.message ?? "").contains(har) },
                "the recording is announced: \(recorded.output)")

        // Not one byte of the secrets, in any form a request or a page carries them.
        let bytes = try Data(contentsOf: URL(fileURLWithPath: har))
        for secret in [Self.username, Self.password] {
            let forms = [secret, secret.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!,
                         secret.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!.replacingOccurrences(of: "%20", with: "+"),
                         secret.replacingOccurrences(of: "\"", with: "\\\""), "reader%40example", "wrong+%22horse"]
            for form in forms { #expect(bytes.range(of: Data(form.utf8)) == nil, "\(form) is in the recording") }
        }
        // The portal's cookies are taken out too, and the attempt's requests are all there.
        let document = try #require(try JSONSerialization.jsonObject(with: bytes) as? [String: Any])
        let entries = try #require((document["log"] as? [String: Any])?["entries"] as? [[String: Any]])
        let requests = entries.compactMap { ($0["request"] as? [String: Any]).map { "\($0["method"]!) \(URL(string: $0["url"] as! String)!.path)" } }
        #expect(requests.contains("GET /generate_204") && requests.contains("POST /login"), "\(requests)")
        let cookies = entries.flatMap { (($0["response"] as? [String: Any])?["headers"] as? [[String: String]] ?? []) }
            .filter { $0["name"] == "set-cookie" }.compactMap { $0["value"] }
        #expect(!cookies.isEmpty && cookies.allSatisfy { $0.split(separator: ";")[0].hasSuffix("=[secret]") }, "\(cookies)")

        // `har import` reads it, and `simulate --har` serves it: its probe captive, as recorded.
        let imported = try await CLI.run(["har", "import", har])
        #expect(imported.status == 0, "\(imported.output)\(imported.errors)")
        #expect(imported.output.contains("step 1      form POST http://login.campus.example:\(venue.portal.port)/login"), "\(imported.output)")
        let simulator = try RunningCLI(["simulate", "--har", har, "--port", "0"])
        let served = try await holds(within: .seconds(20)) { simulator.standardOutput.contains("http://") }
        try #require(served, "\(simulator.standardOutput)\(simulator.standardError)")
        let port = try #require(simulator.standardOutput.split(separator: ":").last.flatMap { Int($0.prefix { $0.isNumber }) })
        #expect(try probeStatus("http://connectivitycheck.dev.example:\(port)/generate_204") == 302,
                "\(simulator.standardError)")
        simulator.signal(SIGTERM)
        #expect(try await simulator.waitForExit() == 0)
    }
}
