@testable import HotspotRuntime
import Testing
import HotspotCore

@Suite("Secrets file")
struct SecretsParsingTests {
    @Test func sectionsNamesAndQuotedValues() throws {
        let secrets = try Secrets.parse("""
            # comment
            [aroma]
            username = guest
            password = "two words "
            ; another comment

            [campus]
            token=abc=def
            """, path: "s.ini")
        #expect(secrets.of(helper: "aroma") == ["username": "guest", "password": "two words "])
        #expect(secrets.of(helper: "campus") == ["token": "abc=def"])
        #expect(secrets.of(helper: "other").isEmpty)
    }

    @Test(arguments: [
        ("user = x", "s.ini:1: a secret comes after a [helper] section line"),
        ("[aroma]\nno equals here", "s.ini:2: expected `name = value`"),
        ("[aroma]\n = value", "s.ini:2: the secret has no name before `=`"),
        ("[]", "s.ini:1: a section is a helper's name in brackets, such as [aroma]"),
    ])
    func problemsNameTheLine(text: String, message: String) {
        #expect(throws: SecretsError.self) { try Secrets.parse(text, path: "s.ini") }
        do {
            _ = try Secrets.parse(text, path: "s.ini")
        } catch {
            #expect(error.description == message)
        }
    }

    @Test func aFileSavedWithCRLFReadsAsItsLines() throws {
        let secrets = try Secrets.parse("[aroma]\r\nusername = guest\r\npassword = \"two words\"\r\n", path: "s.ini")
        #expect(secrets.of(helper: "aroma") == ["username": "guest", "password": "two words"])
        #expect(throws: SecretsError.self) { try Secrets.parse("[aroma]\r\nbroken\r\n", path: "s.ini") }
        do {
            _ = try Secrets.parse("[aroma]\r\nbroken\r\n", path: "s.ini")
        } catch {
            #expect(error.description == "s.ini:2: expected `name = value`")
        }
    }

    @Test func redactionHidesLongerSecretsWhole() {
        let secrets = Secrets(["a": ["short": "abc", "long": "abcdef"]])
        #expect(secrets.redact("x abcdef y abc z") == "x [secret] y [secret] z")
        #expect(secrets.redact(.log(.info, "abcdef!")) == .log(.info, "[secret]!"))
        let failed = CommandEvent(network: "Venue", command: .authenticate, helper: "a", result: .failure, milliseconds: 1, error: "bad abc")
        var redacted = failed
        redacted.error = "bad [secret]"
        #expect(secrets.redact(.command(failed)) == .command(redacted))
    }
}
