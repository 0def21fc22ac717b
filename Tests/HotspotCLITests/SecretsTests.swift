import Foundation
import Testing
import TestSupport

@Suite("Secrets through the CLI")
struct SecretsTests {
    static let password = "aroma-2026-s3cret"
    static let username = "guest-4417"

    /// A script that does everything careless scripts do with a secret: logs it, prints
    /// it, puts it in an error, sends it to a host it may not reach.
    static let careless = """
        return {
          name = "Careless",
          hosts = { "127.0.0.1" },
          evaluate = function(cmd) return "high" end,
          authenticate = function(cmd)
            local user, password = cmd:secret("username"), cmd:secret("password")
            log.warn("logging in as " .. user .. " with " .. password)
            print(password)
            local _, message = cmd:http{ url = "http://127.0.0.1:1/login", form = { u = user, p = password } }
            log.info(message)
            local _, refused = cmd:http{ url = "http://not-allowed.example/?p=" .. password }
            log.info(refused)
            error("login failed for " .. user .. ":" .. password)
          end,
        }
        """

    func secretsFile(in directory: String, mode: Int) throws -> String {
        let path = directory + "/secrets.ini"
        try "# venue credentials\n[careless]\nusername = \(Self.username)\npassword = \"\(Self.password)\"\n"
            .write(toFile: path, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
        return path
    }

    @Test func secretValuesNeverAppearInEventsOrLogs() async throws {
        let directory = try CLI.temporaryDirectory(scripts: ["careless.lua": Self.careless])
        let secrets = try secretsFile(in: directory, mode: 0o600)
        for json in [true, false] {
            let run = try await CLI.run(["connect", "--scripts", directory + "/careless.lua", "--secrets", secrets]
                                  + (json ? ["--json"] : []))
            #expect(run.status == 1)
            for secret in [Self.password, Self.username] {
                #expect(!run.output.contains(secret))
                #expect(!run.errors.contains(secret))
            }
            // The lines are still there, with the values hidden.
            #expect(run.output.contains("logging in as [secret] with [secret]"))
            #expect(run.output.contains("login failed for [secret]:[secret]"))
            #expect(run.output.contains("not_allowed: not-allowed.example"))
            #expect(run.output.contains("connect: 127.0.0.1"))
        }
    }

    @Test func aSecretsFileOthersCanReadIsRefused() async throws {
        let directory = try CLI.temporaryDirectory(scripts: ["careless.lua": Self.careless])
        let secrets = try secretsFile(in: directory, mode: 0o644)
        let run = try await CLI.run(["connect", "--scripts", directory + "/careless.lua", "--secrets", secrets])
        #expect(run.status == 2)
        #expect(run.errors.contains("readable by others (mode 644)"))
        #expect(run.errors.contains("chmod 600 \(secrets)"))
        #expect(!run.errors.contains(Self.password))
    }

    @Test func aMissingSecretPointsAtTheScriptLine() async throws {
        let script = """
            return {
              name = "Forgetful",
              hosts = {},
              evaluate = function(cmd) return "high" end,
              authenticate = function(cmd)
                return cmd:secret("pin") and "success"
              end,
            }
            """
        let directory = try CLI.temporaryDirectory(scripts: ["forgetful.lua": script])
        let secrets = try secretsFile(in: directory, mode: 0o600)
        let run = try await CLI.run(["connect", "--scripts", directory, "--secrets", secrets, "--json"])
        #expect(run.status == 1)
        let failure = run.events.first { $0.command == "authenticate" }
        let error = failure?.error ?? ""
        #expect(error.contains("forgetful.lua:6"))
        #expect(error.contains("no secret 'pin'"))
    }

    /// A secrets file far larger than credentials take is refused before it is read (it
    /// was read whole, and a worker ended with no helper, exit 0).
    @Test func anOversizedSecretsFileIsRefused() async throws {
        let directory = try CLI.temporaryDirectory(scripts: ["aroma.lua": aroma])
        let secrets = directory + "/secrets.ini"
        try ("[aroma]\n" + String(repeating: "# padding\n", count: 120_000)).write(toFile: secrets, atomically: false, encoding: .utf8)
        chmod(secrets, 0o600)
        let run = try await CLI.run(["connect", "--scripts", directory + "/aroma.lua", "--ssid", "Aroma-Guest", "--secrets", secrets])
        #expect(run.status == 2)
        #expect(run.errors.contains("\(secrets): the file is 1200008 bytes, over the limit of 1 MiB"), "\(run.errors)")
    }
}
